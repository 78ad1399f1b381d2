package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/redact"
)

// Intent statuses (SPEC I5): pending -> linked -> closed, pending -> ignored.
const (
	StatusPending = "pending"
	StatusLinked  = "linked"
	StatusClosed  = "closed"
	StatusIgnored = "ignored"
)

// Reasons recorded with transitions.
const (
	ReasonReceived = "received"
	ReasonManual   = "manual"
	ReasonOrphaned = "orphaned"
	ReasonReplied  = "replied"
)

// Update and query names of the intent workflow, used by the starter and the hooks.
const (
	UpdateClose     = "close"
	UpdateLink      = "link"
	UpdateIgnore    = "ignore"
	UpdateRemindNow = "remind-now"
	// UpdateHookRemind asks whether the post-tool-use hook may remind of this intent now.
	UpdateHookRemind = "hook-remind"
	QueryState       = "state"
)

// ErrTypeIntentNotOpen is the error type of an update refused because the intent has ended.
const ErrTypeIntentNotOpen = "IntentNotOpen"

// IntentWorkflowName is the registered name of IntentWorkflow.
const IntentWorkflowName = "Intent"

// Doors an intent can come through (SPEC I4).
const (
	SourceTelegram = "telegram"
	SourceIngest   = "ingest"
	SourceCLI      = "cli"
)

// ReminderPolicy is the reminder schedule of SPEC I6, taken from config when the intent starts.
type ReminderPolicy struct {
	FirstAfter   time.Duration `json:"first_after"`
	RepeatEvery  time.Duration `json:"repeat_every"`
	RetryAfter   time.Duration `json:"retry_after"`
	OrphanAfter  time.Duration `json:"orphan_after"`
	SnippetChars int           `json:"snippet_chars"`
	// NtfyTopic receives reminder pushes; empty: reminders are tmux only.
	NtfyTopic string `json:"ntfy_topic,omitempty"`
	// DeliveryTimeout bounds the wait for the session to report a delivery.
	DeliveryTimeout time.Duration `json:"delivery_timeout"`
	// MaxHistoryEvents triggers continue-as-new once the history is this long.
	MaxHistoryEvents int `json:"max_history_events"`
}

