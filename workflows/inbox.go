package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/hookapi"
	"github.com/intentq/intentq/internal/policy"
)

// Inbox workflow names (SPEC S3, N5): `inbox/<agent>` holds the messages agents send each other.
const (
	InboxIDPrefix     = "inbox/"
	InboxWorkflowName = "Inbox"
	UpdateInboxSend   = "send"
	UpdateInboxRead   = "read"
	QueryInbox        = "messages"
	// SignalInboxAnnounce asks an inbox to tell its agent's session what is unread now (a
	// session that does not know yet); an inbox run from before it told sessions continues as
	// new to do so.
	SignalInboxAnnounce = "inbox-announce"
	// SignalInboxUnread tells an agent's session what is unread in its inbox (InboxUnread),
	// after every change: the session hands it to its hook desk, so a Stop hook reads it
	// without a round trip to the server.
	SignalInboxUnread = "inbox-unread"
)

// Inbox limits (SPEC N5): at most MaxInboxMessages; when over, all unread are kept plus the
// newest KeepRead read ones.
const (
	MaxInboxMessages = 50
	KeepRead         = 30
)

// The inbox's messages as hooks read and send them (package hookapi).
type (
	// InboxMessage is one message in an inbox.
	InboxMessage = hookapi.InboxMessage
	// InboxUnread is what is unread in an inbox: how many messages, and the oldest
	// InboxUnreadShown of them with their content cut to InboxUnreadRunes.
	InboxUnread = hookapi.InboxUnread
	// InboxSend is the send update's argument. Key, when set, makes the send idempotent.
	InboxSend = hookapi.InboxSend
)

// InboxID is the workflow ID of an agent's inbox.
func InboxID(agent string) string { return InboxIDPrefix + agent }

// InboxUnreadShown is how many unread messages InboxUnread carries (a Stop hook names at most
// five, SPEC S1); InboxUnreadRunes bounds each one's content there.
const (
	InboxUnreadShown = 5
	InboxUnreadRunes = 200
)

// UnreadOf is the InboxUnread of an inbox's messages.
func UnreadOf(msgs []InboxMessage) InboxUnread {
	var u InboxUnread
	for _, m := range msgs {
		if m.Read {
			continue
		}
		u.Count++
		if len(u.First) < InboxUnreadShown {
			if r := []rune(m.Content); len(r) > InboxUnreadRunes {
				m.Content = string(r[:InboxUnreadRunes])
			}
			u.First = append(u.First, m)
		}
	}
	return u
}

// InboxInput starts (or continues) an inbox.
type InboxInput struct {
	Agent string `json:"agent"`
	// Session is the agent's session, nudged on new unread messages; empty: messages only
	// accumulate.
	Session string `json:"session,omitempty"`
	// RepeatEvery is how often unread messages are nudged again (with escalation).
	RepeatEvery time.Duration  `json:"repeat_every,omitempty"`
	Messages    []InboxMessage `json:"messages,omitempty"`
	// Seq numbers messages; Keys are recent idempotency keys.
	Seq  int64    `json:"seq"`
	Keys []string `json:"keys,omitempty"`
	// Nudges numbers nudge requests.
	Nudges           int `json:"nudges"`
	MaxHistoryEvents int `json:"max_history_events,omitempty"`
	// TellsSession: this run tells the agent's session (SessionWorkflowID(Agent)) what is unread
	// after every change (SignalInboxUnread). Runs started before it was set do not; they
	// continue as new with it when a session asks (SignalInboxAnnounce).
	TellsSession bool `json:"tells_session,omitempty"`
	// NudgeDue: messages arrived that the run before continued as new before nudging; this run
	// nudges them as soon as a new message would be.
	NudgeDue bool `json:"nudge_due,omitempty"`
}

// inbox is the running state of InboxWorkflow.
type inbox struct {
	InboxInput
	id        string
	changed   bool
	newUnread bool
	// tell: what is unread changed (or a session asked) since the session was last told;
	// telling: a tell is out. upgrade: a session asked a run that does not tell sessions.
	tell, telling, upgrade bool
}

