package workflows

// The person's yes to a reset (issue 35): a reset wipes the agent's conversation, so one that the
// session's config does not opt into (escalation.reset) happens only after the person allows it
// from the phone (/reset), and only for a message the agent did not take in.

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/policy"
)

// UpdateAllowReset is the person's yes to one reset of the session's agent (AllowResetResult).
const UpdateAllowReset = "allow-reset"

// AllowResetResult says what the person's yes does, in words for them.
type AllowResetResult struct {
	Allowed bool   `json:"allowed"`
	Why     string `json:"why"`
}

// allowReset takes the person's yes: the next reminder that calls for a reset resets the agent
// once. A session that resets without asking, or whose CLI cannot be reset, says so.
func (s *session) allowReset(ctx workflow.Context) (AllowResetResult, error) {
	switch {
	case !s.Config.Reset.Possible():
		return AllowResetResult{Why: "its CLI has no reset command; look at the terminal"}, nil
	case s.Config.Escalation.Reset:
		return AllowResetResult{Why: "its config already lets intentq reset it when a message is stuck (escalation.reset)"}, nil
	}
	s.ResetAllowed = true
	workflow.GetLogger(ctx).Info("the person allowed one reset", "session", s.Config.Name)
	if s.ResetAskedAt != nil {
		return AllowResetResult{Allowed: true, Why: "its context is cleared at the stuck message's next reminder, and the message typed again"}, nil
	}
	return AllowResetResult{Allowed: true, Why: "nothing is stuck now; should a message not reach it, its context is cleared once then"}, nil
}

// askReset asks the person, at most once per reset cooldown, to allow the reset that a message
// the agent did not take in calls for.
func (s *session) askReset(ctx workflow.Context, req DeliveryRequest, now time.Time) {
	cooldown := policy.Or(s.Config.Escalation.ResetCooldown, policy.DefaultResetCooldown)
	if s.ResetAskedAt != nil && now.Sub(*s.ResetAskedAt) < cooldown {
		return
	}
	s.ResetAskedAt = &now
	workflow.GetLogger(ctx).Warn("a stuck message calls for a reset: asking the person", "session", s.Config.Name, "request", req.ID)
	if !s.Config.pushes() {
		return
	}
	s.HeldAlerts = append(s.HeldAlerts, Alert{
		Title: "intentq: " + s.Config.Name + " is stuck",
		Message: fmt.Sprintf("session=%s: a message has not reached its agent for %s (%s). Send /reset in its Telegram chat to let intentq clear the agent's context once and type it again, or look at the terminal.",
			s.Config.Name, now.Sub(req.Since).Round(time.Second), req.ReplyTo),
		At: now,
	})
}