// IntentInput starts an intent workflow: the message, where it goes, and the policy.
type IntentInput struct {
	ChatID     string    `json:"chat_id"`
	MessageID  string    `json:"message_id"`
	Text       string    `json:"text"`
	User       string    `json:"user,omitempty"`
	Source     string    `json:"source"`
	ReceivedAt time.Time `json:"received_at"`
	// SentAt is when the sender sent the message, when the door knows it.
	SentAt  time.Time `json:"sent_at,omitempty"`
	Session string    `json:"session"`
	// Deliver: the message itself must be typed into the session (the Telegram door, where
	// intentq is the poller). The plugin door delivers through Claude Code itself.
	Deliver bool `json:"deliver"`
	// Headless: the session runs the agent CLI per prompt; the message is run as a prompt and the
	// answer goes back to the chat, which closes the intent (SPEC P11).
	Headless bool `json:"headless,omitempty"`
	// Prompt is the prompt a headless intent runs, prepared by the door (masked text, the tool
	// policy's flags); nil: the text as it is.
	Prompt *PromptRequest `json:"prompt,omitempty"`
	// DeliveryQueued: the door already asked the session to deliver the message (request
	// DoorDeliveryID), in the order messages arrived; the intent only waits for the result.
	DeliveryQueued bool           `json:"delivery_queued,omitempty"`
	Policy         ReminderPolicy `json:"policy"`
	// State is carried over by continue-as-new; nil on the first run.
	State *IntentState `json:"state,omitempty"`
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
	Delivered      *time.Time `json:"delivered_at,omitempty"`
	Reminders      int        `json:"reminders"`
	LastRemindedAt *time.Time `json:"last_reminded_at,omitempty"`
	// LastAttemptAt is the last reminder attempt; FailedAttempts the current streak of failed
	// reminders (0 after a success).
	LastAttemptAt  *time.Time `json:"last_attempt_at,omitempty"`
	FailedAttempts int        `json:"failed_attempts"`
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

// IgnoreRequest gives up on an intent by hand.
type IgnoreRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ReminderText is what a reminder types into the session (SPEC I6).
func ReminderText(messageID, chatID, snippet string) string {
	return fmt.Sprintf("【未対応メッセージ】msg_id=%s chat=%s: %s", messageID, chatID, snippet)
}

// DeliveryText is how a message from the Telegram door is typed into the session. The full
// text stays on the machine; newlines are kept for the session to receive as one message.
func DeliveryText(in IntentInput) string {
	from := ""
	if in.User != "" {
		from = " from=" + in.User
	}
	return fmt.Sprintf("【新着メッセージ】msg_id=%s chat=%s%s: %s", in.MessageID, in.ChatID, from, in.Text)
}

// intent is the workflow's state machine; handlers and the main loop share it.
type intent struct {
	id    string
	in    IntentInput
	st    IntentState
	poked bool // a handler changed something the main loop must look at
	// remindNow is set by the remind-now update.
	remindNow bool
}

// IntentWorkflow records one message and keeps at it until it is answered: it delivers the
// message when asked to, reminds the session on the policy's schedule while pending, and ends
// when closed, ignored, or orphaned.
func IntentWorkflow(ctx workflow.Context, in IntentInput) (IntentState, error) {
	w := &intent{id: workflow.GetInfo(ctx).WorkflowExecution.ID, in: in}
	if in.State != nil {
		w.st = *in.State
		w.st.Runs++
		w.in.State = nil
	} else {
		w.st = IntentState{Status: StatusPending, Transitions: []Transition{{Status: StatusPending, At: in.ReceivedAt, Reason: ReasonReceived}}}
		count(ctx, metricIntents, map[string]string{"door": in.Source, "session": in.Session}, 1)
	}
	if err := w.registerHandlers(ctx); err != nil {
		return w.st, err
	}
	if err := w.publish(ctx); err != nil {
		return w.st, err
	}

	if w.in.Headless && w.st.Status == StatusPending {
		w.answerHeadless(ctx)
	}
	for w.st.Status == StatusPending || w.st.Status == StatusLinked {
		if w.historyTooLong(ctx) {
			return w.st, w.continueAsNew(ctx)
		}
		if w.st.Status == StatusLinked {
			// Linked intents get no reminders; they wait to be closed or ignored.
			if err := workflow.Await(ctx, func() bool { return w.poked }); err != nil {
				return w.st, err
			}
			w.poked = false
			continue
		}

		now := workflow.Now(ctx)
		if !now.Before(w.orphanAt()) {
			w.transition(ctx, StatusIgnored, ReasonOrphaned)
			break
		}
		if w.in.Headless {
			// No pane to remind: a failed headless answer waits to be closed by hand, or orphans.
			if _, err := workflow.AwaitWithTimeout(ctx, w.orphanAt().Sub(now), func() bool { return w.poked }); err != nil {
				return w.st, err
			}
			w.poked = false
			continue
		}
		if w.deliveryPending() && !now.Before(w.nextDeliveryAt()) {
			w.deliver(ctx)
			continue
		}
		if w.remindNow || !now.Before(w.nextReminderAt()) {
			w.remindNow = false
			w.remind(ctx)
			continue
		}

		wake := minTime(w.orphanAt(), w.nextReminderAt())
		if w.deliveryPending() {
			wake = minTime(wake, w.nextDeliveryAt())
		}
		if _, err := workflow.AwaitWithTimeout(ctx, wake.Sub(now), func() bool { return w.poked }); err != nil {
			return w.st, err
		}
		w.poked = false
	}
	// Let in-flight updates answer before the workflow completes.
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return w.st, err
	}
	return w.st, nil
}

