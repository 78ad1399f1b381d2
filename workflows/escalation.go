package workflows

import (
	"strings"
	"time"

	"github.com/intentq/intentq/internal/policy"
)

// Escalation phases (SPEC N1): how hard a reminder pushes, by how long the message has gone
// unanswered.
const (
	// PhaseNudge types the reminder alone.
	PhaseNudge = 1
	// PhaseInterrupt presses Escape twice and C-c, then types the reminder.
	PhaseInterrupt = 2
	// PhaseReset sends the CLI's reset command (Claude /clear, Codex /new, Copilot C-c and a
	// relaunch), then types the reminder.
	PhaseReset = 3
)

// InterruptKeys are pressed in PhaseInterrupt.
var InterruptKeys = []string{"Escape", "Escape", "C-c"}

// EscalationPolicy is a session's escalation ladder.
type EscalationPolicy struct {
	InterruptAfter time.Duration `json:"interrupt_after"`
	ResetAfter     time.Duration `json:"reset_after"`
	ResetCooldown  time.Duration `json:"reset_cooldown"`
	// Interrupt and Reset switch phases 2 and 3 on; off phases fall back to the one below.
	Interrupt bool `json:"interrupt"`
	Reset     bool `json:"reset"`
	// StepEvery spaces escalation steps (phase 2 or 3) of one session, whichever intent's
	// reminder they come with: at most one per StepEvery (default reminders.repeat_every).
	StepEvery time.Duration `json:"step_every,omitempty"`
}

// PhaseFor is the phase a reminder for a message unanswered for age calls for, before the
// cooldown and the switches are applied.
func (p EscalationPolicy) PhaseFor(age time.Duration) int {
	switch {
	case age >= policy.Or(p.ResetAfter, policy.DefaultResetAfter):
		return PhaseReset
	case age >= policy.Or(p.InterruptAfter, policy.DefaultInterruptAfter):
		return PhaseInterrupt
	default:
		return PhaseNudge
	}
}

// Effective applies the switches and the reset cooldown: a reset at most once per cooldown,
// otherwise phase 2; a phase switched off falls back to the one below. canReset says whether
// the CLI has a reset command at all.
func (p EscalationPolicy) Effective(want int, now time.Time, lastReset *time.Time, canReset bool) int {
	phase := want
	if phase == PhaseReset {
		cooling := lastReset != nil && now.Sub(*lastReset) < policy.Or(p.ResetCooldown, policy.DefaultResetCooldown)
		if !p.Reset || !canReset || cooling {
			phase = PhaseInterrupt
		}
	}
	if phase == PhaseInterrupt && !p.Interrupt {
		phase = PhaseNudge
	}
	return phase
}

// ResetSteps is how one CLI kind is reset (SPEC N4): a slash command typed as text, or tmux keys
// (e.g. C-c), then optionally the CLI's launch command typed again.
type ResetSteps struct {
	// Command is a slash command ("/clear", "/new") or space-separated tmux keys ("C-c").
	Command string `json:"command,omitempty"`
	// Relaunch, when set, is typed (with Enter) after the keys, to start the CLI again.
	Relaunch string `json:"relaunch,omitempty"`
}

// Possible reports whether the CLI can be reset at all.
func (r ResetSteps) Possible() bool { return r.Command != "" }

// Typed reports whether Command is text to type (a slash command) rather than keys.
func (r ResetSteps) Typed() bool { return strings.HasPrefix(r.Command, "/") }

// Keys are the tmux keys of a key-style reset.
func (r ResetSteps) Keys() []string { return strings.Fields(r.Command) }
