package workflows

import (
	"errors"
	"fmt"
	"strings"
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
	// KindContext is only committed to the history, not typed: a block Claude Code injects
	// itself (the session-start hook's output).
	KindContext = "context"
)

// SessionConfig is what a session workflow needs to reach its agent, from the worker's config.
type SessionConfig struct {
	Name       string `json:"name"`
	TmuxTarget string `json:"tmux_target"`
	CLI        string `json:"cli"`
	Mode       string `json:"mode"`
	// Human marks the person's own (coordinator) pane: nothing is ever typed into it.
	Human bool `json:"human,omitempty"`
	// BusyPatterns are the CLI's busy markers (SPEC N2); BusyLines how many lines from the
	// bottom of the pane are read for them.
	BusyPatterns []string `json:"busy_patterns,omitempty"`
	BusyLines    int      `json:"busy_lines,omitempty"`
	// BusyWait is the pause before looking again at a busy pane; BusyAlertAfter how long a
	// pane may stay busy with deliveries waiting before ntfy is told.
	BusyWait       time.Duration `json:"busy_wait,omitempty"`
	BusyAlertAfter time.Duration `json:"busy_alert_after,omitempty"`
	NewlineKey     string        `json:"newline_key,omitempty"`
	NtfyTopic      string        `json:"ntfy_topic,omitempty"`
	// HistoryPath is the session's history file (SPEC H1); empty: no history is kept.
	HistoryPath string `json:"history_path,omitempty"`
	// Escalation is the session's ladder (SPEC N1) and Reset how its CLI is reset (SPEC N4).
	Escalation EscalationPolicy `json:"escalation"`
	Reset      ResetSteps       `json:"reset"`
	// InputLines is how many bottom lines hold the CLI's input line; when set, a delivery is
	// confirmed after Enter and typed again (after ClearKeys) if it is still there.
	InputLines int      `json:"input_lines,omitempty"`
	ClearKeys  []string `json:"clear_keys,omitempty"`
}

// ErrTypeNotSubmitted marks a delivery whose text stayed on the CLI's input line after Enter,
// every attempt: the CLI took Enter as a newline.
const ErrTypeNotSubmitted = "NotSubmitted"

// SubmitAttempts bounds how often a delivery is typed before it is reported failed.
const SubmitAttempts = 3