func (w *intent) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (IntentView, error) {
		return IntentView{ID: w.id, IntentInput: w.in, IntentState: w.st}, nil
	}); err != nil {
		return err
	}
	open := func(action string) error {
		switch w.st.Status {
		case StatusPending, StatusLinked:
			return nil
		default:
			return temporal.NewApplicationError(fmt.Sprintf("intent %s is already %s; cannot %s it", w.id, w.st.Status, action), ErrTypeIntentNotOpen)
		}
	}
	handlers := []struct {
		name      string
		handler   any
		validator any
	}{
		{UpdateClose, func(ctx workflow.Context, r CloseRequest) (IntentState, error) {
			// Validators of updates that arrive together all run before their handlers, so the
			// handlers check again.
			if err := open("close"); err != nil {
				return w.st, err
			}
			reason := r.Reason
			if reason == "" {
				reason = ReasonReplied
			}
			w.transition(ctx, StatusClosed, reason)
			return w.st, nil
		}, func(r CloseRequest) error { return open("close") }},
		{UpdateLink, func(ctx workflow.Context, r LinkRequest) (IntentState, error) {
			if err := open("link"); err != nil {
				return w.st, err
			}
			w.st.Job = r.Job
			w.transition(ctx, StatusLinked, "job "+r.Job)
			return w.st, nil
		}, func(r LinkRequest) error {
			if r.Job == "" {
				return errors.New("link needs a job")
			}
			return open("link")
		}},
		{UpdateIgnore, func(ctx workflow.Context, r IgnoreRequest) (IntentState, error) {
			if err := open("ignore"); err != nil {
				return w.st, err
			}
			reason := r.Reason
			if reason == "" {
				reason = ReasonManual
			}
			w.transition(ctx, StatusIgnored, reason)
			return w.st, nil
		}, func(r IgnoreRequest) error { return open("ignore") }},
		{UpdateRemindNow, func(ctx workflow.Context) (IntentState, error) {
			w.remindNow = true
			w.poked = true
			return w.st, nil
		}, func() error {
			if w.st.Status != StatusPending {
				return temporal.NewApplicationError(fmt.Sprintf("intent %s is %s; only pending intents are reminded", w.id, w.st.Status), "IntentNotPending")
			}
			return nil
		}},
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateHookRemind, func(ctx workflow.Context, r HookRemindRequest) (bool, error) {
		now := workflow.Now(ctx)
		if w.st.Status != StatusPending || (w.st.LastHookReminderAt != nil && now.Sub(*w.st.LastHookReminderAt) < r.Every) {
			return false, nil
		}
		w.st.LastHookReminderAt = &now
		return true, nil
	}); err != nil {
		return err
	}
	for _, h := range handlers {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, h.name, h.handler, workflow.UpdateHandlerOptions{Validator: h.validator}); err != nil {
			return err
		}
	}
	return nil
}

// transition records a status change and publishes it.
func (w *intent) transition(ctx workflow.Context, status, reason string) {
	if w.st.Status == status && status != StatusLinked {
		return
	}
	w.st.Status = status
	w.st.Transitions = append(w.st.Transitions, Transition{Status: status, At: workflow.Now(ctx), Reason: reason})
	w.poked = true
	if err := w.publish(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("publish intent status", "intent", w.id, "error", err)
	}
}

// publish pushes status to search attributes (for lists and the Web UI) and the reminder
// figures to the memo (for `starter pending` without a query round trip).
func (w *intent) publish(ctx workflow.Context) error {
	err := workflow.UpsertTypedSearchAttributes(ctx,
		IntentStatusKey.ValueSet(w.st.Status),
		IntentChatKey.ValueSet(w.in.ChatID),
		IntentSessionKey.ValueSet(w.in.Session),
		IntentReceivedAtKey.ValueSet(w.in.ReceivedAt),
	)
	if err != nil {
		return fmt.Errorf("upsert search attributes: %w", err)
	}
	return w.publishMemo(ctx)
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
}

// MemoKey is the memo field holding IntentMemo.
const MemoKey = "intent"

func (w *intent) publishMemo(ctx workflow.Context) error {
	memo := IntentMemo{
		Reminders:      w.st.Reminders,
		LastRemindedAt: w.st.LastRemindedAt,
		Snippet:        redact.Snippet(w.in.Text, w.in.Policy.SnippetChars),
		MessageID:      w.in.MessageID,
		Source:         w.in.Source,
		LastPhase:      w.st.LastPhase,
		Resets:         len(w.st.Resets),
	}
	if err := workflow.UpsertMemo(ctx, map[string]any{MemoKey: memo}); err != nil {
		return fmt.Errorf("upsert memo: %w", err)
	}
	return nil
}

func (w *intent) orphanAt() time.Time { return w.in.ReceivedAt.Add(w.in.Policy.OrphanAfter) }

// nextDeliveryAt is when the message itself should be typed into the session: at once, or
// RetryAfter after a failed attempt.
func (w *intent) nextDeliveryAt() time.Time {
	if w.st.DeliveryFailures > 0 && w.st.LastDeliveryAttemptAt != nil {
		return w.st.LastDeliveryAttemptAt.Add(w.in.Policy.RetryAfter)
	}
	return w.in.ReceivedAt
}

