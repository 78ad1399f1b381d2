// Package hooks implements intentq's Claude Code hooks. Every hook reports to the agent's
// session as it fires (the agent's state: working, idle, waiting for the person), and the hooks
// at turn boundaries hand the agent the messages waiting for it (issue 10): post-tool-use as
// context after a tool call, stop by blocking the stop, user-prompt-submit beside a prompt,
// session-start with every pending intent (SPEC I3). Each such handover is taken from the
// session, printed, then committed: counted delivered exactly once, never when the hook failed
// to print it. post-tool-use also closes the intent a reply answers and reminds of old ones;
// stop keeps an agent working while its inbox or intents wait (SPEC S1, S2). Every hook answers
// within its timeout, also when Temporal is down, and then allows (SPEC S4).
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/intentq/intentq/internal/hookapi"
)

// MaxInput bounds the hook JSON read from stdin.
const MaxInput = 8 << 20

// Input is the JSON Claude Code passes a hook on stdin (the fields intentq reads).
type Input struct {
	SessionID            string          `json:"session_id"`
	TranscriptPath       string          `json:"transcript_path"`
	CWD                  string          `json:"cwd"`
	HookEventName        string          `json:"hook_event_name"`
	ToolName             string          `json:"tool_name"`
	ToolInput            json.RawMessage `json:"tool_input"`
	ToolUseID            string          `json:"tool_use_id"`
	StopHookActive       bool            `json:"stop_hook_active"`
	LastAssistantMessage string          `json:"last_assistant_message"`
	// Source is why a session started: startup, resume, clear, compact.
	Source string `json:"source"`
	// Prompt and PromptID are the submitted prompt (user-prompt-submit).
	Prompt   string `json:"prompt"`
	PromptID string `json:"prompt_id"`
	// NotificationType says what a notification is about: permission_prompt, idle_prompt, ...
	NotificationType string `json:"notification_type"`
	// Reason is why a session ends (session-end): clear, logout, prompt_input_exit, other.
	Reason string `json:"reason"`
	// AgentID is set when the hook fires inside a subagent (Claude Code 2.1.330: "present only
	// when the hook fires from within a subagent"): what it prints goes to the subagent, whose
	// context ends with it, not to the agent the person talks to.
	AgentID string `json:"agent_id,omitempty"`
	// Timestamp is when the CLI fired the event: Gemini CLI sends an RFC 3339 string, Copilot
	// CLI milliseconds since the epoch, Claude Code nothing (EventTime reads it). Gemini fires its
	// SessionStart without waiting for it, so its hook may run after the first prompt it took.
	Timestamp json.RawMessage `json:"timestamp,omitempty"`
}

