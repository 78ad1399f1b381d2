package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/policy"
	"github.com/intentq/intentq/internal/redact"
)

// intent is the workflow's state machine; handlers and the main loop share it.
type intent struct {
	id    string
	in    IntentInput
	st    IntentState
	poked bool // a handler changed something the main loop must look at
	// remindNow is set by the remind-now update.
	remindNow bool
	// replying: a reply is being sent (one at a time).
	replying bool
	// takesBack: an ignored intent takes its undelivered message back from the session
	// (intentTakesBack); tookBack: it did; stopDelivery ends the wait for a delivery in flight.
	takesBack bool
	tookBack  bool
	// pushesWhenHostDown: a reminder push the session does not report in time goes out from
	// here when the session's host has no worker (intentPushesWhenHostDown).
	pushesWhenHostDown bool
	// withdrawsHeldPush: such a push is withdrawn from the session (intentWithdrawsHeldPush).
	withdrawsHeldPush bool
	stopDelivery      workflow.CancelFunc
	// staged is the reaction of the message's last stage (issue 36): each stage's reaction is
	// set after the one before, and the end's after them all.
	staged workflow.Future
}

// open refuses an action on an intent that has ended.
func (w *intent) open(action string) error {
	switch w.st.Status {
	case StatusPending, StatusLinked:
		return nil
	default:
		return temporal.NewApplicationError(fmt.Sprintf("intent %s is already %s; cannot %s it", w.id, w.st.Status, action), ErrTypeIntentNotOpen)
	}
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
		// The sender sees it arrived; fire and forget, it never holds up the intent.
		ack := w.react(ctx, in.AckReaction)
		if in.DeliveredReaction != "" || in.FailedReaction != "" {
			w.staged = ack // runs started before the stages end as they did
		}
	}
	if w.st.LastPushedAt == nil && w.st.LastRemindedAt != nil && w.pushes() {
		// Carried over from the combined schedule of intents before separate channels, where
		// every reminder was also pushed; kept as it was, since runs that continued as new
		// replay it.
		w.st.Pushes, w.st.LastPushedAt = w.st.Reminders, w.st.LastRemindedAt
	}
	w.takesBack = follows(ctx, w.in.Version, intentTakesBack, "take-back-ignored")
	w.pushesWhenHostDown = follows(ctx, w.in.Version, intentPushesWhenHostDown, "push-when-host-down")
	w.withdrawsHeldPush = follows(ctx, w.in.Version, intentWithdrawsHeldPush, "withdraw-held-push")
	if err := w.registerHandlers(ctx); err != nil {
		return w.st, err
	}
	if !w.startedPublished(ctx) {
		if err := w.publish(ctx); err != nil {
			return w.st, err
		}
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
		pane := w.remindNow || !now.Before(w.nextReminderAt())
		push := w.pushes() && (w.remindNow || !now.Before(w.nextPushAt()))
		if pane || push {
			asked := w.remindNow
			w.remindNow = false
			w.remindChannels(ctx, now, pane, push, asked)
			continue
		}

		wake := minTime(w.orphanAt(), w.nextReminderAt())
		if w.pushes() {
			wake = minTime(wake, w.nextPushAt())
		}
		if w.deliveryPending() {
			wake = minTime(wake, w.nextDeliveryAt())
		}
		if _, err := workflow.AwaitWithTimeout(ctx, wake.Sub(now), func() bool { return w.poked }); err != nil {
			return w.st, err
		}
		w.poked = false
	}
	if w.staged != nil {
		_ = w.staged.Get(ctx, nil) // the last stage's reaction lands last
	}
	if w.st.Status == StatusClosed && w.in.DoneReaction != "" {
		_ = w.react(ctx, w.in.DoneReaction).Get(ctx, nil) // best effort, retried by its options
	}
	if w.st.Status == StatusIgnored && w.takeBack(ctx) && w.in.CancelReaction != "" {
		_ = w.react(ctx, w.in.CancelReaction).Get(ctx, nil) // the person sees it was let go
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
	open := w.open
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
			w.takeBack(ctx) // at once: a hook or the typing may be about to hand it over
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
	closeSignals := workflow.GetSignalChannel(ctx, SignalClose)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var r CloseRequest
			closeSignals.Receive(ctx, &r)
			if open("close") == nil {
				w.transition(ctx, StatusClosed, policy.Or(r.Reason, ReasonReplied))
			}
		}
	})
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
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateReply, w.replyHandler, workflow.UpdateHandlerOptions{Validator: w.validateReply}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateEdit, w.edit, workflow.UpdateHandlerOptions{Validator: func(r EditRequest) error {
		if r.Text == "" {
			return errors.New("edit: no text")
		}
		return open("edit")
	}}); err != nil {
		return err
	}
	for _, h := range handlers {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, h.name, h.handler, workflow.UpdateHandlerOptions{Validator: h.validator}); err != nil {
			return err
		}
	}
	return nil
}

