package workflows

// How a session types into its pane: wait until the pane is idle (SPEC N2), escalate (N1),
// commit to the history (H1), type literally and press Enter (N3), confirm the submit.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

// typable refuses the person's own pane and a session without a pane.
func (s *session) typable() error {
	switch {
	case s.Config.Human:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s is the human's pane (%s): intentq never types into it", s.Config.Name, s.Config.TmuxTarget), ErrTypeHumanPane, nil)
	case s.Config.TmuxTarget == "":
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s has no tmux target", s.Config.Name), activities.ErrTypeTmuxTargetMissing, nil)
	}
	return nil
}

// noAgentPattern starts the wait reason of a pane whose foreground program is not the CLI;
// noAgentGrace is how long it may last before the person is told.
const (
	noAgentPattern = "no agent"
	noAgentGrace   = 10 * time.Second
)

// errContinueAsNew ends a wait so that the main loop continues as new.
var errContinueAsNew = errors.New("continue as new")

// waitUntilIdle waits until the agent may be typed into (SPEC N2): its hooks do not say it
// works or waits for the person, and the pane shows none of the CLI's busy patterns, no dialog
// and no draft. While it waits, new requests queue behind req, hooks may take req (errTaken)
// and commit what they took; after BusyAlertAfter the person is told once through ntfy rather
// than left to wonder why nothing arrives.
func (s *session) waitUntilIdle(ctx workflow.Context, req DeliveryRequest) error {
	defer func() { s.busySince, s.busyAlerted, s.busyWhy = nil, false, "" }()
	busy := s.Config.Busy.OrDefault()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.settleOffers(ctx)
		s.answerRepeats(ctx)
		if s.typing != req.ID && !s.queued(req.ID) {
			return errTaken
		}
		if s.queued(req.ID) && s.mayContinueAsNew(ctx) {
			// A pane busy for hours (a dialog left open overnight) must not grow the history
			// to its limit: the main loop continues as new, the request keeps its place.
			return errContinueAsNew
		}
		pattern, working := s.agentBusy(workflow.Now(ctx))
		if !working {
			pane, err := s.capture(ctx, busy.BusyLines)
			if appErr, ok := asApplicationError(err); ok && appErr.Type() == activities.ErrTypeNotAgent {
				// The CLI is not in front (it exited and a shell shows): wait for it, as for
				// a dialog, and tell the person at once.
				pattern, working = noAgentPattern+": "+appErr.Message(), true
			} else if ok && appErr.Type() == activities.ErrTypeTmuxTargetMissing && s.noAgentWaits {
				// The pane is gone (tmux closed it with the agent): the same.
				pattern, working = noAgentPattern+": its pane "+s.Config.TmuxTarget+" is gone", true
			} else if err != nil {
				return err
			} else {
				pattern, working = Busy(pane, s.Config.BusyPatterns)
				if !working {
					pattern, working = Blocked(pane, s.Config.DialogPatterns, s.Config.InputPrompt, s.Config.InputPlaceholders...)
				}
			}
		}
		if !working {
			s.toldNoAgent = false // an agent is there: a later absence is told again
			return nil
		}
		now := workflow.Now(ctx)
		s.busyWhy = pattern
		if s.busySince == nil {
			s.busySince = &now
			workflow.GetLogger(ctx).Info("pane busy, delivery waits", "session", s.Config.Name, "pattern", pattern, "queued", len(s.Queue))
		}
		after := busy.BusyAlertAfter
		if strings.HasPrefix(pattern, "dialog") || strings.HasPrefix(pattern, "a draft") {
			after = busy.WaitsForYouAfter
		}
		if strings.HasPrefix(pattern, noAgentPattern) {
			// Told soon, but not for the moment a starting agent's shell is still in front.
			after = noAgentGrace
		}
		if !s.busyAlerted && now.Sub(*s.busySince) >= after {
			s.busyAlerted = true
			if strings.HasPrefix(pattern, noAgentPattern) && s.noAgentWaits {
				s.alertNoAgent(ctx, strings.TrimPrefix(pattern, noAgentPattern+": "))
			} else {
				s.alertBusy(ctx, now.Sub(*s.busySince), pattern)
			}
		}
		// The pane keeps the session waiting: what it typed before is told once due.
		s.tellHeldDue(ctx)
		// What waits is offered to the agent's next hook through the desk, then the session
		// waits for the next look, or for the agent's hooks to say something (a Stop is the
		// moment to type; a take may have handed req over).
		s.standOffer(ctx)
		timerCtx, cancel := workflow.WithCancel(ctx)
		wait := busy.BusyWait
		if s.relooksAfterStop && s.screenLags(now, pattern) {
			wait = policy.ScreenRelook
		}
		timer := workflow.NewTimer(timerCtx, wait)
		for !timer.IsReady() {
			if s.waitForSignal(ctx, timer) && s.Agent != nil || s.restand {
				break
			}
		}
		cancel()
		s.restand = false
	}
}

