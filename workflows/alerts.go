package workflows

// Pushes to the person's phone (ntfy): what raises one and what it may carry (IDs, counts and
// errors; never message text beyond the snippet, SPEC I7).

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

// Alert is a failure alert for the person: IDs, counts and errors only, never message text.
type Alert struct {
	Title   string    `json:"title"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// failed records a failed attempt; the first failure of a streak alerts through ntfy with IDs
// and the error only, never message text (SPEC I7). Intents on separate channels hand the
// alert to their session, which caps the pushes per tick.
func (w *intent) failed(ctx workflow.Context, streak int, what string, err error) {
	w.st.LastError = err.Error()
	workflow.GetLogger(ctx).Warn("intent attempt failed", "intent", w.id, "session", w.in.Session, "action", what, "streak", streak, "error", err)
	if appErr, ok := asApplicationError(err); ok && appErr.Type() == ErrTypeDeliveryTimeout {
		return // a long queue is not a failure worth a push
	}
	if streak != 1 || !w.pushes() {
		return
	}
	a := Alert{Title: "intentq: " + what + " failed", Message: fmt.Sprintf("intent=%s session=%s: %s", w.id, w.in.Session, err.Error()), At: workflow.Now(ctx)}
	if w.alertBySession(ctx, a) {
		return
	}
	// Best effort: if ntfy itself is down, the next attempt tries again anyway.
	_ = workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, alertPush(w.in.Session, w.in.Policy.NtfyTopic, a)).Get(ctx, nil)
}

// alertPush is the push of an alert to the session's topic (topic: only sessions and intents of
// older builds carry one).
func alertPush(session, topic string, a Alert) activities.Push {
	return activities.Push{Session: session, Topic: topic, Title: a.Title, Message: a.Message, Priority: 4, Tags: []string{"warning"}}
}

// takeAlerts moves alerts signalled by intents into HeldAlerts.
func (s *session) takeAlerts(ctx workflow.Context) {
	signals := workflow.GetSignalChannel(ctx, SignalAlert)
	for {
		var a Alert
		signals.Receive(ctx, &a)
		s.HeldAlerts = append(s.HeldAlerts, a)
	}
}

// pushAlerts is a session's alert desk: it pushes at most one alert per policy.AlertEvery,
// folding the alerts that arrive in between into that one, and keeps what ntfy did not take to
// push it, summarised, once ntfy answers again. It runs beside the session's delivery loop.
func (s *session) pushAlerts(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return len(s.HeldAlerts) > 0 }); err != nil {
			return
		}
		if s.LastAlertAt != nil {
			if wait := s.LastAlertAt.Add(policy.AlertEvery).Sub(workflow.Now(ctx)); wait > 0 {
				if err := workflow.Sleep(ctx, wait); err != nil {
					return
				}
			}
		}
		now := workflow.Now(ctx)
		s.LastAlertAt = &now
		n := len(s.HeldAlerts)
		if s.Config.pushes() {
			push := alertPush(s.Config.Name, s.Config.NtfyTopic, summarise(s.Config.Name, s.HeldAlerts[:n]))
			if err := workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, push).Get(ctx, nil); err != nil {
				workflow.GetLogger(ctx).Warn("alert not pushed; kept for later", "session", s.Config.Name, "held", n, "error", err)
				continue
			}
		}
		s.HeldAlerts = append([]Alert(nil), s.HeldAlerts[n:]...)
	}
}

// summarise folds alerts into one: the first in full, the count and the span of the rest.
func summarise(session string, alerts []Alert) Alert {
	if len(alerts) == 1 {
		return alerts[0]
	}
	first, last := alerts[0], alerts[len(alerts)-1]
	return Alert{
		Title: fmt.Sprintf("intentq: %d alerts for %s", len(alerts), session),
		Message: fmt.Sprintf("%d alerts from %s to %s (held while ntfy was busy or down). First: %s: %s. Last: %s: %s",
			len(alerts), first.At.UTC().Format(time.RFC3339), last.At.UTC().Format(time.RFC3339), first.Title, first.Message, last.Title, last.Message),
		At: last.At,
	}
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// alertBusy tells the person that deliveries have waited long on a busy pane: IDs and counts
// only, never message text.
// alertReset tells the person that intentq reset the session's agent (sessionOwedNeverEscalates):
// what it cost and how to turn it off.
func (s *session) alertReset(ctx workflow.Context, unanswered time.Duration) {
	if !s.Config.pushes() {
		return
	}
	s.HeldAlerts = append(s.HeldAlerts, Alert{
		Title: "intentq: " + s.Config.Name + " was reset",
		Message: fmt.Sprintf("session=%s: a message had not reached its agent for %s; intentq reset the agent (its conversation is gone) and typed it again. escalation.reset: false turns this off",
			s.Config.Name, unanswered.Round(time.Second)),
		At: workflow.Now(ctx),
	})
}

func (s *session) alertBusy(ctx workflow.Context, busyFor time.Duration, pattern string) {
	workflow.GetLogger(ctx).Warn("pane busy for long with deliveries waiting", "session", s.Config.Name, "busy_for", busyFor, "queued", len(s.Queue))
	if !s.Config.pushes() {
		return
	}
	msg := fmt.Sprintf("session=%s target=%s busy for %s (%q), %d deliveries waiting", s.Config.Name, s.Config.TmuxTarget, busyFor.Round(time.Second), pattern, len(s.Queue))
	title := "intentq: " + s.Config.Name + " busy"
	switch {
	case strings.HasPrefix(pattern, noAgentPattern):
		// The agent CLI is not in front (it exited; a shell shows): nothing is typed until
		// the person starts it again.
		title = "intentq: " + s.Config.Name + " has no agent running"
		msg = fmt.Sprintf("session=%s target=%s: %s; %d deliveries wait until the agent runs there again (starter run-agent %s)", s.Config.Name, s.Config.TmuxTarget, pattern, len(s.Queue), s.Config.Name)
	case strings.HasPrefix(pattern, "dialog") || strings.HasPrefix(pattern, "a draft"):
		// Only the person can clear a dialog or a draft.
		title = "intentq: " + s.Config.Name + " waits for you"
		msg = fmt.Sprintf("session=%s target=%s: %s for %s; %d deliveries wait until you answer it", s.Config.Name, s.Config.TmuxTarget, pattern, busyFor.Round(time.Second), len(s.Queue))
	}
	s.HeldAlerts = append(s.HeldAlerts, Alert{Title: title, Message: msg, At: workflow.Now(ctx)})
}