// edit puts the person's edited text in place of the message while it has not reached the agent
// (issue 35): later deliveries carry it, and the session puts it in place of the waiting one. A
// message the agent already has is not changed (Delivered: the person is told to send the
// correction as a new message).
func (w *intent) edit(ctx workflow.Context, r EditRequest) (EditResult, error) {
	if err := w.open("edit"); err != nil {
		return EditResult{}, err
	}
	if !w.in.Deliver || w.st.Delivered != nil {
		return EditResult{Delivered: w.st.Delivered != nil}, nil
	}
	w.in.Text = r.Text
	w.st.Edits++
	text := map[string]any{}
	if len(r.Text) <= MaxMemoText {
		text[MemoTextKey] = r.Text // for the hooks' lists, without a query
	}
	if err := w.upsertMemo(ctx, text); err != nil {
		workflow.GetLogger(ctx).Warn("edit: memo", "intent", w.id, "error", err)
	}
	err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(w.in.Session), "", SignalReplace, ReplaceRequest{Intent: w.id, Text: DeliveryText(w.in)}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("edit: the session not told", "intent", w.id, "error", err)
	}
	return EditResult{Replaced: true, Session: w.in.Session}, nil
}

// takeBack takes an ignored intent's requests back from its session (intentTakesBack): the
// session drops what of it still waits (the message, when it has not reached the agent; its
// reminders), and a delivery this intent waits for ends. It reports whether the message itself
// was taken back before it reached the agent.
func (w *intent) takeBack(ctx workflow.Context) bool {
	if !w.takesBack || !w.in.Deliver {
		return false
	}
	if !w.tookBack {
		w.tookBack = true
		if w.stopDelivery != nil {
			w.stopDelivery()
		}
		err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(w.in.Session), "", SignalWithdraw, WithdrawRequest{Intent: w.id}).Get(ctx, nil)
		if err != nil {
			workflow.GetLogger(ctx).Warn("take back from the session", "intent", w.id, "session", w.in.Session, "error", err)
		}
	}
	return w.st.Delivered == nil
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

// startedPublished reports whether the door's start already published what publish would at
// the first run (status, chat, session and receipt as search attributes, the memo): then each
// intent costs the server one visibility write instead of three. A continued run publishes.
func (w *intent) startedPublished(ctx workflow.Context) bool {
	if w.st.Runs > 0 {
		return false
	}
	sa := workflow.GetTypedSearchAttributes(ctx)
	status, _ := sa.GetKeyword(IntentStatusKey)
	chat, _ := sa.GetKeyword(IntentChatKey)
	session, _ := sa.GetKeyword(IntentSessionKey)
	received, _ := sa.GetTime(IntentReceivedAtKey)
	_, memo := workflow.GetInfo(ctx).Memo.GetFields()[MemoKey]
	return memo && status == w.st.Status && chat == w.in.ChatID && session == w.in.Session && received.Equal(w.in.ReceivedAt)
}

func (w *intent) publishMemo(ctx workflow.Context) error {
	return w.upsertMemo(ctx, nil)
}