// Output is the JSON a hook prints; empty fields are left out, and an empty Output prints
// nothing (allow).
type Output struct {
	Decision           string              `json:"decision,omitempty"`
	Reason             string              `json:"reason,omitempty"`
	HookSpecificOutput *HookSpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// HookSpecificOutput carries context for Claude Code to add to the conversation.
type HookSpecificOutput struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// Backend is what the hooks need from Temporal; *Temporal is the real one.
type Backend interface {
	// PendingPage lists at most limit intents matching f and says whether there are more: a
	// hook's cost does not grow with the number of pending intents.
	PendingPage(ctx context.Context, f hookapi.Filter, limit int) (hookapi.Page, error)
	// Text is an intent's full text; it must not need a worker (SPEC S4).
	Text(ctx context.Context, id string) (string, error)
	Close(ctx context.Context, id string) error
	CloseOldest(ctx context.Context, chat string) (string, error)
	// Unread is what is unread in an agent's inbox (its count, the oldest few).
	Unread(ctx context.Context, agent string) (hookapi.InboxUnread, error)
	SendInbox(ctx context.Context, agent string, msg hookapi.InboxSend) error
	CommitContext(ctx context.Context, session, id, text string) error
	// Report tells the session a hook fired; it must not need a worker (a signal).
	Report(ctx context.Context, session string, ev hookapi.AgentEvent) error
	// Take hands over the messages waiting for the agent; Taken commits them once printed.
	Take(ctx context.Context, session string, req hookapi.TakeRequest) (hookapi.TakeResult, error)
	Taken(ctx context.Context, session, key string) error
	// Had asks the session which of intents' messages its agent has in its context (its own
	// record, ahead of the intents' memos); it needs a worker.
	Had(ctx context.Context, session string, intents []string) ([]hookapi.HadMessage, error)
}

// Answer is what a hook prints, and what is committed once it is printed: the key of the take
// it printed, and a block Claude Code injects itself, for the session's history.
type Answer struct {
	Output  Output
	Taken   string
	Context *Context
}

// Context is a block a hook printed that no take handed over (the intents a session start
// lists), committed to the session's history as it was printed.
type Context struct {
	ID   string
	Text string
}

// Settings are the hooks' configuration.
type Settings struct {
	// Session is the intentq session the hook's agent serves.
	Session string
	// ReplyTools close intents; RemindTools get reminders of old pending intents.
	ReplyTools  []string
	RemindTools []string
	RemindAfter time.Duration
	RemindEvery time.Duration
	// Agent identifies the agent for the stop hook (empty: from tmux, else allow).
	Agent string
	// DataDir keeps the hooks' state between runs (the take back-off); empty: none.
	DataDir string
	// ExemptRoles are agents (or roles) the stop hook always allows.
	ExemptRoles []string
	// Coordinator receives report_completed and error_report messages.
	Coordinator        string
	CompletionPatterns []string
	ErrorPatterns      []string
	// StopTyped: the CLI puts a Stop block's reason into the model's next request twice
	// (Claude Code 2.1.330: a user and a system message), so the stop hook hands no message
	// over; it lets the agent stop, and the session types what waits into the idle pane, once.
	StopTyped bool
	// Flat: the CLI reads a flat output (Copilot CLI: additionalContext at the top, FlatOutput).
	Flat   bool
	Now    func() time.Time
	Logger *zap.Logger
}

// Default patterns of SPEC S2; config may add more.
var (
	DefaultCompletionPatterns = []string{`任務完了`, `タスク完了`, `(?i)task completed`, `(?i)report updated`}
	DefaultErrorPatterns      = []string{`エラー.*中断`, `失敗.*中断`, `(?i)\babort`, `(?i)failed.*stop`}
)

// ReadInput decodes the hook input; an empty or malformed input is an error saying why.
func ReadInput(r io.Reader) (Input, error) {
	data, err := ReadRaw(r)
	if err != nil {
		return Input{}, fmt.Errorf("read hook input: %w", err)
	}
	if len(data) > MaxInput {
		return Input{}, fmt.Errorf("hook input is over %d bytes", MaxInput)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return Input{}, errors.New("hook input is empty")
	}
	var in Input
	if err := json.Unmarshal(data, &in); err != nil {
		return Input{}, fmt.Errorf("hook input is not the expected JSON: %w", err)
	}
	return in, nil
}

// Write prints out as Claude Code reads it (flat: as Copilot CLI does, FlatOutput); nothing for
// an empty Output.
func Write(w io.Writer, out Output, flat bool) error {
	switch {
	case out == (Output{}):
		return nil
	case flat:
		return json.NewEncoder(w).Encode(Flat(out))
	}
	return json.NewEncoder(w).Encode(out)
}

// SessionStart presents the session's pending intents once, with their full text, as one
// <system-reminder> block (SPEC I3, H1): the messages still waiting to be typed are taken from
// the session (so they are not typed too), the most recent others are listed from visibility
// (at most ListLimit), and the rest are pointed to with the command that lists them all.
func SessionStart(ctx context.Context, b Backend, s Settings, in Input) (Answer, error) {
	if s.Session == "" {
		// An agent no session serves (started by hand, not bound yet) is told of no one's
		// messages: a list without a session would be every session's (under load, a Gemini
		// CLI's SessionStart hook ran as the first typed message bound it, and listed that
		// message in full beside it).
		return Answer{}, nil
	}
	// The take and the list at once, and the listed intents' full texts as soon as the list is
	// in: none waits for the take's round trip to the worker. What the session says the agent
	// had is asked once the list is in, meanwhile too.
	texts := newTextReader(ctx, b)
	paged := make(chan struct{})
	var page hookapi.Page
	var err error
	go func() {
		defer close(paged)
		page, err = b.PendingPage(ctx, hookapi.Filter{Status: hookapi.StatusPending, Session: s.Session}, ListLimit)
		for _, p := range page.Intents {
			if p.Text == "" { // an intent from before the memo held its text, or a long one
				texts.read(p.ID)
			}
		}
		if err == nil {
			withSessionWord(ctx, b, s, page.Intents)
		}
	}()
	taken := takeWaiting(ctx, b, s, in, hookapi.EventSessionStart, in.Source, nil, 0)
	<-paged
	if err != nil && len(taken.Messages) == 0 {
		return Answer{}, err
	}
	// Each intent once: what was taken, then what is listed. A taken reminder carries a snippet
	// and a listed intent only its snippet: their full texts are read, at most ListLimit of
	// the reminders.
	type shown struct {
		id, head, text      string
		full, listed, named bool
	}
	now := s.now()
	presented := map[string]bool{}
	var all []shown
	reminders := 0
	awaiting := map[string]bool{}
	for _, p := range page.Intents {
		awaiting[p.ID] = awaitsDelivery(p)
	}
	for _, m := range taken.Messages {
		if presented[m.ReplyTo] {
			continue
		}
		presented[m.ReplyTo] = true
		// A reminder of a message the agent has not got yet (its delivery failed and is
		// retried) stays a reminder: the message's own delivery brings its text, once.
		full := m.Kind == hookapi.KindReminder && reminders < ListLimit && !awaiting[m.ReplyTo]
		if full {
			reminders++
			texts.read(m.ReplyTo)
		}
		all = append(all, shown{id: m.ReplyTo, head: "- id=" + EscapeText(m.ReplyTo), text: m.Text, full: full})
	}
	for _, p := range page.Intents {
		if !presented[p.ID] {
			presented[p.ID] = true
			head := fmt.Sprintf("- id=%s chat=%s age=%s", EscapeText(p.ID), EscapeText(p.ChatID), now.Sub(p.ReceivedAt).Round(time.Second))
			if awaitsDelivery(p) {
				// Still waiting in the session's queue beyond what the take handed over: it
				// reaches the agent on its own, typed or at a turn boundary. Named here, never
				// printed in full, so that its text enters the agent's context once.
				all = append(all, shown{id: p.ID, head: head + " (not handed over yet: it follows on its own)", listed: true, named: true})
				continue
			}
			if deliveredSince(p, in) {
				// Delivered after the CLI started this context (its hook ran late, after the
				// agent's first prompt): in this conversation already, named only.
				all = append(all, shown{id: p.ID, head: head + " (in this conversation already)", listed: true, named: true})
				continue
			}
			text := p.Snippet
			if p.Text != "" {
				text = p.Text
			}
			all = append(all, shown{id: p.ID, head: head, text: text, full: p.Text == "", listed: true})
		}
	}
	full := texts.wait()
	var entries []string
	var listed strings.Builder
	for _, e := range all {
		text := e.text
		if t, ok := full[e.id]; ok && e.full {
			text = t
		}
		entry := e.head + "\n"
		if !e.named {
			entry += QuoteText(text) + "\n"
		}
		entries = append(entries, entry)
		if e.listed {
			listed.WriteString(entry)
		}
	}
	if len(entries) == 0 {
		return Answer{}, nil
	}
	more := ""
	if page.More {
		more = fmt.Sprintf("\n(older pending messages are not shown: `starter pending --session %s` lists them all)\n", s.Session)
		listed.WriteString(more)
	}
	block := fmt.Sprintf("<system-reminder>\n%d pending message(s) for session %s, oldest first. Answer each, then close it (reply with reply_to, or `starter close ID`).\n\n%s%s</system-reminder>",
		len(entries), s.Session, strings.Join(entries, "\n"), more)
	answer := Answer{Output: addContext(hookapi.EventSessionStart, block), Taken: takenKey(taken)}
	if listed.Len() > 0 {
		// The taken messages are committed by their take; the listed ones as context.
		answer.Context = &Context{ID: "session-start/" + in.SessionID + "/" + now.UTC().Format(time.RFC3339Nano), Text: listed.String()}
	}
	return answer, nil
}

// withSessionWord corrects, in place, the listed intents whose memo says their message has not
// reached the agent yet by what the session's own record says (Backend.Had): a message the agent
// had counts as delivered, when the session counted it (zero when it does not know: before this
// context began, so it is printed in full). A memo lags behind its session: the session holds
// the results of a typed block while more waits to be typed (results-after-backlog), and
// visibility is eventually consistent; a message the agent had and its new context only names
// as one that "follows on its own" never follows, the session has it as delivered.
// Without the session's word (no worker, or none in time) the memos decide.
//
// Every message the session delivers is asked about, also one whose memo says it was delivered:
// the session may present it again after a reset ended the context it went to (its hook's
// commit came after the reset), and then names it as one that follows (Follows).
func withSessionWord(ctx context.Context, b Backend, s Settings, listed []hookapi.Summary) {
	var ask []string
	for _, p := range listed {
		if p.Source == hookapi.SourceTelegram {
			ask = append(ask, p.ID)
		}
	}
	if len(ask) == 0 {
		return
	}
	if takeBackingOff(s.DataDir, time.Now()) {
		s.logger().Warn(MemosDecide+": no worker answered a take moments ago", zap.String("session", s.Session))
		return
	}
	hctx, cancel := context.WithTimeout(ctx, askBudget(ctx))
	defer cancel()
	had, err := b.Had(hctx, s.Session, ask)
	if err != nil {
		s.logger().Warn(MemosDecide, zap.String("session", s.Session), zap.Error(err))
		return
	}
	word := make(map[string]hookapi.HadMessage, len(had))
	for _, h := range had {
		word[h.Intent] = h
	}
	for i, p := range listed {
		h, ok := word[p.ID]
		switch {
		case ok && h.Follows:
			listed[i].Delivered = nil // named: it follows on its own
		case ok && awaitsDelivery(p):
			listed[i].Delivered = &h.At
		}
	}
}

// MemosDecide is the warning a session-start hook logs when the session's word on what its
// agent had did not come in time: the intents' memos decide then, and they lag behind it.
const MemosDecide = "hook: the session did not say what its agent had; the intents' memos decide"

// askBudget is how long a hook waits for its session's answer: TakeBudget, at most half the
// hook's time left (the rest is for printing and committing).
func askBudget(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return min(TakeBudget, time.Until(d)/2)
	}
	return TakeBudget
}

