// Package hookapi holds the names and types a hook exchanges with its session, the hook desk
// and intentq's lists of intents: what the workflows and the hooks share. It does not import the
// Temporal SDK, so the hook binary (intentq-hook), which the agent runs at every turn boundary and
// tool call, starts in a few milliseconds; package workflows and package intent alias these.
package hookapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/intentq/intentq/internal/receipt"
)

// Hook events, as the starter's `hook` command names them.
const (
	EventSessionStart     = "session-start"
	EventUserPromptSubmit = "user-prompt-submit"
	EventPreToolUse       = "pre-tool-use"
	EventPostToolUse      = "post-tool-use"
	EventStop             = "stop"
	EventNotification     = "notification"
	// EventSessionEnd: the agent's CLI is ending (Claude Code's SessionEnd, reason in Detail).
	EventSessionEnd = "session-end"
	// EventPermissionRequest is the hook event of a permission the agent asks for.
	EventPermissionRequest = "permission-request"
)

// Kinds of delivery.
const (
	KindMessage  = "message"
	KindReminder = "reminder"
	// KindContext is only committed to the history, not typed: a block Claude Code injects
	// itself (the session-start hook's output).
	KindContext = "context"
)

// Intent statuses (SPEC I5): pending -> linked -> closed, pending -> ignored.
const (
	StatusPending = "pending"
	StatusLinked  = "linked"
	StatusClosed  = "closed"
	StatusIgnored = "ignored"
)

// Doors an intent can come through (SPEC I4).
const (
	SourceTelegram = "telegram"
	SourceIngest   = "ingest"
	SourceCLI      = "cli"
)

// IntentIDPrefix begins every intent's workflow ID.
const IntentIDPrefix = "intent/"

// AgentEvent is one hook's report.
type AgentEvent struct {
	Event string    `json:"event"`
	At    time.Time `json:"at"`
	// Detail is the notification type, the session-start source or the tool name.
	Detail string `json:"detail,omitempty"`
	// Receipt names the intents whose typed delivery this prompt is (user-prompt-submit).
	Receipt []string `json:"receipt,omitempty"`
}

// TakeRequest asks the session for the messages waiting for the agent.
type TakeRequest struct {
	// Key names the hook run (e.g. post-tool-use/<tool_use_id>): a second run with the same key
	// takes nothing.
	Key   string `json:"key"`
	Event string `json:"event"`
	// Deadline is when the hook stops waiting: a take that reaches the session later is refused.
	Deadline time.Time `json:"deadline"`
	// Detail and Receipt report the event as AgentEvent does.
	Detail  string   `json:"detail,omitempty"`
	Receipt []string `json:"receipt,omitempty"`
	// RemindEvery, when set, asks whether the hook's reminder of old intents is due: at most
	// one per RemindEvery per session.
	RemindEvery time.Duration `json:"remind_every,omitempty"`
	// RemindOnly: the hook takes no message (a Stop whose block reason the CLI would give the
	// model twice); it reports its event and asks only whether its reminder is due.
	RemindOnly bool `json:"remind_only,omitempty"`
}

// TakeResult is what a hook prints for the agent; Messages is empty when nothing waits.
type TakeResult struct {
	Key      string            `json:"key"`
	Messages []DeliveryRequest `json:"messages,omitempty"`
	// RemindDue says the hook's reminder of old intents is due (and now counted as sent).
	RemindDue bool `json:"remind_due,omitempty"`
}

// QueryHad asks a session which of the intents it is given (their workflow IDs) have their
// message in its agent's context, as its own record says ([]HadMessage). A session-start hook
// asks it: the intents' memos lag behind the session (a result held while more is typed,
// visibility eventually consistent), and a message the agent had must be listed in full in the
// new context, not named as one that follows on its own.
const QueryHad = "had"

// HadMessage is an intent whose message the agent has in its context (typed and confirmed, or
// handed over by a hook), as its session's own record says.
type HadMessage struct {
	Intent string `json:"intent"`
	// At is when the session counted it delivered; zero when it does not know (counted by an
	// earlier run, which told its intent before it ended).
	At time.Time `json:"at,omitzero"`
	// Follows: the agent's present context does not have it, and the session hands it over on
	// its own (it waits in the queue or a hook's hands, or a reset ended the context it went
	// to and it is presented again): named only, whatever the intent's memo says.
	Follows bool `json:"follows,omitempty"`
}

