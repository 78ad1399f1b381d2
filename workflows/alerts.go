package workflows

// Pushes to the person's phone (ntfy): what raises one and what it may carry (IDs, counts and
// errors; never message text beyond the snippet, SPEC I7).

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

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