// awaitsDelivery reports whether a listed pending intent is one its session types and has not
// delivered yet (as far as its memo says): its text reaches the agent by that delivery, not by a
// session start's list (issue 32).
func awaitsDelivery(p hookapi.Summary) bool {
	return p.Source == hookapi.SourceTelegram && p.Delivered == nil
}

// EventTime is when the CLI fired the hook's event (Input.Timestamp: an RFC 3339 string or
// milliseconds since the epoch); ok is false when the input does not say.
func (in Input) EventTime() (at time.Time, ok bool) {
	var text string
	var millis int64
	switch {
	case json.Unmarshal(in.Timestamp, &text) == nil:
		t, err := time.Parse(time.RFC3339Nano, text)
		return t, err == nil
	case json.Unmarshal(in.Timestamp, &millis) == nil && millis > 0:
		return time.UnixMilli(millis), true
	}
	return time.Time{}, false
}

// deliveredSince reports whether a listed pending intent reached the agent after the CLI fired
// the session start of in (without its time, never): the new context has it.
func deliveredSince(p hookapi.Summary, in Input) bool {
	began, ok := in.EventTime()
	return ok && p.Delivered != nil && p.Delivered.After(began)
}

// ListLimit bounds the intents a hook lists or reads in full (the rest are pointed to, not
// counted), so that a hook's cost stays flat in the number of pending intents.
const ListLimit = 10