// nextReminderAt applies SPEC I6: the first reminder FirstAfter after receipt, then one every
// RepeatEvery after the last successful one; a failed reminder is tried again RetryAfter after
// the attempt.
func (w *intent) nextReminderAt() time.Time {
	switch {
	case w.st.FailedAttempts > 0 && w.st.LastAttemptAt != nil:
		return w.st.LastAttemptAt.Add(w.in.Policy.RetryAfter)
	case w.st.LastRemindedAt == nil:
		return w.in.ReceivedAt.Add(w.in.Policy.FirstAfter)
	default:
		return w.st.LastRemindedAt.Add(w.in.Policy.RepeatEvery)
	}
}

func (w *intent) deliveryPending() bool { return w.in.Deliver && w.st.Delivered == nil }

// deliver types the message itself into the session.
func (w *intent) deliver(ctx workflow.Context) {
	err := w.askSession(ctx, KindMessage, DeliveryText(w.in), w.in.DeliveryQueued && w.st.Attempts == 0)
	now := workflow.Now(ctx)
	w.st.LastDeliveryAttemptAt = &now
	if err != nil {
		w.st.DeliveryFailures++
		w.failed(ctx, w.st.DeliveryFailures, "deliver", err)
		return
	}
	w.st.Delivered = &now
	w.st.DeliveryFailures = 0
}

// remind sends one reminder: tmux injection through the session and an ntfy push, in
// parallel. LastRemindedAt advances only when both succeeded (SPEC I6).
func (w *intent) remind(ctx workflow.Context) {
	snippet := redact.Snippet(w.in.Text, w.in.Policy.SnippetChars)
	var push workflow.Future
	if w.in.Policy.NtfyTopic != "" {
		push = workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, activities.Push{
			Topic:    w.in.Policy.NtfyTopic,
			Title:    "Telegram pending",
			Message:  fmt.Sprintf("msg_id=%s chat=%s: %s", w.in.MessageID, w.in.ChatID, snippet),
			Priority: 3,
			Tags:     []string{"envelope"},
		})
	}
	tmuxErr := w.askSession(ctx, KindReminder, ReminderText(w.in.MessageID, w.in.ChatID, snippet), false)
	var pushErr error
	if push != nil {
		pushErr = push.Get(ctx, nil)
	}
	now := workflow.Now(ctx)
	w.st.LastAttemptAt = &now
	if err := errors.Join(wrapErr("tmux", tmuxErr), wrapErr("ntfy", pushErr)); err != nil {
		count(ctx, metricRemindersFailed, map[string]string{"session": w.in.Session}, 1)
		w.st.FailedAttempts++
		w.failed(ctx, w.st.FailedAttempts, "remind", err)
		return
	}
	count(ctx, metricRemindersSent, map[string]string{"session": w.in.Session}, 1)
	w.st.Reminders++
	w.st.LastRemindedAt = &now
	w.st.FailedAttempts = 0
	w.st.LastError = ""
	if err := w.publishMemo(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("publish memo", "intent", w.id, "error", err)
	}
}

// answerHeadless runs the message as a prompt on the headless session and sends the answer to
// the chat as a reply; delivered, the intent closes (SPEC P11). A failed run leaves the intent
// pending with the error recorded.
func (w *intent) answerHeadless(ctx workflow.Context) {
	req := PromptRequest{Channel: SourceTelegram, Text: w.in.Text}
	if w.in.Prompt != nil {
		req = *w.in.Prompt
	}
	req.Key, req.ReplyTo = w.id, w.id
	if err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(w.in.Session), "", SignalPrompt, req).Get(ctx, nil); err != nil {
		w.st.LastError = fmt.Sprintf("headless session %s is not running: %v", w.in.Session, err)
		return
	}
	var done PromptRecord
	wait := w.in.Policy.OrphanAfter
	if wait <= 0 {
		wait = 24 * time.Hour
	}
	for done.FinishedAt == nil {
		var rec PromptRecord
		ok, _ := workflow.GetSignalChannel(ctx, SignalPromptDone).ReceiveWithTimeout(ctx, wait, &rec)
		if !ok {
			w.st.LastError = "no answer from the headless session in time"
			return
		}
		if rec.Key == w.id {
			done = rec
		}
	}
	if done.Status != PromptSucceeded {
		w.failed(ctx, 1, "run", errors.New(done.Error))
		return
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 2 * time.Second, MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrTypeTelegramRejected}},
	})
	if err := workflow.ExecuteActivity(actx, activities.TelegramSendName, activities.SendRequest{ChatID: w.in.ChatID, ReplyTo: w.in.MessageID, Text: done.Result}).Get(ctx, nil); err != nil {
		w.failed(ctx, 1, "answer", err)
		return
	}
	w.transition(ctx, StatusClosed, "answered by "+done.ID)
}

