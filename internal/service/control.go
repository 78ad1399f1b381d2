package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/doors/telegram"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/internal/redact"
	"github.com/intentq/intentq/internal/session"
	"github.com/intentq/intentq/workflows"
)

// ReasonCancelled is why an intent the person took back with /cancel ended.
const ReasonCancelled = "cancelled by the person"

// pendingListed bounds the intents /pending lists; the rest are counted.
const pendingListed = 10

// control answers the person's commands at the Telegram door (issue 36): what waits in their
// chat, taking a message back, and what each of their sessions' agents is doing. Answers are
// short and say what to do; errors reach the log, not the chat.
type control struct {
	client client.Client
	cfg    *config.Config
	log    *zap.Logger
	now    func() time.Time
}

// Answer implements telegram.Control.
func (c control) Answer(ctx context.Context, cmd telegram.Command) string {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	chat := strconv.FormatInt(cmd.ChatID, 10)
	switch cmd.Name {
	case "pending":
		return c.pending(ctx, chat)
	case "cancel":
		return c.cancel(ctx, chat, cmd)
	case "status":
		return c.status(ctx, chat)
	case "stop":
		return c.stop(ctx, chat)
	case "allow", "deny":
		return c.answerCard(ctx, chat, cmd)
	case "reset":
		return c.reset(ctx, chat)
	}
	return "Unknown command. Try /pending, /status, or reply /cancel to a message."
}

// pending lists the chat's messages not answered yet, oldest first, with their age and where
// each is (waiting for its agent, or with it and not answered yet).
func (c control) pending(ctx context.Context, chat string) string {
	list, err := intent.List(ctx, c.client, intent.Filter{Status: workflows.StatusPending, ChatID: chat})
	if err != nil {
		c.log.Warn("/pending: list", zap.String("chat", chat), zap.Error(err))
		return "Could not read what waits right now; try again in a minute."
	}
	asks := c.approvalsWaiting(ctx, chat)
	if len(list) == 0 {
		if asks != "" {
			return "Every message of this chat is answered." + asks
		}
		return "Nothing waits: every message of this chat is answered."
	}
	slices.SortFunc(list, func(a, b intent.Summary) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d not answered yet, oldest first:", len(list))
	for i, s := range list {
		if i == pendingListed {
			fmt.Fprintf(&sb, "\n…and %d more (starter pending on the machine lists all).", len(list)-pendingListed)
			break
		}
		where := "waiting for " + s.Session
		if s.Delivered != nil {
			where = "with " + s.Session + ", no answer yet"
		}
		fmt.Fprintf(&sb, "\n#%s %s ago, %s: %s", s.MessageID, age(c.now().Sub(s.ReceivedAt)), where, redact.Snippet(s.Snippet, 60))
	}
	return sb.String() + asks
}

// approvalsWaiting lists the approvals of this chat's sessions that wait for the person, for
// /pending ("" when none, or when they cannot be read: the messages are what /pending is for).
func (c control) approvalsWaiting(ctx context.Context, chat string) string {
	resp, err := c.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: pendingListed,
		Query: fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.ApprovalWorkflowName)})
	if err != nil {
		c.log.Warn("/pending: approvals", zap.String("chat", chat), zap.Error(err))
		return ""
	}
	var sb strings.Builder
	for _, e := range resp.Executions {
		var m workflows.ApprovalMemo
		if p, ok := e.GetMemo().GetFields()[workflows.MemoKey]; !ok || converter.GetDefaultDataConverter().FromPayload(p, &m) != nil {
			continue
		}
		if m.Chat != chat {
			continue
		}
		fmt.Fprintf(&sb, "\nWaiting for your approval, %s ago: %s asks to use %s: %s (answer its card)", age(c.now().Sub(m.AskedAt)), m.Session, m.Tool, m.Action)
	}
	return sb.String()
}