// hookParallel bounds the calls a hook makes at once.
const hookParallel = 16

// textReader reads intents' full texts, each once and at most hookParallel at a time, as
// their ids become known.
type textReader struct {
	ctx     context.Context
	b       Backend
	g       errgroup.Group
	mu      sync.Mutex
	started map[string]bool
	got     map[string]string
}

func newTextReader(ctx context.Context, b Backend) *textReader {
	r := &textReader{ctx: ctx, b: b, started: map[string]bool{}, got: map[string]string{}}
	r.g.SetLimit(hookParallel)
	return r
}

// read starts reading id's full text, unless it is already being read; it waits while
// hookParallel reads run.
func (r *textReader) read(id string) {
	r.mu.Lock()
	seen := r.started[id]
	r.started[id] = true
	r.mu.Unlock()
	if seen {
		return
	}
	r.g.Go(func() error {
		if text, ok := fullText(r.ctx, r.b, id); ok {
			r.mu.Lock()
			r.got[id] = text
			r.mu.Unlock()
		}
		return nil
	})
}

// wait returns the texts read, by id; an id whose read failed is missing.
func (r *textReader) wait() map[string]string {
	_ = r.g.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got
}

// fullText is an intent's full text from its start event (no worker needed); should that fail
// within a second, the caller shows what it has rather than the whole hook running out of time.
func fullText(ctx context.Context, b Backend, id string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	full, err := b.Text(ctx, id)
	return full, err == nil
}

// replyInput is the Telegram plugin's reply tool input.
type replyInput struct {
	ChatID  json.RawMessage `json:"chat_id"`
	ReplyTo json.RawMessage `json:"reply_to"`
}

