package workflows

// What callers see of an intent: its statuses and doors, the workflow's input and state, and
// the requests of its updates.

import (
	"time"

	"github.com/intentq/intentq/internal/hookapi"
	"github.com/intentq/intentq/internal/policy"
)

// Intent statuses (SPEC I5): pending -> linked -> closed, pending -> ignored.
const (
	StatusPending = hookapi.StatusPending
	StatusLinked  = hookapi.StatusLinked
	StatusClosed  = hookapi.StatusClosed
	StatusIgnored = hookapi.StatusIgnored
)

// Reasons recorded with transitions.
const (
	ReasonReceived = "received"
	ReasonManual   = "manual"
	ReasonOrphaned = "orphaned"
	ReasonReplied  = "replied"
)

// Doors an intent can come through (SPEC I4).
const (
	SourceTelegram = hookapi.SourceTelegram
	SourceIngest   = hookapi.SourceIngest
	SourceCLI      = hookapi.SourceCLI
)

// Update and query names of the intent workflow, used by the starter and the hooks.
const (
	UpdateClose     = "close"
	UpdateLink      = "link"
	UpdateIgnore    = "ignore"
	UpdateRemindNow = "remind-now"
	// UpdateEdit puts the person's edited text in place of a message that has not reached the
	// agent (EditRequest, EditResult).
	UpdateEdit = "edit"
	// UpdateHookRemind asks whether the post-tool-use hook may remind of this intent now.
	UpdateHookRemind = "hook-remind"
	QueryState       = "state"
	// SignalClose closes an intent like UpdateClose, for callers that cannot wait for a worker
	// (a hook while the worker is down): the server keeps the signal until a worker runs.
	SignalClose = "close"
)

// ErrTypeIntentNotOpen is the error type of an update refused because the intent has ended.
const ErrTypeIntentNotOpen = "IntentNotOpen"

// IntentWorkflowName is the registered name of IntentWorkflow.
const IntentWorkflowName = "Intent"

// ReminderPolicy is the reminder schedule of SPEC I6 as the intent started with it (from config),
// and where its reminders and alerts go.
type ReminderPolicy struct {
	policy.Reminders
	// Push says reminders are pushed to ntfy too (false: tmux only). The topic is never in the
	// input: the worker's ntfy activity looks it up by the intent's session. NtfyTopic is only
	// read from intents of older builds.
	Push      bool   `json:"push,omitempty"`
	NtfyTopic string `json:"ntfy_topic,omitempty"`
	// DeliveryTimeout bounds the wait for the session to report a delivery.
	DeliveryTimeout time.Duration `json:"delivery_timeout"`
	// MaxHistoryEvents triggers continue-as-new once the history is this long.
	MaxHistoryEvents int `json:"max_history_events"`
}

// IntentVersion is the intent workflow's current behaviour: an intent started with it records
// no version marker.
const IntentVersion = 5

// intentTakesBack (IntentVersion 3, change ID take-back-ignored): an intent ignored or
// cancelled before its message reached the agent takes it back from its session (and stops
// waiting for its delivery), so it is never handed over afterwards; before, the session still
// typed it.
const intentTakesBack = 3

// intentPushesWhenHostDown (IntentVersion 4, change ID push-when-host-down): a reminder push the
// session did not report in time goes out from the intent itself when no worker serves the
// session's host (issue 38): the person is reminded while the host is down; before, the push
// waited with the session until its host was back.
const intentPushesWhenHostDown = 4

// intentWithdrawsHeldPush (IntentVersion 5, change ID withdraw-held-push): an intent that pushed
// its reminder itself while the session's host was down tells the session (SignalPushSent),
// which drops the push it holds; before, the session pushed it again once its host was back.
const intentWithdrawsHeldPush = 5

// IntentFloor is the oldest intent this code replays: every rule of an older version has gone
// with its branch (docs/design.md). An intent lives until it is answered; `starter doctor`
// names any open one below the floor, which must end (or be closed) before a build that raises
// the floor runs.
const IntentFloor = 2