// DeliveryRequest asks a session to type Text into its pane and tell ReplyTo how it went.
type DeliveryRequest struct {
	ID      string `json:"id"`
	ReplyTo string `json:"reply_to"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	// Since is when the agent got the message being reminded of (delivered, or first
	// reminded); a reminder escalates by the time since (SPEC N1). Zero: no escalation.
	Since time.Time `json:"since,omitempty"`
	// Backlog marks a reminder sent late because intentq itself was down or behind: it never
	// escalates, the agent did not ignore anything.
	Backlog bool `json:"backlog,omitempty"`
	// Tick numbers an intent's reminders (1 for the first that reaches the agent); the same
	// for every request of one due reminder, so that a request repeated after its wait timed
	// out (a long queue, a worker restart) is not typed twice. 0: not numbered.
	Tick int `json:"tick,omitempty"`
	// Again presents a message again, in the agent's new context: the agent had it in the one
	// a reset ended (a hook printed it there, and its commit came after the reset). Typed or
	// handed over as a message, never taken for a repeat of it.
	Again bool `json:"again,omitempty"`
}

// TypedKey identifies what a request types, for "typed once": the intent for a message, the
// intent and tick for a reminder, the request for a message presented again; "" when it has no
// identity.
func (r DeliveryRequest) TypedKey() string {
	switch {
	case r.Again:
		return r.ReplyTo + "#again:" + r.ID
	case r.Kind == KindMessage:
		return r.ReplyTo
	case r.Kind == KindReminder && r.Tick > 0:
		return fmt.Sprintf("%s#reminder-%d", r.ReplyTo, r.Tick)
	}
	return ""
}

// InboxMessage is one message in an inbox.
type InboxMessage struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	Timestamp time.Time `json:"timestamp"`
	Type      string    `json:"type"`
	Content   string    `json:"content"`
	Read      bool      `json:"read"`
}

// InboxUnread is what is unread in an inbox: how many messages, and the oldest InboxUnreadShown
// of them with their content cut to InboxUnreadRunes.
type InboxUnread struct {
	Count int            `json:"count"`
	First []InboxMessage `json:"first,omitempty"`
}

// InboxSend is the send update's argument. Key, when set, makes the send idempotent.
type InboxSend struct {
	Key     string `json:"key,omitempty"`
	From    string `json:"from"`
	Type    string `json:"type"`
	Content string `json:"content"`
}

// IntentID is the workflow ID of the intent for one message: `intent/<chat_id>/<message_id>`.
func IntentID(chatID, messageID string) string {
	return IntentIDPrefix + chatID + "/" + messageID
}

// ReceiptOf reads a prompt the agent received: when it begins with the header of a message or
// reminder intentq typed (receipt.Parse), it names that intent (its workflow ID).
func ReceiptOf(prompt string) (string, bool) {
	chat, msg, ok := receipt.Parse(prompt)
	if !ok {
		return "", false
	}
	return IntentID(chat, msg), true
}

// Summary is one intent in a list (`starter pending`).
type Summary struct {
	ID             string     `json:"id"`
	ChatID         string     `json:"chat_id"`
	MessageID      string     `json:"message_id"`
	Status         string     `json:"status"`
	Session        string     `json:"session"`
	ReceivedAt     time.Time  `json:"received_at"`
	Reminders      int        `json:"reminders"`
	LastRemindedAt *time.Time `json:"last_reminded_at"`
	Snippet        string     `json:"snippet"`
	Source         string     `json:"source,omitempty"`
	// Delivered is when the message was typed into the pane, as far as the memo says.
	Delivered *time.Time `json:"delivered_at,omitempty"`
	// Text is the full text when the memo holds it (workflows.MemoTextKey); never printed in
	// a list.
	Text string `json:"-"`
}

// Filter narrows a list; empty fields match everything.
type Filter struct {
	Status  string
	Session string
	ChatID  string
	// ReceivedBefore keeps the intents received before it; zero: any.
	ReceivedBefore time.Time
}

// Page is one bounded look at a list: at most limit intents, the most recently started first as
// visibility keeps them, returned oldest first. It does not count the rest (a count reads every
// matching row: 35 ms at 10,000 pending on SQLite); More says that there are others.
type Page struct {
	Intents []Summary
	More    bool
}

// ErrNotFound is returned for an intent that does not exist.
var ErrNotFound = errors.New("no such intent")

// ErrNotOpen is returned when an update meets an intent that has already ended.
var ErrNotOpen = errors.New("intent has ended")

// IDString reads a chat or message ID that a door's JSON carries as a string or a number; empty
// when it is neither.
func IDString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