// PostToolUse hands the agent the messages that arrived while it worked, as context after the
// tool's result (no keystroke into a working agent). After a reply tool it closes the intent
// the reply answers (reply_to, else the chat's oldest pending one), and after a reminder tool
// it reminds of intents pending longer than RemindAfter, at most once per RemindEvery per
// session (the session keeps the throttle and says, with the take, when one is due): one call
// per hook run whatever the number of pending intents, three when a reminder is due.
func PostToolUse(ctx context.Context, b Backend, s Settings, in Input) (Answer, error) {
	var parts []string
	err := afterReply(ctx, b, s, in)
	if err != nil {
		s.logger().Warn("post-tool-use: reply not handled", zap.String("session", s.Session), zap.String("tool", in.ToolName), zap.Error(err))
	}
	if in.AgentID != "" {
		// Inside a subagent: messages handed over here would reach the subagent, not the
		// agent (issue 24); the tool call still says the agent works.
		return Answer{}, errors.Join(err, report(ctx, b, s, hookapi.AgentEvent{Event: hookapi.EventPostToolUse, Detail: in.ToolName}))
	}
	var every time.Duration
	if contains(s.RemindTools, in.ToolName) {
		every = s.RemindEvery
	}
	taken := takeWaiting(ctx, b, s, in, hookapi.EventPostToolUse, in.ToolName, nil, every)
	if taken.RemindDue {
		reminder, rerr := remindOld(ctx, b, s)
		if rerr != nil {
			s.logger().Warn("post-tool-use: reminder not listed", zap.String("session", s.Session), zap.Error(rerr))
			err = errors.Join(err, rerr)
		}
		if reminder != "" {
			parts = append(parts, reminder)
		}
	}
	if len(taken.Messages) > 0 {
		parts = append(parts, MessagesBlock(taken.Messages, "while you worked"))
	}
	if len(parts) == 0 {
		return Answer{}, err
	}
	return Answer{Output: addContext(hookapi.EventPostToolUse, strings.Join(parts, "\n")), Taken: takenKey(taken)}, nil
}

// afterReply closes the intent a reply answers: reply_to, else the chat's oldest pending one.
func afterReply(ctx context.Context, b Backend, s Settings, in Input) error {
	if !contains(s.ReplyTools, in.ToolName) {
		return nil
	}
	var r replyInput
	if err := json.Unmarshal(in.ToolInput, &r); err != nil {
		return fmt.Errorf("reply tool input: %w", err)
	}
	chat, replyTo := hookapi.IDString(r.ChatID), hookapi.IDString(r.ReplyTo)
	if chat == "" {
		return errors.New("reply tool input has no chat_id")
	}
	if replyTo != "" {
		err := b.Close(ctx, hookapi.IntentID(chat, replyTo))
		if err == nil || errors.Is(err, hookapi.ErrNotOpen) || errors.Is(err, hookapi.ErrNotFound) {
			return nil // an answer to something closed or unknown changes nothing
		}
		return err
	}
	_, err := b.CloseOldest(ctx, chat)
	if errors.Is(err, hookapi.ErrNotFound) {
		return nil
	}
	return err
}

// remindOld is the reminder of the session's intents pending longer than RemindAfter: the most
// recent ListLimit of them, oldest first, and where to find the others.
func remindOld(ctx context.Context, b Backend, s Settings) (string, error) {
	now := s.now()
	page, err := b.PendingPage(ctx, hookapi.Filter{Status: hookapi.StatusPending, Session: s.Session, ReceivedBefore: now.Add(-s.RemindAfter)}, ListLimit)
	if err != nil || len(page.Intents) == 0 {
		return "", err
	}
	// A message not handed over yet is the session's to deliver, once (as the Stop hook's list).
	page.Intents = slices.DeleteFunc(page.Intents, awaitsDelivery)
	if len(page.Intents) == 0 {
		return "", nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "<system-reminder>\nStill unanswered (%d%s):\n", len(page.Intents), plus(page.More))
	for _, p := range page.Intents {
		fmt.Fprintf(&sb, "- id=%s chat=%s age=%s: %s\n", EscapeText(p.ID), EscapeText(p.ChatID), now.Sub(p.ReceivedAt).Round(time.Second), EscapeText(oneLine(p.Snippet)))
	}
	if page.More {
		fmt.Fprintf(&sb, "(and older ones: `starter pending --session %s` lists them all)\n", s.Session)
	}
	sb.WriteString("</system-reminder>")
	return sb.String(), nil
}

// UserPromptSubmit reports the turn that starts; when the prompt is a delivery intentq typed,
// it is that delivery's receipt. Messages waiting besides go with the prompt as context.
func UserPromptSubmit(ctx context.Context, b Backend, s Settings, in Input) (Answer, error) {
	var receipt []string
	if id, ok := hookapi.ReceiptOf(in.Prompt); ok {
		receipt = []string{id}
	}
	taken := takeWaiting(ctx, b, s, in, hookapi.EventUserPromptSubmit, "", receipt, 0)
	if len(taken.Messages) == 0 {
		return Answer{}, nil
	}
	return Answer{Output: addContext(hookapi.EventUserPromptSubmit, MessagesBlock(taken.Messages, "besides this prompt")), Taken: takenKey(taken)}, nil
}

// PreToolUse reports that the agent works (a tool is about to run, perhaps after the person
// approved it).
func PreToolUse(ctx context.Context, b Backend, s Settings, in Input) (Answer, error) {
	return Answer{}, report(ctx, b, s, hookapi.AgentEvent{Event: hookapi.EventPreToolUse, Detail: in.ToolName})
}

