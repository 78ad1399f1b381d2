package workflows

// The delivery protocol between an intent and its session: the intent (or, for the first
// delivery, the door) signals SignalDeliver with a DeliveryRequest; the session types it and
// answers with SignalDeliveryResult.

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/hookapi"
	"github.com/intentq/intentq/internal/policy"
)

// Signals between intents and sessions: an intent asks its session to deliver (SignalDeliver)
// and the session answers the intent (SignalDeliveryResult). SignalConfigure updates a running
// session with the worker's current config.
const (
	SignalDeliver = "deliver"
	// SignalDeliverAll queues several requests at once, in order ([]DeliveryRequest): a door's
	// batch of new messages in one signal.
	SignalDeliverAll     = "deliver-all"
	SignalDeliveryResult = "delivery-result"
	SignalConfigure      = "configure"
	// SignalAlert hands the session an Alert to push, coalesced with others.
	SignalAlert = "alert"
	// SignalWithdraw takes back an intent the person ignored or cancelled before it reached
	// the agent (WithdrawRequest): nothing hands it over afterwards.
	SignalWithdraw = "withdraw"
	// SignalReplace puts an edited text in place of a waiting message (ReplaceRequest).
	SignalReplace = "replace"
	QuerySession  = "session"
	// QueryHasMessage asks a session whether its agent has an intent's message (the intent's
	// ID; a bool): typed, handed over by a hook, or being typed.
	QueryHasMessage = "has-message"
)

// Kinds of delivery.
const (
	KindMessage  = hookapi.KindMessage
	KindReminder = hookapi.KindReminder
	KindContext  = hookapi.KindContext
)

// DeliveryRequest asks a session to type Text into its pane and tell ReplyTo how it went.
type DeliveryRequest = hookapi.DeliveryRequest

// WithdrawRequest names the intent a SignalWithdraw takes back.
type WithdrawRequest struct {
	Intent string `json:"intent"`
}

// ReplaceRequest carries the text an edited message now delivers as (SignalReplace).
type ReplaceRequest struct {
	Intent string `json:"intent"`
	Text   string `json:"text"`
}

// DeliveryResult answers a DeliveryRequest.
type DeliveryResult struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	OK        bool      `json:"ok"`
	Error     string    `json:"error,omitempty"`
	ErrorType string    `json:"error_type,omitempty"`
	At        time.Time `json:"at"`
	// Phase is the escalation phase used; Reset says the CLI was reset.
	Phase int  `json:"phase,omitempty"`
	Reset bool `json:"reset,omitempty"`
	// Via is the hook that handed the message to the agent at a turn boundary (post-tool-use,
	// stop, user-prompt-submit, session-start); empty when it was typed.
	Via string `json:"via,omitempty"`
}

// DeliveryID names an intent's n-th delivery request; the door's request is number 1.
func DeliveryID(intentID string, n int) string { return fmt.Sprintf("%s#%d", intentID, n) }

// DoorDeliveryRequest is the request a door sends the session right after starting a Deliver
// intent, so messages reach the pane in the order they arrived.
func DoorDeliveryRequest(in IntentInput) DeliveryRequest {
	id := IntentID(in.ChatID, in.MessageID)
	return DeliveryRequest{ID: DeliveryID(id, 1), ReplyTo: id, Kind: KindMessage, Text: DeliveryText(in)}
}

// ErrTypeDeliveryTimeout marks a delivery the session did not report in time (a long queue, or
// no session workflow): not a failure of the pane, so it raises no alert.
const ErrTypeDeliveryTimeout = "DeliveryTimeout"

// RequestDelivery is the intent's side of the signal pair: it signals the session (unless the
// door already queued the request) and waits up to timeout for a result of the same kind for
// this intent. A late result of an earlier attempt counts: that delivery did happen. Results of
// another kind that arrive meanwhile go to passed (nil: dropped).
func RequestDelivery(ctx workflow.Context, session string, req DeliveryRequest, timeout time.Duration, alreadyQueued bool, passed func(DeliveryResult)) (DeliveryResult, error) {
	timeout = policy.Or(timeout, policy.DeliveryTimeout)
	if !alreadyQueued {
		if err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(session), "", SignalDeliver, req).Get(ctx, nil); err != nil {
			return DeliveryResult{}, fmt.Errorf("session %s is not running: %w", session, err)
		}
	}
	res, ok := awaitResult(ctx, SignalDeliveryResult, timeout, func(r DeliveryResult) bool {
		if r.Kind != req.Kind && passed != nil {
			passed(r)
		}
		return r.Kind == req.Kind
	})
	switch {
	case !ok:
		return DeliveryResult{}, temporal.NewApplicationError(fmt.Sprintf("session %s did not report delivery %s within %s", session, req.ID, timeout), ErrTypeDeliveryTimeout)
	case !res.OK:
		return res, temporal.NewApplicationError(res.Error, res.ErrorType)
	}
	return res, nil
}

// awaitResult waits up to timeout for a result on signal that matches (others are passed
// over); ok is false when none came in time.
func awaitResult(ctx workflow.Context, signal string, timeout time.Duration, matches func(DeliveryResult) bool) (_ DeliveryResult, ok bool) {
	results := workflow.GetSignalChannel(ctx, signal)
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(timerCtx, timeout)
	for {
		var res DeliveryResult
		timedOut := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(results, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &res) })
		sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
		sel.Select(ctx)
		if timedOut {
			return DeliveryResult{}, false
		}
		if matches(res) {
			return res, true
		}
	}
}

func asApplicationError(err error) (*temporal.ApplicationError, bool) {
	var appErr *temporal.ApplicationError
	ok := errors.As(err, &appErr)
	return appErr, ok
}