// DeliveryRequest asks a session to type Text into its pane and tell ReplyTo how it went.
type DeliveryRequest struct {
	ID      string `json:"id"`
	ReplyTo string `json:"reply_to"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	// Since is when the message being reminded of arrived; a reminder escalates by the time
	// since (SPEC N1). Zero: no escalation.
	Since time.Time `json:"since,omitempty"`
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
	// LastResetAt is when the CLI was last reset, for the cooldown; it survives restarts.
	LastResetAt *time.Time `json:"last_reset_at,omitempty"`
}

// SessionView is the session query's answer.
type SessionView struct {
	Config    SessionConfig `json:"config"`
	Queued    []string      `json:"queued"`
	Delivered int64         `json:"delivered"`
	Failed    int64         `json:"failed"`
	// BusySince is set while the pane shows the CLI at work and deliveries wait.
	BusySince *time.Time `json:"busy_since,omitempty"`
}

// Default busy handling (SPEC N2), used when the config leaves it out.
const (
	DefaultBusyWait       = 10 * time.Second
	DefaultBusyAlertAfter = 5 * time.Minute
	DefaultBusyLines      = 8
)

// ErrTypeHumanPane refuses a delivery to a pane marked as the person's own.
const ErrTypeHumanPane = "HumanPane"

// SessionWorkflow is the one place that types into a session's pane: it performs deliveries one
// at a time in arrival order, so two intents never interleave keystrokes, however many workers
// run. It never types into a busy pane: the delivery at the head of the queue waits, keeping its
// place, until the pane is idle. It lives as long as the session and continues as new to keep
// its history bounded.
func SessionWorkflow(ctx workflow.Context, in SessionInput) error {
	s := &session{SessionInput: in,
		deliverCh:   workflow.GetSignalChannel(ctx, SignalDeliver),
		configureCh: workflow.GetSignalChannel(ctx, SignalConfigure),
	}
	if err := workflow.SetQueryHandler(ctx, QuerySession, s.view); err != nil {
		return err
	}
	for {
		s.drain()
		if len(s.Queue) == 0 {
			if s.historyTooLong(ctx) {
				return workflow.NewContinueAsNewError(ctx, SessionWorkflowName, s.SessionInput)
			}
			s.waitForSignal(ctx, nil)
			continue
		}
		req := s.Queue[0]
		if req.Kind == KindContext {
			if err := s.commitToHistory(workflow.WithActivityOptions(ctx, tmuxActivityOptions), req); err != nil {
				workflow.GetLogger(ctx).Warn("context not committed", "session", s.Config.Name, "request", req.ID, "error", err)
			}
			s.Queue = s.Queue[1:]
			continue
		}
		result := s.deliver(ctx, req)
		s.Queue = s.Queue[1:]
		count(ctx, metricDeliveries, map[string]string{"session": s.Config.Name, "kind": req.Kind, "ok": fmt.Sprint(result.OK)}, 1)
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

// session is the running state of SessionWorkflow.
type session struct {
	SessionInput
	deliverCh   workflow.ReceiveChannel
	configureCh workflow.ReceiveChannel
	busySince   *time.Time
	busyAlerted bool
}

func (s *session) view() (SessionView, error) {
	v := SessionView{Config: s.Config, Delivered: s.Delivered, Failed: s.Failed, BusySince: s.busySince}
	for _, r := range s.Queue {
		v.Queued = append(v.Queued, r.ID)
	}
	return v, nil
}

// drain takes every signal that has arrived without blocking.
func (s *session) drain() {
	for s.configureCh.ReceiveAsync(&s.Config) {
	}
	for {
		var req DeliveryRequest
		if !s.deliverCh.ReceiveAsync(&req) {
			return
		}
		s.enqueue(req)
	}
}

// waitForSignal blocks until a signal arrives or timer (if any) fires, taking the signal.
func (s *session) waitForSignal(ctx workflow.Context, timer workflow.Future) {
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(s.deliverCh, func(c workflow.ReceiveChannel, _ bool) {
		var req DeliveryRequest
		c.Receive(ctx, &req)
		s.enqueue(req)
	})
	sel.AddReceive(s.configureCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &s.Config) })
	if timer != nil {
		sel.AddFuture(timer, func(workflow.Future) {})
	}
	sel.Select(ctx)
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

// deliver types one request into the pane once the pane is idle, and reports the outcome.
func (s *session) deliver(ctx workflow.Context, req DeliveryRequest) DeliveryResult {
	ctx = workflow.WithActivityOptions(ctx, tmuxActivityOptions)
	var err error
	switch {
	case s.Config.Human:
		err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s is the human's pane (%s): intentq never types into it", s.Config.Name, s.Config.TmuxTarget), ErrTypeHumanPane, nil)
	case s.Config.TmuxTarget == "":
		err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s has no tmux target", s.Config.Name), activities.ErrTypeTmuxTargetMissing, nil)
	default:
		// Sessions started before busy-awareness replay without reading the pane.
		if workflow.GetVersion(ctx, "busy-aware-delivery", workflow.DefaultVersion, 1) == 1 {
			err = s.waitUntilIdle(ctx)
		}
		phase, reset := PhaseNudge, false
		if err == nil && workflow.GetVersion(ctx, "escalation", workflow.DefaultVersion, 1) == 1 {
			phase, reset, err = s.escalate(ctx, req)
		}
		if err == nil && workflow.GetVersion(ctx, "history-commit", workflow.DefaultVersion, 1) == 1 {
			err = s.commitToHistory(ctx, req)
		}
		if err == nil {
			err = s.submit(ctx, req.Text)
		}
		res := s.result(ctx, req, err)
		res.Phase, res.Reset = phase, reset
		return res
	}
	return s.result(ctx, req, err)
}

// submit types text and presses Enter, and when the CLI's input line is known, checks that the
// text left it; if not, it clears the line and types again, up to SubmitAttempts times.
func (s *session) submit(ctx workflow.Context, text string) error {
	check := s.Config.InputLines > 0 && workflow.GetVersion(ctx, "confirm-submit", workflow.DefaultVersion, 1) == 1
	for attempt := 1; ; attempt++ {
		req := activities.InjectRequest{Target: s.Config.TmuxTarget, Text: text, NewlineKey: s.Config.NewlineKey}
		if check {
			req.CheckLines, req.CheckDelay = s.Config.InputLines, 500*time.Millisecond
		}
		var res activities.InjectResult
		if err := workflow.ExecuteActivity(ctx, activities.TmuxInjectName, req).Get(ctx, &res); err != nil {
			return err
		}
		if !check || !StillOnInputLine(res.Bottom, text) {
			return nil
		}
		if attempt == SubmitAttempts {
			return temporal.NewApplicationError(fmt.Sprintf("session %s: the text stayed on the input line after %d tries (the CLI took Enter as a newline?)", s.Config.Name, attempt), ErrTypeNotSubmitted)
		}
		workflow.GetLogger(ctx).Warn("delivery not submitted, clearing the input line", "session", s.Config.Name, "attempt", attempt)
		if err := s.pressKeys(ctx, orDefaultKeys(s.Config.ClearKeys)); err != nil {
			return err
		}
	}
}

func orDefaultKeys(keys []string) []string {
	if len(keys) == 0 {
		return []string{"C-u"}
	}
	return keys
}

// StillOnInputLine reports whether the input-line area of a pane still shows the end of text:
// the last non-blank line of text, up to its last 24 characters, trimmed.
func StillOnInputLine(bottom, text string) bool {
	lines := strings.Split(strings.TrimRight(text, " \n"), "\n")
	tail := []rune(strings.TrimSpace(lines[len(lines)-1]))
	if len(tail) > 24 {
		tail = tail[len(tail)-24:]
	}
	return len(tail) > 0 && strings.Contains(bottom, string(tail))
}

// typeText types text into the pane and presses Enter.
func (s *session) typeText(ctx workflow.Context, text string) error {
	return workflow.ExecuteActivity(ctx, activities.TmuxInjectName, activities.InjectRequest{
		Target: s.Config.TmuxTarget, Text: text, NewlineKey: s.Config.NewlineKey,
	}).Get(ctx, nil)
}

// escalate pushes as hard as the reminder's age calls for (SPEC N1) before the nudge is typed:
// Escape twice and C-c, or the CLI's reset at most once per cooldown. A reset goes only to an
// idle pane (waitUntilIdle ran just before) and the pane must be idle again before the nudge.
func (s *session) escalate(ctx workflow.Context, req DeliveryRequest) (phase int, reset bool, err error) {
	if req.Kind != KindReminder || req.Since.IsZero() {
		return PhaseNudge, false, nil
	}
	now := workflow.Now(ctx)
	esc := s.Config.Escalation
	phase = esc.Effective(esc.PhaseFor(now.Sub(req.Since)), now, s.LastResetAt, s.Config.Reset.Possible())
	switch phase {
	case PhaseInterrupt:
		err = s.pressKeys(ctx, InterruptKeys)
	case PhaseReset:
		if s.Config.Reset.Typed() {
			err = s.typeText(ctx, s.Config.Reset.Command)
		} else {
			err = s.pressKeys(ctx, s.Config.Reset.Keys())
		}
		if err == nil && s.Config.Reset.Relaunch != "" {
			_ = workflow.Sleep(ctx, time.Second)
			err = s.typeText(ctx, s.Config.Reset.Relaunch)
		}
		if err == nil {
			s.LastResetAt = &now
			reset = true
			workflow.GetLogger(ctx).Warn("session reset", "session", s.Config.Name, "request", req.ID)
			_ = workflow.Sleep(ctx, 2*time.Second)
			err = s.waitUntilIdle(ctx)
		}
	}
	return phase, reset, err
}

func (s *session) pressKeys(ctx workflow.Context, keys []string) error {
	return workflow.ExecuteActivity(ctx, activities.TmuxSendKeysName, activities.KeysRequest{
		Target: s.Config.TmuxTarget, Keys: keys, Delay: 200 * time.Millisecond,
	}).Get(ctx, nil)
}

// result is the answer to req after err.
func (s *session) result(ctx workflow.Context, req DeliveryRequest, err error) DeliveryResult {
	res := DeliveryResult{ID: req.ID, Kind: req.Kind, OK: err == nil, At: workflow.Now(ctx)}
	if err != nil {
		res.Error = err.Error()
		if appErr, ok := asApplicationError(err); ok {
			res.ErrorType = appErr.Type()
		}
	}
	return res
}

var tmuxActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    5 * time.Second,
		// A few quick tries; the intent's reminder schedule retries after that.
		MaximumAttempts:        3,
		NonRetryableErrorTypes: []string{activities.ErrTypeTmuxTargetMissing, activities.ErrTypeEmptyText, activities.ErrTypeInvalidText},
	},
}

// waitUntilIdle reads the pane until it shows none of the CLI's busy patterns (SPEC N2). While
// it waits, new requests queue behind this one; after BusyAlertAfter the person is told once
// through ntfy rather than left to wonder why nothing arrives.
func (s *session) waitUntilIdle(ctx workflow.Context) error {
	defer func() { s.busySince, s.busyAlerted = nil, false }()
	for {
		var pane string
		err := workflow.ExecuteActivity(ctx, activities.TmuxCaptureName, activities.CaptureRequest{
			Target: s.Config.TmuxTarget, Lines: orDefault(s.Config.BusyLines, DefaultBusyLines),
		}).Get(ctx, &pane)
		if err != nil {
			return err
		}
		pattern, busy := Busy(pane, s.Config.BusyPatterns)
		if !busy {
			return nil
		}
		now := workflow.Now(ctx)
		if s.busySince == nil {
			s.busySince = &now
			workflow.GetLogger(ctx).Info("pane busy, delivery waits", "session", s.Config.Name, "pattern", pattern, "queued", len(s.Queue))
		}
		if !s.busyAlerted && now.Sub(*s.busySince) >= orDefault(s.Config.BusyAlertAfter, DefaultBusyAlertAfter) {
			s.busyAlerted = true
			s.alertBusy(ctx, now.Sub(*s.busySince), pattern)
		}
		timer := workflow.NewTimer(ctx, orDefault(s.Config.BusyWait, DefaultBusyWait))
		for !timer.IsReady() {
			s.waitForSignal(ctx, timer)
		}
	}
}

// commitToHistory appends what is about to be typed to the session's history, before it is
// typed (SPEC H1-H3): exactly once per request, whatever the retries.
func (s *session) commitToHistory(ctx workflow.Context, req DeliveryRequest) error {
	if s.Config.HistoryPath == "" {
		return nil
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5,
		},
	})
	entry := activities.HistoryEntry{Time: workflow.Now(ctx), Session: s.Config.Name, Kind: req.Kind, ID: req.ID, Text: req.Text}
	if err := workflow.ExecuteActivity(ctx, activities.HistoryAppendName, activities.AppendRequest{Path: s.Config.HistoryPath, Entry: entry}).Get(ctx, nil); err != nil {
		return fmt.Errorf("commit to history %s: %w", s.Config.HistoryPath, err)
	}
	return nil
}

// alertBusy tells the person that deliveries have waited long on a busy pane: IDs and counts
// only, never message text.
func (s *session) alertBusy(ctx workflow.Context, busyFor time.Duration, pattern string) {
	workflow.GetLogger(ctx).Warn("pane busy for long with deliveries waiting", "session", s.Config.Name, "busy_for", busyFor, "queued", len(s.Queue))
	if s.Config.NtfyTopic == "" {
		return
	}
	push := activities.Push{
		Topic:    s.Config.NtfyTopic,
		Title:    "intentq: " + s.Config.Name + " busy",
		Message:  fmt.Sprintf("session=%s target=%s busy for %s (%q), %d deliveries waiting", s.Config.Name, s.Config.TmuxTarget, busyFor.Round(time.Second), pattern, len(s.Queue)),
		Priority: 4,
		Tags:     []string{"hourglass"},
	}
	if err := workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, push).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("busy alert not sent", "session", s.Config.Name, "error", err)
	}
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
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
func RequestDelivery(ctx workflow.Context, session string, req DeliveryRequest, timeout time.Duration, alreadyQueued bool) (DeliveryResult, error) {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	if !alreadyQueued {
		if err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(session), "", SignalDeliver, req).Get(ctx, nil); err != nil {
			return DeliveryResult{}, fmt.Errorf("session %s is not running: %w", session, err)
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
			return DeliveryResult{}, temporal.NewApplicationError(fmt.Sprintf("session %s did not report delivery %s within %s", session, req.ID, timeout), ErrTypeDeliveryTimeout)
		}
		if res.Kind != req.Kind {
			continue
		}
		if !res.OK {
			return res, temporal.NewApplicationError(res.Error, res.ErrorType)
		}
		return res, nil
	}
}

func asApplicationError(err error) (*temporal.ApplicationError, bool) {
	var appErr *temporal.ApplicationError
	ok := errors.As(err, &appErr)
	return appErr, ok
}