// Notification reports what Claude Code tells the person: a permission prompt (the agent waits
// for them; nothing may be typed), or that it has been idle. Codex's PermissionRequest (its
// approval prompt opens) is a permission prompt too; it prints nothing, so Codex asks the person.
func Notification(ctx context.Context, b Backend, s Settings, in Input) (Answer, error) {
	detail := in.NotificationType
	if detail == "" && in.HookEventName == "PermissionRequest" {
		detail = "permission_prompt"
	}
	return Answer{}, report(ctx, b, s, hookapi.AgentEvent{Event: hookapi.EventNotification, Detail: detail})
}

// SessionEnd reports that the agent's CLI is ending (Claude Code's SessionEnd, with its reason):
// the session types nothing more into the pane and tells the person at once, until an agent
// starts there again; a /clear's (reason clear) is followed by a new context at once.
func SessionEnd(ctx context.Context, b Backend, s Settings, in Input) (Answer, error) {
	return Answer{}, report(ctx, b, s, hookapi.AgentEvent{Event: hookapi.EventSessionEnd, Detail: reasonWord(in.Reason)})
}

// reasonWord is a CLI's reason as a short word (letters, digits, _ and -, at most 40): it is
// shown to the person.
func reasonWord(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return -1
	}, s)
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// Stop hands the agent the messages waiting for it by blocking the stop (the turn goes on with
// them), then implements SPEC S1 and S2: it reports completions and errors to the
// coordinator's inbox without blocking on it, and blocks while the agent has unread inbox
// messages or pending intents, with a summary of at most 5 items.
func Stop(ctx context.Context, b Backend, s Settings, in Input) (Answer, error) {
	exempt := contains(s.ExemptRoles, s.Agent)
	if exempt {
		return Answer{}, report(ctx, b, s, hookapi.AgentEvent{Event: hookapi.EventStop})
	}
	known := !in.StopHookActive && s.Agent != ""
	// What waits for the agent besides the session's queue, asked while the session answers.
	var unread hookapi.InboxUnread
	var pending hookapi.Page
	var inboxErr, pendingErr error
	asked := make(chan struct{})
	sideCtx, cancelSide := context.WithCancel(ctx)
	defer cancelSide()
	go func() {
		defer close(asked)
		if !known {
			return
		}
		// Both at once: a stop hook's time is one round trip, not two. With a throttle
		// (RemindEvery) the owed answers are listed only once the take says they are due
		// (below): a list of visibility on every Stop queued behind a burst's writes.
		var wg sync.WaitGroup
		wg.Go(func() { unread, inboxErr = b.Unread(sideCtx, s.Agent) })
		if s.RemindEvery <= 0 {
			wg.Go(func() {
				pending, pendingErr = b.PendingPage(sideCtx, hookapi.Filter{Status: hookapi.StatusPending, Session: s.Agent}, 5)
			})
		}
		wg.Wait()
	}()
	// The owed answers are asked about at most once per RemindEvery (the session or the desk
	// keeps the throttle): every Stop block costs the agent another model turn. With StopTyped
	// nothing is taken (RemindOnly): the agent goes idle, and the session types what waits.
	taken := takeWaiting(ctx, b, s, in, hookapi.EventStop, "", nil, s.RemindEvery)
	if len(taken.Messages) > 0 {
		// What was taken is printed at once (the commit needs the time left); the rest is moot.
		cancelSide()
	}
	<-asked
	if len(taken.Messages) > 0 {
		// Printed at once: nothing slow stands before the print, and the stop is blocked (the
		// turn goes on), so there is no completion to report yet.
		return Answer{Output: Output{Decision: "block", Reason: MessagesBlock(taken.Messages, "as you finished")}, Taken: takenKey(taken)}, nil
	}
	if kind := Classify(in.LastAssistantMessage, s.CompletionPatterns, s.ErrorPatterns); known && kind != "" && s.Coordinator != "" && s.Coordinator != s.Agent {
		msg := hookapi.InboxSend{Key: kind + "/" + in.SessionID + "/" + s.now().UTC().Format(time.RFC3339), From: s.Agent, Type: kind,
			Content: firstRunes(in.LastAssistantMessage, 500)}
		if err := b.SendInbox(ctx, s.Coordinator, msg); err != nil {
			s.logger().Warn("stop hook: report to the coordinator failed", zap.String("agent", s.Agent), zap.String("type", kind), zap.Error(err))
		}
	}
	if !known {
		return Answer{}, nil
	}
	var items []string
	if inboxErr != nil {
		return Answer{}, inboxErr
	}
	// Every piece of text in the reason is escaped and on one line: no inbox message or
	// snippet can open or close a tag, nor start a line that looks like intentq's own.
	for _, m := range unread.First {
		items = append(items, fmt.Sprintf("inbox %s from %s (%s): %s", escapeLine(m.ID), escapeLine(m.From), escapeLine(m.Type), EscapeText(firstRunes(oneLine(m.Content), 80))))
	}
	if taken.RemindDue && s.RemindEvery > 0 {
		pending, pendingErr = b.PendingPage(ctx, hookapi.Filter{Status: hookapi.StatusPending, Session: s.Agent}, 5)
	}
	if pendingErr != nil {
		return Answer{}, pendingErr
	}
	var owed []string
	for _, p := range pending.Intents {
		if !taken.RemindDue && s.RemindEvery > 0 {
			break // asked about within RemindEvery: the agent may stop
		}
		if awaitsDelivery(p) {
			// Not in the agent's context yet: the session hands it over itself (a later hook's
			// take, or typed once the agent has stopped), so its text is not listed here. Listed,
			// it reached the model twice (Codex, whose Stop hook took nothing while
			// the session's offer was not at the desk, listed the 5 newest, then typed).
			continue
		}
		owed = append(owed, fmt.Sprintf("intent %s (chat %s): %s", escapeLine(p.ID), escapeLine(p.ChatID), escapeLine(p.Snippet)))
	}
	if len(items) == 0 && len(owed) == 0 {
		return Answer{}, nil
	}
	agent := escapeLine(s.Agent)
	var parts []string
	if len(owed) > 0 {
		more := ""
		if pending.More {
			more = fmt.Sprintf(" (and more: `starter pending --session %s`)", agent)
		}
		parts = append(parts, fmt.Sprintf("%d%s message(s) from people still wait for your answer: answer each with the reply tool (its reply_to), or close it if it needs none%s:\n- %s",
			len(owed), plus(pending.More), more, strings.Join(owed, "\n- ")))
	}
	if len(items) > 0 {
		total := max(unread.Count, len(items))
		part := fmt.Sprintf("%d unread inbox message(s) for %s: read them with `starter inbox read %s`:\n- %s", total, agent, agent, strings.Join(items, "\n- "))
		if total > len(items) {
			part += fmt.Sprintf("\n(and more: `starter inbox list %s`)", agent)
		}
		parts = append(parts, part)
	}
	return Answer{Output: Output{Decision: "block", Reason: strings.Join(parts, "\n")}}, nil
}