// escalate pushes as hard as the reminder's age calls for (SPEC N1) before the nudge is typed:
// Escape twice and C-c, or the CLI's reset at most once per cooldown. A reset goes only to an
// idle pane (waitUntilIdle ran just before) and the pane must be idle again before the nudge.
func (s *session) escalate(ctx workflow.Context, req DeliveryRequest) (phase int, reset bool, err error) {
	if req.Kind != KindReminder || req.Since.IsZero() {
		return PhaseNudge, false, nil
	}
	now := workflow.Now(ctx)
	if s.owedNudgeOnly && s.agentHas(req) {
		return PhaseNudge, false, nil // not stuck: it owes an answer, and is reminded
	}
	esc := s.Config.Escalation
	want := esc.PhaseFor(now.Sub(req.Since))
	allowed := false
	if s.resetAsks && want == PhaseReset && !esc.Reset && s.Config.Reset.Possible() && !req.Backlog {
		// Not opted in: the person says yes (allowed once), or is asked.
		if allowed = s.ResetAllowed; allowed {
			esc.Reset = true
		} else {
			s.askReset(ctx, req, now)
		}
	}
	phase = esc.Effective(want, now, s.LastResetAt, s.Config.Reset.Possible())
	// Escalation is the session's, not each reminder's: one step per session per tick at most,
	// and a reminder that is late because intentq itself was down or behind (a backlog) is not
	// the agent ignoring it.
	if phase > PhaseNudge {
		spacing := policy.Or(esc.StepEvery, policy.DefaultReminders.RepeatEvery)
		if req.Backlog || (s.LastEscalationAt != nil && now.Sub(*s.LastEscalationAt) < spacing) {
			phase = PhaseNudge
		} else {
			s.LastEscalationAt = &now
		}
	}
	if phase == PhaseReset {
		// The agent's next context lists what it had from the intents it answers to: they
		// learn of their deliveries before it is wiped.
		s.tellHeld(ctx)
	}
	switch phase {
	case PhaseInterrupt:
		keys := InterruptKeys
		if len(s.Config.InterruptKeys) > 0 {
			keys = s.Config.InterruptKeys
		}
		err = s.pressKeys(ctx, keys)
	case PhaseReset:
		if s.Config.Reset.Typed() {
			starts := s.sessionStarts
			err = s.typeText(ctx, s.Config.Reset.Command)
			// Where hooks report, the agent's SessionStart (a new context) confirms the reset: at
			// the command, or (Codex) with the prompt typed next (confirmReset).
			if err == nil && s.Agent != nil {
				if s.Config.SessionStartAtPrompt {
					s.resetStarts = &starts
				} else {
					s.confirmed(ctx, s.awaitAgent(ctx, func() bool { return s.sessionStarts > starts }))
				}
			}
		} else {
			err = s.pressKeys(ctx, s.Config.Reset.Keys())
		}
		if err == nil && s.Config.Reset.Relaunch != "" {
			_ = workflow.Sleep(ctx, time.Second)
			// Only into the shell the pane shows now, and only the launch line the worker's
			// config names (the activity takes neither from here).
			err = workflow.ExecuteActivity(ctx, activities.TmuxInjectName, activities.InjectRequest{
				Session: s.Config.Name, Relaunch: true, Text: s.Config.Reset.Relaunch,
			}).Get(ctx, nil)
		}
		if err == nil {
			s.LastResetAt = &now
			reset = true
			if allowed {
				s.ResetAllowed = false // the person's yes was for one reset
			}
			workflow.GetLogger(ctx).Warn("session reset", "session", s.Config.Name, "request", req.ID)
			if s.owedNudgeOnly {
				s.alertReset(ctx, now.Sub(req.Since), allowed)
			}
			_ = workflow.Sleep(ctx, 2*time.Second)
			err = s.waitUntilIdle(ctx, req)
		}
	}
	return phase, reset, err
}

// agentHas reports whether the agent's own hooks confirmed it has the message req reminds of:
// its hooks report (an agent that confirms what it takes in), and the message is in its context
// (typed and receipted, or handed over by a hook).
func (s *session) agentHas(req DeliveryRequest) bool {
	return s.Agent != nil && s.inContext(DeliveryRequest{Kind: KindMessage, ReplyTo: req.ReplyTo})
}

