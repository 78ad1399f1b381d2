// Package policy is the one home of intentq's rules as typed values with their defaults: the
// reminder schedule (SPEC I6, I7), busy-pane handling (N2), the escalation ladder (N1) and how
// long a session has to report a delivery. config reads them from the user's file; workflows
// apply them. Nothing here touches the outside world.
package policy

import "time"

// Reminders is the reminder schedule of a pending intent (SPEC I5, I6, I7).
type Reminders struct {
	// FirstAfter is when the first reminder goes out after receipt.
	FirstAfter time.Duration `mapstructure:"first_after" json:"first_after"`
	// RepeatEvery spaces the reminders after the first.
	RepeatEvery time.Duration `mapstructure:"repeat_every" json:"repeat_every"`
	// RetryAfter is the next try after a failed reminder or delivery.
	RetryAfter time.Duration `mapstructure:"retry_after" json:"retry_after"`
	// OrphanAfter ends a pending intent as orphaned.
	OrphanAfter time.Duration `mapstructure:"orphan_after" json:"orphan_after"`
	// SnippetChars bounds the snippet that leaves the machine, in characters.
	SnippetChars int `mapstructure:"snippet_chars" json:"snippet_chars"`
}

// DefaultReminders is the schedule of SPEC I6 and I7.
var DefaultReminders = Reminders{
	FirstAfter:   30 * time.Second,
	RepeatEvery:  5 * time.Minute,
	RetryAfter:   60 * time.Second,
	OrphanAfter:  24 * time.Hour,
	SnippetChars: 40,
}

// Busy is how a session treats a pane that shows its CLI at work (SPEC N2).
type Busy struct {
	// BusyWait is the pause before looking again at a busy pane.
	BusyWait time.Duration `mapstructure:"busy_wait" json:"busy_wait,omitempty"`
	// BusyAlertAfter is how long a pane may stay busy with deliveries waiting before ntfy is told.
	BusyAlertAfter time.Duration `mapstructure:"busy_alert_after" json:"busy_alert_after,omitempty"`
	// BusyLines is how many lines from the bottom of the pane are read for busy patterns.
	BusyLines int `mapstructure:"busy_lines" json:"busy_lines,omitempty"`
	// WaitsForYouAfter is how long a dialog (a permission prompt) or a person's draft may keep
	// deliveries waiting before the person is told: only they can clear it.
	WaitsForYouAfter time.Duration `mapstructure:"waits_for_you_after" json:"waits_for_you_after,omitempty"`
}

// DefaultBusy is the busy handling used when nothing else is set.
var DefaultBusy = Busy{BusyWait: 10 * time.Second, BusyAlertAfter: 5 * time.Minute, BusyLines: 8, WaitsForYouAfter: 2 * time.Minute}

// OrDefault fills unset fields from DefaultBusy.
func (b Busy) OrDefault() Busy {
	return Busy{
		BusyWait:       Or(b.BusyWait, DefaultBusy.BusyWait),
		BusyAlertAfter: Or(b.BusyAlertAfter, DefaultBusy.BusyAlertAfter),
		BusyLines:      Or(b.BusyLines, DefaultBusy.BusyLines),
		// Sessions configured before this setting alert on a dialog like on a busy pane.
		WaitsForYouAfter: Or(b.WaitsForYouAfter, Or(b.BusyAlertAfter, DefaultBusy.WaitsForYouAfter)),
	}
}

// Escalation thresholds (SPEC N1): from InterruptAfter a reminder interrupts first, from
// ResetAfter it resets the CLI, at most once per ResetCooldown.
const (
	DefaultInterruptAfter = 2 * time.Minute
	DefaultResetAfter     = 4 * time.Minute
	DefaultResetCooldown  = 5 * time.Minute
)

// DeliveryTimeout is how long an intent waits for its session to report a delivery before it
// asks again (a long queue, or no session workflow).
const DeliveryTimeout = 2 * time.Minute

// ResultsHold is the longest the results of typed blocks wait while more waits to be typed
// (issue 38): under a burst the session types first and tells the intents together afterwards,
// well within DeliveryTimeout, so no intent asks again meanwhile.
const ResultsHold = time.Minute

// DefaultRunTimeout bounds one headless run of an agent CLI (scheduler.run_timeout).
const DefaultRunTimeout = 30 * time.Minute

// DefaultMaxConcurrentRuns is how many headless runs may go at once across all workers
// (scheduler.max_concurrent_sessions, SPEC P2).
const DefaultMaxConcurrentRuns = 2

// AlertEvery spaces a session's failure alerts: at most one push per AlertEvery, folding what
// arrives in between (a flood of failures is one push, not one per intent).
const AlertEvery = time.Minute

// Agent hooks (issue 10): how long a state reported by the agent's hooks is trusted on its own
// (a turn interrupted with Escape fires no Stop hook: after HookStale the screen decides again),
// how long messages handed to a hook wait for its commit before they are queued again (longer
// than any hook may run), and how long a typed delivery waits for the agent's UserPromptSubmit
// receipt before the input line is read instead.
const (
	HookStale   = 30 * time.Second
	OfferLease  = 30 * time.Second
	ReceiptWait = 5 * time.Second
)

// ScreenLag is how long after the agent's hooks said its turn ended the screen may still show
// it at work (Claude Code 2.1.330 draws "esc to interrupt" until a moment after its Stop hook
// returns), and ScreenRelook how soon the pane is looked at again meanwhile, instead of the
// busy wait (issue 35: a message waiting for that turn's end went in 10.5 s after it, the whole
// busy wait, not at once).
const (
	ScreenLag    = 5 * time.Second
	ScreenRelook = 250 * time.Millisecond
)

// Coalesced delivery (issue 15): what waits for a session is typed together, at most MaxBatch
// requests and MaxBatchBytes of text per prompt; a reminder at the head of the queue waits
// DigestGather for the others due at the same tick, so that they go out as one digest.
// WorkingPushAfter is how long a message the agent has taken in and works on in a live turn is
// kept off the phone (issue 35): reminders of it wait in its session's digest until the turn
// ends or the message is this old.
const WorkingPushAfter = 10 * time.Minute

const (
	MaxBatch      = 50
	MaxBatchBytes = 16 << 10
	DigestGather  = 250 * time.Millisecond
	// MaxCarriedQueueBytes is the most of a queue a session carries over when it continues as
	// new (Temporal refuses payloads over 2 MiB and warns from 512 KiB).
	MaxCarriedQueueBytes = 256 << 10
)

// SubmitAttempts bounds how often a delivery is typed before it is reported failed.
const SubmitAttempts = 3

// Continue-as-new thresholds: a workflow whose history reaches this many events continues as
// new (or sooner, when the server suggests it).
const (
	IntentMaxHistoryEvents = 2000
	// MaxHistoryEvents is the threshold of the long-lived workflows: sessions, inboxes and the
	// run semaphore.
	MaxHistoryEvents = 5000
)

// Or returns v, or def when v is the zero value.
func Or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