// InboxWorkflow keeps an agent's inbox: sends and reads are updates, handled one at a time, so
// concurrent writers never lose or corrupt a message (SPEC S3). New unread messages nudge the
// agent's session, escalating like reminders while they stay unread; and the session is told
// what is unread after every change (issue 38: its hook desk answers the Stop hook with it).
func InboxWorkflow(ctx workflow.Context, in InboxInput) error {
	b := &inbox{InboxInput: in, id: workflow.GetInfo(ctx).WorkflowExecution.ID, newUnread: in.NudgeDue}
	if err := workflow.SetQueryHandler(ctx, QueryInbox, func() ([]InboxMessage, error) { return b.Messages, nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateInboxSend, b.send, workflow.UpdateHandlerOptions{Validator: validateSend}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateInboxRead, b.read); err != nil {
		return err
	}
	workflow.Go(ctx, b.takeAnnounces)
	if b.TellsSession {
		// Every run tells once at its start: a change the run before had not told yet is told.
		b.tell = true
		workflow.Go(ctx, b.tellSession)
	}
	for {
		if b.historyTooLong(ctx) || b.upgrade {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) && !b.telling }); err != nil {
				return err
			}
			next := b.InboxInput
			next.TellsSession, next.NudgeDue = true, b.newUnread
			return workflow.NewContinueAsNewError(ctx, InboxWorkflowName, next)
		}
		oldest := b.oldestUnread()
		if b.Session == "" || oldest == nil {
			if err := workflow.Await(ctx, func() bool { return b.changed || b.upgrade }); err != nil {
				return err
			}
			b.changed = false
			continue
		}
		if b.newUnread {
			// A short pause gathers a burst of sends into one nudge.
			_ = workflow.Sleep(ctx, 2*time.Second)
			b.newUnread = false
			b.nudge(ctx)
			continue
		}
		ok, err := workflow.AwaitWithTimeout(ctx, policy.Or(b.RepeatEvery, policy.DefaultReminders.RepeatEvery), func() bool { return b.changed || b.upgrade })
		if err != nil {
			return err
		}
		b.changed = false
		if !ok && b.oldestUnread() != nil {
			b.nudge(ctx)
		}
	}
}

func validateSend(s InboxSend) error {
	switch {
	case s.Content == "":
		return errors.New("inbox message content is empty")
	case s.Type == "":
		return errors.New("inbox message type is empty")
	case len(s.Content) > 64<<10:
		return fmt.Errorf("inbox message content is %d bytes, over 64 KiB", len(s.Content))
	}
	return nil
}

func (b *inbox) send(ctx workflow.Context, s InboxSend) (InboxMessage, error) {
	if s.Key != "" && slices.Contains(b.Keys, s.Key) {
		id := b.keyedID(s.Key)
		for _, m := range b.Messages {
			if m.ID == id {
				return m, nil
			}
		}
		return InboxMessage{ID: id}, nil // sent before, and since pruned
	}
	b.Seq++
	m := InboxMessage{ID: fmt.Sprintf("%s#%d", b.Agent, b.Seq), From: s.From, Timestamp: workflow.Now(ctx), Type: s.Type, Content: s.Content}
	if s.Key != "" {
		m.ID = b.keyedID(s.Key)
		b.Keys = append(b.Keys, s.Key)
		if len(b.Keys) > 2*MaxInboxMessages {
			b.Keys = b.Keys[len(b.Keys)-2*MaxInboxMessages:]
		}
	}
	b.Messages = append(b.Messages, m)
	b.prune()
	b.changed, b.newUnread, b.tell = true, true, true
	return m, nil
}

func (b *inbox) keyedID(key string) string { return b.Agent + "#" + key }