// confirmReset, after the prompt typed after a reset whose SessionStart comes with the next
// prompt (SessionStartAtPrompt), awaits that SessionStart; err is the typing's outcome (nothing
// to await when it failed).
func (s *session) confirmReset(ctx workflow.Context, err error) {
	if s.resetStarts == nil {
		return
	}
	starts := *s.resetStarts
	s.resetStarts = nil
	if err == nil {
		s.confirmed(ctx, s.awaitAgent(ctx, func() bool { return s.sessionStarts > starts }))
	}
}

// confirmed logs whether the agent's SessionStart confirmed a reset.
func (s *session) confirmed(ctx workflow.Context, ok bool) {
	if ok {
		workflow.GetLogger(ctx).Info("reset confirmed by the agent's SessionStart hook", "session", s.Config.Name, "command", s.Config.Reset.Command)
	} else {
		workflow.GetLogger(ctx).Warn("reset not confirmed by the agent's SessionStart hook", "session", s.Config.Name, "command", s.Config.Reset.Command)
	}
}

// commitToHistory appends what is about to be typed to the session's history, before it is
// typed (SPEC H1-H3): exactly once per request, whatever the retries.
func (s *session) commitToHistory(ctx workflow.Context, req DeliveryRequest) error {
	if s.Config.HistoryPath == "" {
		return nil
	}
	ctx = workflow.WithActivityOptions(ctx, historyActivityOptions)
	entry := activities.HistoryEntry{Time: workflow.Now(ctx), Session: s.Config.Name, Kind: req.Kind, ID: req.ID, Text: req.Text}
	if err := workflow.ExecuteActivity(ctx, activities.HistoryAppendName, activities.AppendRequest{Session: s.Config.Name, Entry: entry}).Get(ctx, nil); err != nil {
		return fmt.Errorf("commit to history %s: %w", s.Config.HistoryPath, err)
	}
	return nil
}

// submit types the request's text and presses Enter, and confirms the submit: by the agent's
// UserPromptSubmit receipt where its hooks report, else (or when no receipt comes within
// policy.ReceiptWait) by the CLI's input line, when known, being free of the text; if it is
// not, it clears the line and types again, up to SubmitAttempts times.
//
// content names what is typed (the requests it carries, ContentKey): the typed-once marker is
// keyed by it, so a block headed by a request typed before in another block is still typed.
func (s *session) submit(ctx workflow.Context, dreq DeliveryRequest, content string) error {
	text := dreq.Text
	check := s.Config.InputLines > 0
	// Hooks report for this agent: its receipt confirms (only set after a hook has fired, or for
	// a CLI whose first hook comes with the first prompt).
	receipt := dreq.ReplyTo != "" && (s.Agent != nil ||
		s.Config.SessionStartAtPrompt && follows(ctx, s.Version, sessionReceiptAtFirstPrompt, "receipt-at-first-prompt"))
	for attempt := 1; ; attempt++ {
		req := activities.InjectRequest{Session: s.Config.Name, Text: text, NewlineKey: s.Config.NewlineKey, Key: fmt.Sprintf("%s/%s/try-%d", s.Config.Name, content, attempt)}
		if check && !receipt {
			req.CheckLines, req.CheckDelay = s.Config.InputLines, 500*time.Millisecond
		}
		var res activities.InjectResult
		if err := workflow.ExecuteActivity(ctx, activities.TmuxInjectName, req).Get(ctx, &res); err != nil {
			if dreq.ReplyTo != "" && s.noAgentWaits && s.awaitReceipt(ctx, dreq.ReplyTo) {
				// The agent's receipt says it took the prompt in, whatever failed in the pane
				// after (its pane closed right after Enter): delivered, not to be typed again.
				workflow.GetLogger(ctx).Warn("typing failed after the agent took the prompt in", "session", s.Config.Name, "request", dreq.ID, "error", err)
				return nil
			}
			return err
		}
		if receipt {
			if s.awaitReceipt(ctx, dreq.ReplyTo) {
				return nil
			}
			workflow.GetLogger(ctx).Warn("no receipt from the agent's hooks; reading its input line", "session", s.Config.Name, "request", dreq.ID)
			if !check {
				return nil
			}
			var err error
			if res.Bottom, err = s.capture(ctx, s.Config.InputLines); err != nil {
				return err
			}
		}
		if check && !receipt && s.relooksUnconfirmed && !s.notSubmitted(res.Bottom, text) {
			// Nothing but the screen confirms it: read once more, as a loaded CLI may draw the
			// paste after it took the Enter (sessionRelooksUnconfirmed).
			var err error
			if res.Bottom, err = s.lookAgain(ctx); err != nil {
				return err
			}
		}
		if !check || !s.notSubmitted(res.Bottom, text) {
			return nil
		}
		// A loaded machine: the pane may not have taken the Enter in yet. Look again before
		// clearing and typing anew, which would type the text twice if it did.
		for look := 0; look < submitLooks && s.notSubmitted(res.Bottom, text); look++ {
			var err error
			if res.Bottom, err = s.lookAgain(ctx); err != nil {
				return err
			}
		}
		if !s.notSubmitted(res.Bottom, text) {
			return nil
		}
		if attempt == policy.SubmitAttempts {
			if s.clearsUnsubmitted {
				if err := s.pressKeys(ctx, orDefaultKeys(s.Config.ClearKeys)); err != nil {
					workflow.GetLogger(ctx).Warn("the unsubmitted text not cleared from the input line", "session", s.Config.Name, "request", dreq.ID, "error", err)
				}
			}
			return temporal.NewApplicationError(fmt.Sprintf("session %s: the text stayed on the input line after %d tries (the CLI took Enter as a newline?)", s.Config.Name, attempt), ErrTypeNotSubmitted)
		}
		workflow.GetLogger(ctx).Warn("delivery not submitted, clearing the input line", "session", s.Config.Name, "attempt", attempt)
		if err := s.pressKeys(ctx, orDefaultKeys(s.Config.ClearKeys)); err != nil {
			return err
		}
	}
}