// upsertMemo publishes the memo (publishMemo) and, in the same write, the other memo fields in
// more (nil: none).
func (w *intent) upsertMemo(ctx workflow.Context, more map[string]any) error {
	memo := IntentMemo{
		Reminders:      w.st.Reminders,
		LastRemindedAt: w.st.LastRemindedAt,
		Snippet:        redact.Snippet(w.in.Text, w.in.Policy.SnippetChars),
		MessageID:      w.in.MessageID,
		Source:         w.in.Source,
		LastPhase:      w.st.LastPhase,
		Resets:         len(w.st.Resets),
		Delivered:      w.st.Delivered,
	}
	fields := map[string]any{MemoKey: memo}
	for k, v := range more {
		fields[k] = v
	}
	if err := workflow.UpsertMemo(ctx, fields); err != nil {
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
	return w.nextAt(w.st.FailedAttempts, w.st.LastAttemptAt, w.st.LastRemindedAt)
}

// nextAt is when a reminder channel goes next: RetryAfter after a failed attempt, FirstAfter
// after receipt before its first success, then RepeatEvery after its last success.
func (w *intent) nextAt(failures int, lastAttempt, lastSuccess *time.Time) time.Time {
	switch {
	case failures > 0 && lastAttempt != nil:
		return lastAttempt.Add(w.in.Policy.RetryAfter)
	case lastSuccess == nil:
		return w.in.ReceivedAt.Add(w.in.Policy.FirstAfter)
	default:
		return lastSuccess.Add(w.in.Policy.RepeatEvery)
	}
}

func (w *intent) deliveryPending() bool { return w.in.Deliver && w.st.Delivered == nil }

// deliver types the message itself into the session.
func (w *intent) deliver(ctx workflow.Context) {
	dctx := ctx
	if w.takesBack {
		// Taken back meanwhile (ignored): the wait ends, and nothing failed.
		var cancel workflow.CancelFunc
		dctx, cancel = workflow.WithCancel(ctx)
		w.stopDelivery = cancel
		defer func() { w.stopDelivery = nil }()
	}
	err := w.askSession(dctx, KindMessage, DeliveryText(w.in), w.in.DeliveryQueued && w.st.Attempts == 0, false)
	if w.tookBack {
		return
	}
	now := workflow.Now(ctx)
	w.st.LastDeliveryAttemptAt = &now
	if err != nil {
		w.st.DeliveryFailures++
		w.failed(ctx, w.st.DeliveryFailures, "deliver", err)
		return
	}
	w.st.Delivered = &now
	if w.st.SeenAt == nil {
		w.st.SeenAt = &now
	}
	w.stage(ctx, w.in.DeliveredReaction)
	// Lists (and the worker's recovery at start) see the delivery without a query.
	if err := w.publishMemo(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("publish memo", "intent", w.id, "error", err)
	}
	w.st.DeliveryFailures = 0
}

// askSession asks the session workflow to deliver text and waits for its answer; queued means
// the door already sent this first request, backlog that this reminder is late because intentq
// was down or behind (it must not escalate).
func (w *intent) askSession(ctx workflow.Context, kind, text string, queued, backlog bool) error {
	w.st.Attempts++
	req := DeliveryRequest{
		ID:      DeliveryID(w.id, w.st.Attempts),
		ReplyTo: w.id,
		Kind:    kind,
		Text:    text,
	}
	if kind == KindReminder {
		req.Tick = w.st.Reminders + 1
		req.Since, req.Backlog = w.escalationSince(), backlog
	}
	res, err := RequestDelivery(ctx, w.in.Session, req, w.in.Policy.DeliveryTimeout, queued, w.passedResult)
	if res.Phase != 0 {
		w.st.LastPhase = res.Phase
	}
	if res.Reset {
		w.st.Resets = append(w.st.Resets, res.At)
	}
	return err
}

func (w *intent) historyTooLong(ctx workflow.Context) bool {
	return historyTooLong(ctx, policy.Or(w.in.Policy.MaxHistoryEvents, policy.IntentMaxHistoryEvents))
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

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// passedResult keeps a result that arrived while the intent waited for another kind (issue 24):
// the message's own result, late, while a reminder waits (a hook took and committed both). Passed
// over, the intent would ask for the message again and the agent would read it twice.
func (w *intent) passedResult(res DeliveryResult) {
	if res.Kind != KindMessage || !res.OK || w.st.Delivered != nil || !w.in.Deliver {
		return
	}
	at := res.At
	w.st.Delivered = &at
	if w.st.SeenAt == nil {
		w.st.SeenAt = &at
	}
	w.st.DeliveryFailures = 0
}