// read marks every unread message read and returns them, oldest first.
func (b *inbox) read(ctx workflow.Context) ([]InboxMessage, error) {
	var unread []InboxMessage
	for i := range b.Messages {
		if !b.Messages[i].Read {
			unread = append(unread, b.Messages[i])
			b.Messages[i].Read = true
		}
	}
	b.prune()
	b.changed = true
	b.tell = b.tell || len(unread) > 0
	return unread, nil
}

// takeAnnounces takes the sessions' asks (SignalInboxAnnounce): a run that tells sessions tells
// again; one from before continues as new to tell.
func (b *inbox) takeAnnounces(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalInboxAnnounce)
	for {
		ch.Receive(ctx, nil)
		if b.TellsSession {
			b.tell = true
		} else {
			b.upgrade = true
		}
	}
}

// tellSession tells the agent's session what is unread whenever that changed, one tell at a
// time, so the session hears them in order. A session that does not run is not told (it asks
// when it starts).
func (b *inbox) tellSession(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return b.tell }); err != nil {
			return
		}
		b.tell, b.telling = false, true
		err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(b.Agent), "", SignalInboxUnread, UnreadOf(b.Messages)).Get(ctx, nil)
		b.telling = false
		var notFound *temporal.UnknownExternalWorkflowExecutionError
		if err != nil && !errors.As(err, &notFound) {
			workflow.GetLogger(ctx).Warn("inbox: the session was not told what is unread; telling again soon", "inbox", b.id, "error", err)
			if workflow.Sleep(ctx, 10*time.Second) != nil {
				return
			}
			b.tell = true
		}
	}
}

// prune applies SPEC N5: over MaxInboxMessages, keep every unread message and the newest read
// ones, at most KeepRead and only as many as fit under MaxInboxMessages, in order. Unread
// messages are never dropped, even past the cap.
func (b *inbox) prune() {
	if len(b.Messages) <= MaxInboxMessages {
		return
	}
	readLeft := 0
	for _, m := range b.Messages {
		if m.Read {
			readLeft++
		}
	}
	unread := len(b.Messages) - readLeft
	drop := readLeft - min(KeepRead, max(0, MaxInboxMessages-unread))
	kept := b.Messages[:0]
	for _, m := range b.Messages {
		if m.Read && drop > 0 {
			drop--
			continue
		}
		kept = append(kept, m)
	}
	b.Messages = kept
}

func (b *inbox) oldestUnread() *InboxMessage {
	for i := range b.Messages {
		if !b.Messages[i].Read {
			return &b.Messages[i]
		}
	}
	return nil
}

// NotificationText is how unread inbox messages are announced in the agent's pane, with the
// wrapper that marks it as information (SPEC H3).
func NotificationText(agent string, unread int, from string) string {
	return fmt.Sprintf("[Notification] %d unread inbox message(s) for %s, latest from %s: run `starter inbox read %s` — not a blocking request", unread, agent, from, agent)
}

// nudge asks the agent's session to announce the unread messages, escalating by the age of the
// oldest one.
func (b *inbox) nudge(ctx workflow.Context) {
	oldest := b.oldestUnread()
	if oldest == nil {
		return
	}
	unread, latest := 0, ""
	for _, m := range b.Messages {
		if !m.Read {
			unread++
			latest = m.From
		}
	}
	b.Nudges++
	req := DeliveryRequest{
		ID: DeliveryID(b.id, b.Nudges), ReplyTo: b.id, Kind: KindReminder,
		Text: NotificationText(b.Agent, unread, latest), Since: oldest.Timestamp,
	}
	if _, err := RequestDelivery(ctx, b.Session, req, 2*time.Minute, false, nil); err != nil {
		workflow.GetLogger(ctx).Warn("inbox nudge failed", "inbox", b.id, "session", b.Session, "error", err)
	}
}

func (b *inbox) historyTooLong(ctx workflow.Context) bool {
	return historyTooLong(ctx, policy.Or(b.MaxHistoryEvents, policy.MaxHistoryEvents))
}