// MessagesBlock is how messages handed over by a hook reach the agent: each as intentq would
// have typed it (intentq's header, then the text), escaped so that no message can open or close
// a tag, and with the text's further lines indented so that none can pass for the header of
// another message.
func MessagesBlock(msgs []hookapi.DeliveryRequest, when string) string {
	var sb strings.Builder
	reminders := 0
	for _, m := range msgs {
		if m.Kind == hookapi.KindReminder {
			reminders++
		}
	}
	switch news := len(msgs) - reminders; {
	case reminders == 0:
		fmt.Fprintf(&sb, "<system-reminder>\n%d message(s) for you arrived %s. Each is its own message from a person: answer each (reply with reply_to).\n", news, when)
	case news == 0:
		fmt.Fprintf(&sb, "<system-reminder>\n%d reminder(s) of messages you have not answered yet. Answer each (reply with reply_to), or close it if it needs no answer.\n", reminders)
	default:
		fmt.Fprintf(&sb, "<system-reminder>\n%d message(s) for you arrived %s, and %d reminder(s) of messages you have not answered yet. Each is its own: answer each (reply with reply_to).\n", news, when, reminders)
	}
	for _, m := range msgs {
		sb.WriteString("\n")
		sb.WriteString(indentLines(EscapeText(m.Text), false))
		sb.WriteString("\n")
	}
	sb.WriteString("</system-reminder>")
	return sb.String()
}

// takeWaiting asks the session for the messages waiting for the agent, within part of the
// hook's time (the rest is for printing and committing), and, with remindEvery, whether the
// hook's reminder of old intents is due. When the session cannot answer (no worker), it
// reports the event instead and takes nothing: the messages stay waiting.
func takeWaiting(ctx context.Context, b Backend, s Settings, in Input, event, detail string, receipt []string, remindEvery time.Duration) hookapi.TakeResult {
	if s.Session == "" {
		return hookapi.TakeResult{}
	}
	if takeBackingOff(s.DataDir, time.Now()) {
		// A take found no worker moments ago: do not make the agent wait again.
		if err := report(ctx, b, s, hookapi.AgentEvent{Event: event, Detail: detail, Receipt: receipt}); err != nil {
			s.logger().Warn("hook: event not reported", zap.String("session", s.Session), zap.String("hook", event), zap.Error(err))
		}
		return hookapi.TakeResult{}
	}
	budget := TakeBudget
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d)/2)
	}
	tctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	deadline, _ := tctx.Deadline()
	req := hookapi.TakeRequest{Key: runKey(event, in, s.now()), Event: event, Deadline: deadline, Detail: detail, Receipt: receipt, RemindEvery: remindEvery,
		RemindOnly: event == hookapi.EventStop && s.StopTyped}
	res, err := b.Take(tctx, s.Session, req)
	if err == nil {
		clearTakeBackoff(s.DataDir)
		return res
	}
	if tctx.Err() != nil { // unanswered in time: no worker runs (or it is far behind)
		if err := markTakeUnanswered(s.DataDir); err != nil {
			s.logger().Warn("hook: take back-off not kept", zap.Error(err))
		}
	}
	s.logger().Warn("hook: the session did not hand over waiting messages; reporting the event only", zap.String("session", s.Session), zap.String("hook", event), zap.Error(err))
	if err := report(ctx, b, s, hookapi.AgentEvent{Event: event, Detail: detail, Receipt: receipt}); err != nil {
		s.logger().Warn("hook: event not reported", zap.String("session", s.Session), zap.String("hook", event), zap.Error(err))
	}
	return hookapi.TakeResult{}
}