// IntentInput starts an intent workflow: the message, where it goes, and the policy.
type IntentInput struct {
	// Version is the intent workflow's behaviour this intent was started with (IntentVersion
	// when a door of this build started it): a new intent records no version markers, each of
	// which would cost the server a search-attribute write. Below IntentFloor: not replayed.
	Version    int       `json:"version,omitempty"`
	ChatID     string    `json:"chat_id"`
	MessageID  string    `json:"message_id"`
	Text       string    `json:"text"`
	User       string    `json:"user,omitempty"`
	Source     string    `json:"source"`
	ReceivedAt time.Time `json:"received_at"`
	// SentAt is when the sender sent the message, when the door knows it.
	SentAt  time.Time `json:"sent_at,omitempty"`
	Session string    `json:"session"`
	// Sender is who sent the message, from the Telegram door (nil: another door, or an intent
	// from before it was kept); the delivered header is built from it, not from User, which
	// the door sets to Sender's String for lists and show.
	Sender *Sender `json:"sender,omitempty"`
	// Forwarded: the message was forwarded (or automatically forwarded from a channel): its
	// text is not the sender's own words. ChatType is Telegram's chat type (private, group,
	// supergroup, channel); a message not in a private chat is marked in the header.
	Forwarded bool   `json:"forwarded,omitempty"`
	ChatType  string `json:"chat_type,omitempty"`
	// ViaBot is the inline bot the message was sent through (its text is the bot's result, not
	// the sender's own words); nil: none, or an intent from before it was kept.
	ViaBot *Sender `json:"via_bot,omitempty"`
	// Deliver: the message itself must be typed into the session (the Telegram door, where
	// intentq is the poller). The plugin door delivers through Claude Code itself.
	Deliver bool `json:"deliver"`
	// Headless: the session runs the agent CLI per prompt; the message is run as a prompt and the
	// answer goes back to the chat, which closes the intent (SPEC P11).
	Headless bool `json:"headless,omitempty"`
	// Prompt is the prompt a headless intent runs, prepared by the door (masked text, the tool
	// policy's flags); nil: the text as it is.
	Prompt *PromptRequest `json:"prompt,omitempty"`
	// ReplyHint tells the agent how to answer, in the delivered text (empty: nothing).
	ReplyHint string `json:"reply_hint,omitempty"`
	// AckReaction is put on the person's message when the intent starts, DoneReaction when it
	// closes (Telegram door; empty: none).
	AckReaction  string `json:"ack_reaction,omitempty"`
	DoneReaction string `json:"done_reaction,omitempty"`
	// CancelReaction replaces AckReaction when the person takes the message back before it
	// reached the agent.
	CancelReaction string `json:"cancel_reaction,omitempty"`
	// DeliveredReaction replaces the reaction once the message is in the agent's context, and
	// FailedReaction when a delivery attempt failed (issue 36; intents started before had
	// neither, so no run replays a reaction it did not make).
	DeliveredReaction string `json:"delivered_reaction,omitempty"`
	// Corrects is the message this one corrects (an edit of a message the agent already had);
	// the delivered header says corrects=<message>.
	Corrects       string `json:"corrects,omitempty"`
	FailedReaction string `json:"failed_reaction,omitempty"`
	// DeliveryQueued: the door already asked the session to deliver the message (request
	// DoorDeliveryID), in the order messages arrived; the intent only waits for the result.
	DeliveryQueued bool           `json:"delivery_queued,omitempty"`
	Policy         ReminderPolicy `json:"policy"`
	// State is carried over by continue-as-new; nil on the first run.
	State *IntentState `json:"state,omitempty"`
}

// Sender is the sender of a Telegram message as the Telegram door saw it. Only ID and Username
// are Telegram's own identifiers; Name is whatever the sender chose to be called.
type Sender struct {
	// ID is the sender's numeric Telegram user id.
	ID int64 `json:"id"`
	// Username is the sender's Telegram username, without the @ (empty: none).
	Username string `json:"username,omitempty"`
	// Name is the display name (first and last name); the header only ever shows it quoted.
	Name string `json:"name,omitempty"`
}

