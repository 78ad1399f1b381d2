package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

// Signals between intents and sessions: an intent asks its session to deliver (SignalDeliver)
// and the session answers the intent (SignalDeliveryResult). SignalConfigure updates a running
// session with the worker's current config.
const (
	SignalDeliver        = "deliver"
	SignalDeliveryResult = "delivery-result"
	SignalConfigure      = "configure"
	QuerySession         = "session"
)

// SessionWorkflowName is the registered name of SessionWorkflow.
const SessionWorkflowName = "Session"

// Kinds of delivery.
const (
	KindMessage  = "message"
	KindReminder = "reminder"
)

// SessionConfig is what a session workflow needs to reach its agent.
type SessionConfig struct {
	Name       string `json:"name"`
	TmuxTarget string `json:"tmux_target"`
	CLI        string `json:"cli"`
	Mode       string `json:"mode"`
}

// DeliveryRequest asks a session to type Text into its pane and tell ReplyTo how it went.
type DeliveryRequest struct {
	ID      string `json:"id"`
	ReplyTo string `json:"reply_to"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
}

// DeliveryResult answers a DeliveryRequest.
type DeliveryResult struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	OK        bool      `json:"ok"`
	Error     string    `json:"error,omitempty"`
	ErrorType string    `json:"error_type,omitempty"`
	At        time.Time `json:"at"`
}

// SessionInput starts (or continues) a session workflow.
type SessionInput struct {
	Config SessionConfig `json:"config"`
	// Queue holds requests not yet delivered, carried over by continue-as-new.
	Queue []DeliveryRequest `json:"queue,omitempty"`
	// Delivered and Failed count outcomes over the session's life.
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
	// MaxHistoryEvents triggers continue-as-new; 0 means the default.
	MaxHistoryEvents int `json:"max_history_events,omitempty"`
}

// SessionView is the session query's answer.
type SessionView struct {
	Config    SessionConfig `json:"config"`
	Queued    []string      `json:"queued"`
	Delivered int64         `json:"delivered"`
	Failed    int64         `json:"failed"`
}

// SessionWorkflow is the one place that types into a session's pane: it performs deliveries one
// at a time in arrival order, so two intents never interleave keystrokes, however many workers
// run. It lives as long as the session and continues as new to keep its history bounded.
func SessionWorkflow(ctx workflow.Context, in SessionInput) error {
	s := in
	deliverCh := workflow.GetSignalChannel(ctx, SignalDeliver)
	configureCh := workflow.GetSignalChannel(ctx, SignalConfigure)
	if err := workflow.SetQueryHandler(ctx, QuerySession, func() (SessionView, error) {
		v := SessionView{Config: s.Config, Delivered: s.Delivered, Failed: s.Failed}
		for _, r := range s.Queue {
			v.Queued = append(v.Queued, r.ID)
		}
		return v, nil
	}); err != nil {
		return err
	}
	receive := func(c workflow.ReceiveChannel, more bool) {
		if c == configureCh {
			var cfg SessionConfig
			c.Receive(ctx, &cfg)
			s.Config = cfg
			return
		}
		var req DeliveryRequest
		c.Receive(ctx, &req)
		s.enqueue(req)
	}
	drain := func() {
		for configureCh.ReceiveAsync(&s.Config) {
		}
		var req DeliveryRequest
		for deliverCh.ReceiveAsync(&req) {
			s.enqueue(req)
			req = DeliveryRequest{}
		}
	}

	for {
		drain()
		if len(s.Queue) == 0 {
			if s.historyTooLong(ctx) {
				drain()
				if len(s.Queue) == 0 {
					return workflow.NewContinueAsNewError(ctx, SessionWorkflowName, s)
				}
				continue
			}
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(deliverCh, receive)
			sel.AddReceive(configureCh, receive)
			sel.Select(ctx)
			continue
		}
		req := s.Queue[0]
		s.Queue = s.Queue[1:]
		result := s.deliver(ctx, req)
		if result.OK {
			s.Delivered++
		} else {
			s.Failed++
		}
		// The intent may have ended meanwhile; then nobody needs the answer.
		if err := workflow.SignalExternalWorkflow(ctx, req.ReplyTo, "", SignalDeliveryResult, result).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Info("delivery result not taken", "session", s.Config.Name, "request", req.ID, "error", err)
		}
	}
}

// enqueue adds a request unless the same intent already waits for a delivery of the same kind
// (an intent that timed out in a long queue and asked again): the waiting one answers both.
func (s *SessionInput) enqueue(req DeliveryRequest) {
	for _, q := range s.Queue {
		if q.ReplyTo == req.ReplyTo && q.Kind == req.Kind {
			return
		}
	}
	s.Queue = append(s.Queue, req)
}

func (s *SessionInput) deliver(ctx workflow.Context, req DeliveryRequest) DeliveryResult {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
			// A few quick tries; the intent's reminder schedule retries after that.
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeTmuxTargetMissing, activities.ErrTypeEmptyText},
		},
	})
	var err error
	if s.Config.TmuxTarget == "" {
		err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s has no tmux target", s.Config.Name), activities.ErrTypeTmuxTargetMissing, nil)
	} else {
		err = workflow.ExecuteActivity(ctx, activities.TmuxInjectName, activities.InjectRequest{Target: s.Config.TmuxTarget, Text: req.Text}).Get(ctx, nil)
	}
	res := DeliveryResult{ID: req.ID, Kind: req.Kind, OK: err == nil, At: workflow.Now(ctx)}
	if err != nil {
		res.Error = err.Error()
		if appErr, ok := asApplicationError(err); ok {
			res.ErrorType = appErr.Type()
		}
	}
	return res
}

func (s *SessionInput) historyTooLong(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	max := s.MaxHistoryEvents
	if max <= 0 {
		max = 5000
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= max
}

// ErrTypeDeliveryTimeout marks a delivery the session did not report in time (a long queue, or
// no session workflow): not a failure of the pane, so it raises no alert.
const ErrTypeDeliveryTimeout = "DeliveryTimeout"

// RequestDelivery is the intent's side of the signal pair: it signals the session (unless the
// door already queued the request) and waits up to timeout for a result of the same kind for
// this intent. A late result of an earlier attempt counts: that delivery did happen.
func RequestDelivery(ctx workflow.Context, session string, req DeliveryRequest, timeout time.Duration, alreadyQueued bool) error {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	if !alreadyQueued {
		if err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(session), "", SignalDeliver, req).Get(ctx, nil); err != nil {
			return fmt.Errorf("session %s is not running: %w", session, err)
		}
	}
	results := workflow.GetSignalChannel(ctx, SignalDeliveryResult)
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
			return temporal.NewApplicationError(fmt.Sprintf("session %s did not report delivery %s within %s", session, req.ID, timeout), ErrTypeDeliveryTimeout)
		}
		if res.Kind != req.Kind {
			continue
		}
		if !res.OK {
			return temporal.NewApplicationError(res.Error, res.ErrorType)
		}
		return nil
	}
}

func asApplicationError(err error) (*temporal.ApplicationError, bool) {
	var appErr *temporal.ApplicationError
	ok := errors.As(err, &appErr)
	return appErr, ok
}
