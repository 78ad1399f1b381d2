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
	if streak == 1 && what == "deliver" {
		w.stage(ctx, w.in.FailedReaction)
	}
	if streak != 1 || !w.pushes() {
		return
	}
	a := Alert{Title: "intentq: " + what + " failed",
		Message: fmt.Sprintf("intent=%s session=%s: %s; tried again in %s (starter show %s)", w.id, w.in.Session, ShortCause(err), w.in.Policy.RetryAfter, w.id),
		At:      workflow.Now(ctx)}
	if w.alertBySession(ctx, a) {
		return
	}
	// Best effort: if ntfy itself is down, the next attempt tries again anyway.
	_ = workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, alertPush(w.in.Session, w.in.Policy.NtfyTopic, a)).Get(ctx, nil)
}

// ShortCause is what a person is told of err: a sentence for the failures intentq knows, else
// the failure's own message without the chain of wrappers around it (at most 160 characters);
// the whole error stays in the worker's log and `starter show`.
func ShortCause(err error) string {
	appErr, ok := asApplicationError(err)
	if !ok {
		return "an internal error (the worker's log has it)"
	}
	switch appErr.Type() {
	case activities.ErrTypeTmuxTargetMissing:
		return "the agent's tmux pane is gone (start it: starter run-agent)"
	case activities.ErrTypeNotAgent:
		return "no agent runs in the pane (a shell is in front)"
	case ErrTypeNotSubmitted:
		return "the text stayed on the agent's input line"
	case ErrTypeHumanPane:
		return "the pane is marked as yours (human: true); nothing is typed there"
	case activities.ErrTypeNtfyRejected:
		return "ntfy refused the push"
	}
	msg := appErr.Message()
	if r := []rune(msg); len(r) > 160 {
		msg = string(r[:159]) + "…"
	}
	return msg
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
// alertNoAgent tells the person, once until an agent is back, that the session has no agent
// (why: it exited, its pane is gone, a shell shows), that its messages wait, and the fix
// (sessionNoAgentWaits).
func (s *session) alertNoAgent(ctx workflow.Context, why string) {
	workflow.GetLogger(ctx).Warn("no agent", "session", s.Config.Name, "why", why, "queued", len(s.Queue))
	if s.toldNoAgent || !s.Config.pushes() {
		return
	}
	s.toldNoAgent = true
	waiting := "nothing waits for it now"
	if n := len(s.Queue); n > 0 {
		waiting = fmt.Sprintf("%d messages wait for it", n)
	}
	s.HeldAlerts = append(s.HeldAlerts, Alert{
		Title:   "intentq: " + s.Config.Name + " has no agent running",
		Message: fmt.Sprintf("session=%s: %s; %s and reach it once it runs again. Start it: starter run-agent %s", s.Config.Name, why, waiting, s.Config.Name),
		At:      workflow.Now(ctx),
	})
}

// alertReset tells the person that intentq reset the session's agent (sessionOwedNeverEscalates):
// what it cost and how to turn it off.
func (s *session) alertReset(ctx workflow.Context, unanswered time.Duration, byPerson bool) {
	if !s.Config.pushes() {
		return
	}
	why := "escalation.reset: false turns this off"
	if byPerson {
		why = "as you allowed with /reset"
	}
	s.HeldAlerts = append(s.HeldAlerts, Alert{
		Title: "intentq: " + s.Config.Name + " was reset",
		Message: fmt.Sprintf("session=%s: a message had not reached its agent for %s; intentq reset the agent (its conversation is gone) and typed it again, %s",
			s.Config.Name, unanswered.Round(time.Second), why),
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