// Transition is one status change, with when and why.
type Transition struct {
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// IntentState is what the workflow knows about its intent; the `state` query returns it with
// the input.
type IntentState struct {
	Status      string       `json:"status"`
	Transitions []Transition `json:"transitions"`
	Job         string       `json:"job,omitempty"`
	// Delivered is when the message itself reached the session (Deliver intents only).
	Delivered *time.Time `json:"delivered_at,omitempty"`
	// Edits counts the person's edits that replaced the message before it reached the agent.
	Edits int `json:"edits,omitempty"`
	// Reminders counts the reminders that reached the agent's pane, LastRemindedAt the last one.
	Reminders      int        `json:"reminders"`
	LastRemindedAt *time.Time `json:"last_reminded_at,omitempty"`
	// LastAttemptAt is the last reminder attempt; FailedAttempts the current streak of failed
	// reminders (0 after a success).
	LastAttemptAt  *time.Time `json:"last_attempt_at,omitempty"`
	FailedAttempts int        `json:"failed_attempts"`
	// Pushes counts the reminders that reached ntfy, LastPushedAt the last one; PushFailures and
	// LastPushAttemptAt track failed pushes, retried on their own schedule.
	Pushes            int        `json:"pushes,omitempty"`
	LastPushedAt      *time.Time `json:"last_pushed_at,omitempty"`
	PushFailures      int        `json:"push_failures,omitempty"`
	LastPushAttemptAt *time.Time `json:"last_push_attempt_at,omitempty"`
	// SeenAt is when the agent first got the message (typed, or a reminder of it): reminders
	// escalate by the time since.
	SeenAt *time.Time `json:"seen_at,omitempty"`
	// Replies are the answers sent to the person through UpdateReply.
	Replies []ReplyRecord `json:"replies,omitempty"`
	// LastDeliveryAttemptAt and DeliveryFailures do the same for delivering the message itself.
	LastDeliveryAttemptAt *time.Time `json:"last_delivery_attempt_at,omitempty"`
	DeliveryFailures      int        `json:"delivery_failures"`
	LastError             string     `json:"last_error,omitempty"`
	// Attempts numbers delivery requests, so stale results are recognised.
	Attempts int `json:"attempts"`
	// LastPhase is the escalation phase of the last reminder (SPEC N1); Resets when the
	// session's CLI was reset for this intent.
	LastPhase int         `json:"last_phase,omitempty"`
	Resets    []time.Time `json:"resets,omitempty"`
	// LastHookReminderAt throttles the post-tool-use hook's reminders of this intent.
	LastHookReminderAt *time.Time `json:"last_hook_reminder_at,omitempty"`
	// Runs counts continue-as-new generations.
	Runs int `json:"runs"`
}

// IntentView is the `state` query's answer.
type IntentView struct {
	ID string `json:"id"`
	IntentInput
	IntentState
}

// IntentMemo is the memo an intent keeps up to date.
type IntentMemo struct {
	Reminders      int        `json:"reminders"`
	LastRemindedAt *time.Time `json:"last_reminded_at,omitempty"`
	Snippet        string     `json:"snippet"`
	MessageID      string     `json:"message_id"`
	Source         string     `json:"source"`
	LastPhase      int        `json:"last_phase,omitempty"`
	Resets         int        `json:"resets,omitempty"`
	// Delivered is when the message itself was typed into the pane (Telegram door).
	Delivered *time.Time `json:"delivered_at,omitempty"`
}

// MemoKey is the memo field holding IntentMemo.
const MemoKey = "intent"

// MemoTextKey is the memo field holding the message's full text, set when the intent starts
// (never upserted): a hook lists pending intents with their texts in one call (issue 26). The
// memo is a payload: encrypted like the input when encryption is on.
const MemoTextKey = "text"

// MaxMemoText bounds the text kept in the memo; a longer one is read from the intent's start.
const MaxMemoText = 4 << 10

// HookRemindRequest asks whether a hook reminder is due: at most one per Every.
type HookRemindRequest struct {
	Every time.Duration `json:"every"`
}

// CloseRequest closes an intent (the agent replied).
type CloseRequest struct {
	Reason string `json:"reason,omitempty"`
}

// LinkRequest ties an intent to a job; reminders stop.
type LinkRequest struct {
	Job string `json:"job"`
}

// EditRequest is the person's edited text of the message.
type EditRequest struct {
	Text string `json:"text"`
}

// EditResult says whether the edit replaced the message before it reached the agent; when not,
// Delivered says the agent already had it.
type EditResult struct {
	Replaced  bool `json:"replaced"`
	Delivered bool `json:"delivered,omitempty"`
	// Session is the session the replaced text was sent to (empty from a build before it).
	Session string `json:"session,omitempty"`
}

// IgnoreRequest gives up on an intent by hand.
type IgnoreRequest struct {
	Reason string `json:"reason,omitempty"`
}