// TakeBudget caps how long a hook waits for the session to hand over messages.
const TakeBudget = 2 * time.Second

// report tells the session a hook fired.
func report(ctx context.Context, b Backend, s Settings, ev hookapi.AgentEvent) error {
	if s.Session == "" {
		return nil
	}
	ev.At = s.now()
	return b.Report(ctx, s.Session, ev)
}

// runKey names one run of a hook, the same for a second run of the same hook: the tool call or
// prompt it is about, else the agent's session and how far its transcript has grown.
func runKey(event string, in Input, now time.Time) string {
	switch {
	case event == hookapi.EventPostToolUse && in.ToolUseID != "":
		return event + "/" + in.ToolUseID
	case event == hookapi.EventUserPromptSubmit && in.PromptID != "":
		return event + "/" + in.PromptID
	}
	if in.SessionID != "" && in.TranscriptPath != "" {
		if fi, err := os.Stat(in.TranscriptPath); err == nil {
			return fmt.Sprintf("%s/%s/%s/%d", event, in.SessionID, in.Source, fi.Size())
		}
	}
	return fmt.Sprintf("%s/%s/%d", event, in.SessionID, now.UnixNano())
}

func takenKey(r hookapi.TakeResult) string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Key
}

// addContext is an output that adds text to the agent's context.
func addContext(event, text string) Output {
	return Output{HookSpecificOutput: &HookSpecificOutput{HookEventName: hookEventNames[event], AdditionalContext: text}}
}

// hookEventNames are Claude Code's names of the events.
var hookEventNames = map[string]string{
	hookapi.EventSessionStart:     "SessionStart",
	hookapi.EventUserPromptSubmit: "UserPromptSubmit",
	hookapi.EventPostToolUse:      "PostToolUse",
}

// Classify reads an assistant message: "report_completed" when it matches a completion
// pattern, "error_report" for an error pattern (checked first), "" when neutral. Invalid
// patterns are skipped.
func Classify(message string, completion, errs []string) string {
	if message == "" {
		return ""
	}
	if matchAny(message, errs) {
		return "error_report"
	}
	if matchAny(message, completion) {
		return "report_completed"
	}
	return ""
}

func matchAny(s string, patterns []string) bool {
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err == nil && re.MatchString(s) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func firstRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// textEscaper escapes what could open or close a tag.
var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// EscapeText makes message text safe inside intentq's <system-reminder> wrapper: it can never
// open or close a tag, so a message cannot forge a block the agent trusts (SPEC H3).
func EscapeText(s string) string { return textEscaper.Replace(s) }

// QuoteText is a text of several lines set under a header intentq wrote: escaped, and every
// line indented, so that no line of it can pass for intentq's own (a header, a list item).
func QuoteText(s string) string { return indentLines(EscapeText(s), true) }

// escapeLine is a piece of text inside one of intentq's lines: escaped and on one line.
func escapeLine(s string) string { return EscapeText(oneLine(s)) }

// textIndent starts the lines of quoted text.
const textIndent = "  "

// lineBreaks are what may break a line where the agent reads it.
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\v", "\n", "\f", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// indentLines indents the lines of s after the first, and the first too when first is set;
// every kind of line break becomes a newline.
func indentLines(s string, first bool) string {
	if s == "" {
		return s
	}
	s = strings.ReplaceAll(lineBreaks.Replace(s), "\n", "\n"+textIndent)
	if first {
		s = textIndent + s
	}
	return s
}

func (s Settings) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s Settings) logger() *zap.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return zap.NewNop()
}

// plus marks a number as a lower bound ("10+") when more were not counted.
func plus(more bool) string {
	if more {
		return "+"
	}
	return ""
}
