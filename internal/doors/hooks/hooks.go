// Package hooks implements intentq's Claude Code hooks: session-start presents every pending
// intent (SPEC I3), post-tool-use closes the intent a reply answers and reminds of old ones,
// stop keeps an agent working while its inbox or intents wait (SPEC S1, S2). Every hook answers
// within its timeout, also when Temporal is down, and then allows (SPEC S4).
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
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
	StopHookActive       bool            `json:"stop_hook_active"`
	LastAssistantMessage string          `json:"last_assistant_message"`
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
	Pending(ctx context.Context, f intent.Filter) ([]intent.Summary, error)
	// Text is an intent's full text; it must not need a worker (SPEC S4).
	Text(ctx context.Context, id string) (string, error)
	Close(ctx context.Context, id string) error
	CloseOldest(ctx context.Context, chat string) (string, error)
	HookRemind(ctx context.Context, id string, every time.Duration) (bool, error)
	Inbox(ctx context.Context, agent string) ([]workflows.InboxMessage, error)
	SendInbox(ctx context.Context, agent string, msg workflows.InboxSend) error
	CommitContext(ctx context.Context, session, id, text string) error
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
	// ExemptRoles are agents (or roles) the stop hook always allows.
	ExemptRoles []string
	// Coordinator receives report_completed and error_report messages.
	Coordinator        string
	CompletionPatterns []string
	ErrorPatterns      []string
	Now                func() time.Time
	Logger             *zap.Logger
}

// Default patterns of SPEC S2; config may add more.
var (
	DefaultCompletionPatterns = []string{`任務完了`, `タスク完了`, `(?i)task completed`, `(?i)report updated`}
	DefaultErrorPatterns      = []string{`エラー.*中断`, `失敗.*中断`, `(?i)\babort`, `(?i)failed.*stop`}
)