// cancel takes back the message /cancel replies to (or names): it ends ignored, and one that
// has not reached its agent never does.
func (c control) cancel(ctx context.Context, chat string, cmd telegram.Command) string {
	msg := cmd.ReplyTo
	if msg == 0 {
		n, err := strconv.Atoi(strings.TrimPrefix(cmd.Args, "#"))
		if err != nil || n <= 0 {
			return "Reply /cancel to the message you want to take back (or send /cancel 123 with its number from /pending)."
		}
		msg = n
	}
	id := workflows.IntentID(chat, strconv.Itoa(msg))
	st, err := intent.Update(ctx, c.client, id, workflows.UpdateIgnore, workflows.IgnoreRequest{Reason: ReasonCancelled})
	switch {
	case errors.Is(err, intent.ErrNotFound):
		return fmt.Sprintf("#%d is not a message intentq recorded in this chat.", msg)
	case err != nil:
		if status, serr := intent.Status(ctx, c.client, id); serr == nil && status != workflows.StatusPending && status != workflows.StatusLinked {
			return fmt.Sprintf("#%d is already %s; nothing to cancel.", msg, status)
		}
		c.log.Warn("/cancel: ignore", zap.String("intent", id), zap.Error(err))
		return fmt.Sprintf("Could not cancel #%d right now; try again in a minute.", msg)
	case st.Delivered != nil:
		return fmt.Sprintf("Cancelled #%d. Its agent already had it; it is not reminded of it any more.", msg)
	}
	switch c.agentHas(ctx, c.sessionOf(ctx, id), id) {
	case hasYes:
		return fmt.Sprintf("Cancelled #%d. Its agent already had it; it is not reminded of it any more.", msg)
	case hasUnknown:
		return fmt.Sprintf("Cancelled #%d. Its session did not answer, so intentq cannot tell whether its agent had it already; it is not reminded of it any more.", msg)
	}
	return fmt.Sprintf("Cancelled #%d before it reached the agent: it never will.", msg)
}

// stop interrupts the running turn of the agent of this chat's session (workflows.UpdateStop):
// its CLI's stop key, once, only while its hooks say it works; nothing the person sent is lost.
func (c control) stop(ctx context.Context, chat string) string {
	var res workflows.StopResult
	name, answer := c.askSession(ctx, chat, "/stop", workflows.UpdateStop, &res)
	switch {
	case answer != "":
		return answer
	case res.Stopped:
		return "Stopped " + name + "'s running turn. Your messages wait for it and go in now."
	}
	return name + " not stopped: " + res.Why + "."
}

// reset is the person's yes to one reset of the agent of this chat's session
// (workflows.UpdateAllowReset): used only for a message the agent did not take in.
func (c control) reset(ctx context.Context, chat string) string {
	var res workflows.AllowResetResult
	name, answer := c.askSession(ctx, chat, "/reset", workflows.UpdateAllowReset, &res)
	switch {
	case answer != "":
		return answer
	case res.Allowed:
		return "Reset of " + name + " allowed once: " + res.Why + "."
	}
	return name + " not reset: " + res.Why + "."
}

// askSession runs update on the typing session of chat and reads its result into res; it
// returns the session's name, and the person's answer when it could not (else "").
func (c control) askSession(ctx context.Context, chat, command, update string, res any) (name, answer string) {
	name, err := c.cfg.SessionFor(chat)
	if err != nil || c.cfg.Sessions[name].Mode != config.ModeTmux {
		return name, "No agent in tmux serves this chat."
	}
	h, err := c.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.SessionWorkflowID(name), UpdateName: update, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, res)
	}
	if err != nil {
		c.log.Warn(command, zap.String("session", name), zap.Error(err))
		return name, "Could not reach " + name + " right now; try again in a minute."
	}
	return name, ""
}

// agentHas asks session whether its agent has the intent's message although the intent does not
// know it yet: under a burst a session tells its intents after its backlog is typed (issue 38).
// No session named is a no; a session not answering within hasMessageWait (its host's worker is
// down) is hasUnknown, which the person is told: a no would drop an edit of a message the agent
// had, in silence.
func (c control) agentHas(ctx context.Context, name, id string) hasAnswer {
	if name == "" {
		return hasNo
	}
	ctx, cancel := context.WithTimeout(ctx, hasMessageWait)
	defer cancel()
	has, err := session.HasMessage(ctx, c.client, name, id)
	switch {
	case err != nil:
		c.log.Warn("ask the session about a message", zap.String("session", name), zap.String("intent", id), zap.Error(err))
		return hasUnknown
	case has:
		return hasYes
	}
	return hasNo
}

// hasAnswer is a session's answer to whether its agent has a message.
type hasAnswer int

// The session's answers: no, yes, or none in time.
const (
	hasNo hasAnswer = iota
	hasYes
	hasUnknown
)

// hasMessageWait bounds agentHas: a session whose worker runs answers in milliseconds, and the
// door waits for the answer.
const hasMessageWait = 5 * time.Second

// sessionOf is the session intent id delivers to ("" when it cannot be read).
func (c control) sessionOf(ctx context.Context, id string) string {
	v, err := intent.Show(ctx, c.client, id)
	if err != nil {
		c.log.Warn("read the intent's session", zap.String("intent", id), zap.Error(err))
		return ""
	}
	return v.Session
}