// lookAgain reads the bottom lines again, a second later.
func (s *session) lookAgain(ctx workflow.Context) (string, error) {
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return "", err
	}
	return s.capture(ctx, s.Config.InputLines)
}

// submitLooks is how many more times (a second apart) the input line is read before a text
// still on it counts as not submitted.
const submitLooks = 3

// notSubmitted reads the bottom lines after Enter: where the CLI's input prompt is known, only
// the input line counts (the text elsewhere on the screen, in the transcript or a program's
// echo, says nothing, and a draft the person began since is not ours to clear); otherwise, as
// before, the end of the text still showing in the bottom lines.
func (s *session) notSubmitted(bottom, text string) bool {
	if s.Config.InputPrompt != "" {
		line, ok := InputLine(bottom, s.Config.InputPrompt)
		return ok && StillOnInputLine(line, text)
	}
	return StillOnInputLine(bottom, text)
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

// capture reads the bottom lines of the session's pane (ctx carries the activity options).
func (s *session) capture(ctx workflow.Context, lines int) (string, error) {
	var pane string
	err := workflow.ExecuteActivity(ctx, activities.TmuxCaptureName, activities.CaptureRequest{Session: s.Config.Name, Lines: lines}).Get(ctx, &pane)
	return pane, err
}

// awaitReceipt waits up to policy.ReceiptWait for the agent's UserPromptSubmit hook to name
// intent id.
func (s *session) awaitReceipt(ctx workflow.Context, id string) bool {
	return s.awaitAgent(ctx, func() bool { return s.receipted(id) })
}

// awaitAgent waits up to policy.ReceiptWait for what the agent's hooks report to satisfy done.
func (s *session) awaitAgent(ctx workflow.Context, done func() bool) bool {
	if done() {
		return true
	}
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(timerCtx, policy.ReceiptWait)
	for !timer.IsReady() {
		s.waitForSignal(ctx, timer)
		if done() {
			return true
		}
	}
	return false
}

// typeText types text into the pane and presses Enter.
func (s *session) typeText(ctx workflow.Context, text string) error {
	return workflow.ExecuteActivity(ctx, activities.TmuxInjectName, activities.InjectRequest{
		Session: s.Config.Name, Text: text, NewlineKey: s.Config.NewlineKey,
	}).Get(ctx, nil)
}

func (s *session) pressKeys(ctx workflow.Context, keys []string) error {
	return workflow.ExecuteActivity(ctx, activities.TmuxSendKeysName, activities.KeysRequest{
		Session: s.Config.Name, Keys: keys, Delay: 200 * time.Millisecond,
	}).Get(ctx, nil)
}

// screenLags reports whether the screen's busy look (pattern) is a drawing the agent's hooks have
// overtaken: its Stop hook said its turn ended less than policy.ScreenLag ago. A dialog, a draft
// or no agent is not a lag, nor a CLI that has just started (its SessionStart: it may still be
// loading, and Enter typed then is lost).
func (s *session) screenLags(now time.Time, pattern string) bool {
	if s.Agent == nil || s.Agent.State != AgentIdle || s.Agent.Event != EventStop || now.Sub(s.Agent.Since) >= policy.ScreenLag {
		return false
	}
	for _, not := range []string{"dialog", "a draft", noAgentPattern, "the agent is working"} {
		if strings.HasPrefix(pattern, not) {
			return false
		}
	}
	return true
}