// ReadInput decodes the hook input; an empty or malformed input is an error saying why.
func ReadInput(r io.Reader) (Input, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
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

// Write prints out as Claude Code reads it; nothing for an empty Output.
func Write(w io.Writer, out Output) error {
	if out == (Output{}) {
		return nil
	}
	return json.NewEncoder(w).Encode(out)
}

// SessionStart lists all pending intents of the session, oldest first, with their full text,
// as one <system-reminder> block, and commits the block to the session's history (SPEC I3, H1).
func SessionStart(ctx context.Context, b Backend, s Settings, in Input) (Output, error) {
	list, err := b.Pending(ctx, intent.Filter{Status: workflows.StatusPending, Session: s.Session})
	if err != nil || len(list) == 0 {
		return Output{}, err
	}
	now := s.now()
	var sb strings.Builder
	fmt.Fprintf(&sb, "<system-reminder>\n%d pending message(s) for session %s, oldest first. Answer each, then close it (reply with reply_to, or `starter close ID`).\n", len(list), s.Session)
	for _, p := range list {
		// The full text comes from the intent's start event (no worker needed); should that
		// fail, the snippet stands in rather than the whole hook running out of time.
		text := p.Snippet
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		if full, err := b.Text(sctx, p.ID); err == nil {
			text = full
		}
		cancel()
		fmt.Fprintf(&sb, "\n- id=%s chat=%s age=%s\n%s\n", EscapeText(p.ID), EscapeText(p.ChatID), now.Sub(p.ReceivedAt).Round(time.Second), EscapeText(text))
	}
	sb.WriteString("</system-reminder>")
	block := sb.String()
	if err := b.CommitContext(ctx, s.Session, "session-start/"+in.SessionID+"/"+now.UTC().Format(time.RFC3339Nano), block); err != nil {
		s.logger().Warn("session-start block not committed to history", zap.String("session", s.Session), zap.Error(err))
	}
	return Output{HookSpecificOutput: &HookSpecificOutput{HookEventName: "SessionStart", AdditionalContext: block}}, nil
}

// replyInput is the Telegram plugin's reply tool input.
type replyInput struct {
	ChatID  json.RawMessage `json:"chat_id"`
	ReplyTo json.RawMessage `json:"reply_to"`
}

// PostToolUse closes the intent a reply answers (reply_to, else the chat's oldest pending one),
// and after a reminder tool adds a reminder of intents pending longer than RemindAfter, each at
// most once per RemindEvery (the throttle lives in the intent workflow).
func PostToolUse(ctx context.Context, b Backend, s Settings, in Input) (Output, error) {
	switch {
	case contains(s.ReplyTools, in.ToolName):
		var r replyInput
		if err := json.Unmarshal(in.ToolInput, &r); err != nil {
			return Output{}, fmt.Errorf("reply tool input: %w", err)
		}
		chat, replyTo := intent.IDString(r.ChatID), intent.IDString(r.ReplyTo)
		if chat == "" {
			return Output{}, errors.New("reply tool input has no chat_id")
		}
		if replyTo != "" {
			err := b.Close(ctx, workflows.IntentID(chat, replyTo))
			if err == nil || errors.Is(err, intent.ErrNotOpen) || errors.Is(err, intent.ErrNotFound) {
				return Output{}, nil // an answer to something closed or unknown changes nothing
			}
			return Output{}, err
		}
		_, err := b.CloseOldest(ctx, chat)
		if errors.Is(err, intent.ErrNotFound) {
			return Output{}, nil
		}
		return Output{}, err
	case contains(s.RemindTools, in.ToolName):
		list, err := b.Pending(ctx, intent.Filter{Status: workflows.StatusPending, Session: s.Session})
		if err != nil {
			return Output{}, err
		}
		var due []intent.Summary
		for _, p := range list {
			if s.now().Sub(p.ReceivedAt) < s.RemindAfter {
				continue
			}
			if ok, err := b.HookRemind(ctx, p.ID, s.RemindEvery); err == nil && ok {
				due = append(due, p)
			}
		}
		if len(due) == 0 {
			return Output{}, nil
		}
		var sb strings.Builder
		sb.WriteString("<system-reminder>\nStill unanswered:\n")
		for _, p := range due {
			fmt.Fprintf(&sb, "- id=%s chat=%s age=%s: %s\n", EscapeText(p.ID), EscapeText(p.ChatID), s.now().Sub(p.ReceivedAt).Round(time.Second), EscapeText(p.Snippet))
		}
		sb.WriteString("</system-reminder>")
		return Output{HookSpecificOutput: &HookSpecificOutput{HookEventName: "PostToolUse", AdditionalContext: sb.String()}}, nil
	}
	return Output{}, nil
}

// Stop implements SPEC S1 and S2: it reports completions and errors to the coordinator's inbox
// without blocking on it, then blocks while the agent has unread inbox messages or pending
// intents, with a summary of at most 5 items.
func Stop(ctx context.Context, b Backend, s Settings, in Input) (Output, error) {
	if in.StopHookActive || s.Agent == "" || contains(s.ExemptRoles, s.Agent) {
		return Output{}, nil
	}
	if kind := Classify(in.LastAssistantMessage, s.CompletionPatterns, s.ErrorPatterns); kind != "" && s.Coordinator != "" && s.Coordinator != s.Agent {
		msg := workflows.InboxSend{Key: kind + "/" + in.SessionID + "/" + s.now().UTC().Format(time.RFC3339), From: s.Agent, Type: kind,
			Content: firstRunes(in.LastAssistantMessage, 500)}
		if err := b.SendInbox(ctx, s.Coordinator, msg); err != nil {
			s.logger().Warn("stop hook: report to the coordinator failed", zap.String("agent", s.Agent), zap.String("type", kind), zap.Error(err))
		}
	}
	var items []string
	unread, err := b.Inbox(ctx, s.Agent)
	if err != nil {
		return Output{}, err
	}
	for _, m := range unread {
		if !m.Read {
			items = append(items, fmt.Sprintf("inbox %s from %s (%s): %s", m.ID, m.From, m.Type, firstRunes(oneLine(m.Content), 80)))
		}
	}
	pending, err := b.Pending(ctx, intent.Filter{Status: workflows.StatusPending, Session: s.Agent})
	if err != nil {
		return Output{}, err
	}
	for _, p := range pending {
		items = append(items, fmt.Sprintf("intent %s (chat %s): %s", p.ID, p.ChatID, p.Snippet))
	}
	if len(items) == 0 {
		return Output{}, nil
	}
	total := len(items)
	if len(items) > 5 {
		items = items[:5]
	}
	reason := fmt.Sprintf("%d item(s) still wait for %s; handle them before stopping (`starter inbox read %s`, reply to intents):\n- %s",
		total, s.Agent, s.Agent, strings.Join(items, "\n- "))
	if total > 5 {
		reason += fmt.Sprintf("\n(and %d more)", total-5)
	}
	return Output{Decision: "block", Reason: reason}, nil
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