// edit returns the door's handler of a person's edit of a message (issue 35): a message that has
// not reached its agent delivers the edited text instead (quietly); one the agent already has
// reaches it once more as a correction that names it (its own intent, <message>.edit<date>, so
// the same edit read again after a crash is recorded once), and the person is told.
func (c control) edit(rec *intent.Recorder) func(ctx context.Context, m intent.Message) string {
	return func(ctx context.Context, m intent.Message) string {
		chat, msg := m.ChatID, m.MessageID
		id := workflows.IntentID(chat, msg)
		if _, err := rec.Prepare(&m); err != nil {
			return fmt.Sprintf("Your edit of #%s was not taken: %s.", msg, err.Error())
		}
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		res, err := intent.Edit(ctx, c.client, id, m.Text)
		switch {
		case errors.Is(err, intent.ErrNotFound), errors.Is(err, intent.ErrNotOpen):
			return "" // not recorded here, or answered already: nothing to change
		case err != nil:
			c.log.Warn("edit", zap.String("chat", chat), zap.String("message", msg), zap.Error(err))
			return fmt.Sprintf("Your edit of #%s could not be passed on right now; send the correction as a new message.", msg)
		case !res.Delivered:
			switch c.agentHas(ctx, res.Session, id) {
			case hasNo:
				return ""
			case hasUnknown:
				// The edit is kept for when the message reaches the agent; if the agent had it
				// already, only a correction would reach it, and intentq cannot tell.
				return fmt.Sprintf("Your edit of #%s is kept for when #%s reaches its agent. Its session did not answer: if the agent already had #%s, send the correction as a new message.", msg, msg, msg)
			}
		}
		m.Corrects = msg
		m.MessageID = msg + ".edit" + strconv.FormatInt(m.SentAt.Unix(), 10)
		if m.SentAt.IsZero() {
			m.MessageID = msg + ".edit"
		}
		correction, err := rec.Start(ctx, m)
		if err != nil {
			c.log.Warn("edit: correction", zap.String("chat", chat), zap.String("message", msg), zap.Error(err))
			return fmt.Sprintf("The agent already had #%s, and your correction could not be passed on right now; send it as a new message.", msg)
		}
		rec.QueueDeliveries(ctx, []*intent.Result{&correction})
		if !correction.Created {
			return "" // this edit was passed on before (the batch read again)
		}
		return fmt.Sprintf("The agent already had #%s: your edit goes to it as a correction of it.", msg)
	}
}

// status says, for each session of this chat, what its agent is doing and what waits.
func (c control) status(ctx context.Context, chat string) string {
	var names []string
	id, _ := strconv.ParseInt(chat, 10, 64)
	for _, name := range c.cfg.SessionNames() {
		if slices.Contains(c.cfg.Sessions[name].Chats, id) {
			names = append(names, name)
		}
	}
	if name, err := c.cfg.SessionFor(chat); err == nil && !slices.Contains(names, name) {
		names = append(names, name)
	}
	if len(names) == 0 {
		return "No session serves this chat."
	}
	var lines []string
	for _, name := range names {
		if c.cfg.Sessions[name].Mode != config.ModeTmux {
			lines = append(lines, name+": headless (answers each message with a run)")
			continue
		}
		v, err := session.View(ctx, c.client, name)
		if err != nil {
			c.log.Warn("/status: view", zap.String("session", name), zap.Error(err))
			lines = append(lines, name+": could not be read right now")
			continue
		}
		lines = append(lines, name+": "+agentDoing(v, c.now())+waiting(v, c.now()))
	}
	return strings.Join(lines, "\n")
}

// agentDoing is what a session's agent is doing, in words.
func agentDoing(v workflows.SessionView, now time.Time) string {
	switch {
	case strings.HasPrefix(v.WaitsFor, "no agent"):
		return "no agent running (start it: starter run-agent " + v.Config.Name + ")"
	case strings.HasPrefix(v.WaitsFor, "dialog") || strings.HasPrefix(v.WaitsFor, "a draft"):
		return "waits for you at the terminal (" + v.WaitsFor + ")"
	case v.Agent == nil:
		return "agent state unknown (no hook yet)"
	case v.Agent.State == workflows.AgentWaiting && v.Agent.Event == workflows.EventPermissionRequest:
		return "waits for your approval (answer its card, or at the terminal)"
	}
	switch v.Agent.State {
	case workflows.AgentWorking:
		return "working for " + age(now.Sub(v.Agent.Since))
	case workflows.AgentWaiting:
		return "waits for you at the terminal (" + v.Agent.Detail + ")"
	case workflows.AgentGone:
		return "no agent running (start it: starter run-agent " + v.Config.Name + ")"
	}
	return "idle"
}

// waiting is what waits for a session's agent, if anything.
func waiting(v workflows.SessionView, now time.Time) string {
	n := len(v.Queued) + len(v.Offered)
	switch {
	case n == 0:
		return ""
	case v.BusySince != nil:
		return fmt.Sprintf("; %d waiting for it, for %s", n, age(now.Sub(*v.BusySince)))
	}
	return fmt.Sprintf("; %d on their way to it", n)
}

// age is a duration as a person reads it: 45s, 12m, 3h.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/time.Hour)) + "h"
}