// failed records a failed attempt; the first failure of a streak alerts through ntfy with IDs
// and the error only, never message text (SPEC I7).
func (w *intent) failed(ctx workflow.Context, streak int, what string, err error) {
	w.st.LastError = err.Error()
	workflow.GetLogger(ctx).Warn("intent attempt failed", "intent", w.id, "session", w.in.Session, "action", what, "streak", streak, "error", err)
	if appErr, ok := asApplicationError(err); ok && appErr.Type() == ErrTypeDeliveryTimeout {
		return // a long queue is not a failure worth a push
	}
	if streak != 1 || w.in.Policy.NtfyTopic == "" {
		return
	}
	alert := activities.Push{
		Topic:    w.in.Policy.NtfyTopic,
		Title:    "intentq: " + what + " failed",
		Message:  fmt.Sprintf("intent=%s session=%s: %s", w.id, w.in.Session, err.Error()),
		Priority: 4,
		Tags:     []string{"warning"},
	}
	// Best effort: if ntfy itself is down, the next attempt tries again anyway.
	_ = workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, alert).Get(ctx, nil)
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// askSession asks the session workflow to deliver text and waits for its answer; queued means
// the door already sent this first request.
func (w *intent) askSession(ctx workflow.Context, kind, text string, queued bool) error {
	w.st.Attempts++
	req := DeliveryRequest{
		ID:      DeliveryID(w.id, w.st.Attempts),
		ReplyTo: w.id,
		Kind:    kind,
		Text:    text,
	}
	if kind == KindReminder {
		req.Since = w.in.ReceivedAt
	}
	res, err := RequestDelivery(ctx, w.in.Session, req, w.in.Policy.DeliveryTimeout, queued)
	if res.Phase != 0 {
		w.st.LastPhase = res.Phase
	}
	if res.Reset {
		w.st.Resets = append(w.st.Resets, res.At)
	}
	return err
}

// DeliveryID names an intent's n-th delivery request; the door's request is number 1.
func DeliveryID(intentID string, n int) string { return fmt.Sprintf("%s#%d", intentID, n) }

// DoorDeliveryRequest is the request a door sends the session right after starting a Deliver
// intent, so messages reach the pane in the order they arrived.
func DoorDeliveryRequest(in IntentInput) DeliveryRequest {
	id := IntentID(in.ChatID, in.MessageID)
	return DeliveryRequest{ID: DeliveryID(id, 1), ReplyTo: id, Kind: KindMessage, Text: DeliveryText(in)}
}

func (w *intent) historyTooLong(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	max := w.in.Policy.MaxHistoryEvents
	if max <= 0 {
		max = 2000
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= max
}

func (w *intent) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	next := w.in
	st := w.st
	next.State = &st
	return workflow.NewContinueAsNewError(ctx, IntentWorkflowName, next)
}

func withNtfyOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 15 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        10 * time.Second,
			MaximumAttempts:        3, // then the reminder schedule retries after RetryAfter
			NonRetryableErrorTypes: []string{activities.ErrTypeNtfyRejected, activities.ErrTypeNtfyNotConfigured},
		},
	})
}

// Metric names of intentq's counters (exported by package metrics on the worker's /metrics).
const (
	metricIntents         = "intentq_intents_recorded"
	metricRemindersSent   = "intentq_reminders_sent"
	metricRemindersFailed = "intentq_reminders_failed"
	metricDeliveries      = "intentq_deliveries"
	metricRuns            = "intentq_runs"
	metricRunCost         = "intentq_run_cost_micro_usd"
)

// count adds n to a counter; the SDK skips it while replaying.
func count(ctx workflow.Context, name string, tags map[string]string, n int64) {
	workflow.GetMetricsHandler(ctx).WithTags(tags).Counter(name).Inc(n)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
