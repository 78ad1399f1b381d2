package workflows

// How a session types into its pane: wait until the pane is idle (SPEC N2), escalate (N1),
// commit to the history (H1), type literally and press Enter (N3), confirm the submit.

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

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

// waitUntilIdle reads the pane until it shows none of the CLI's busy patterns (SPEC N2). While
// it waits, new requests queue behind this one; after BusyAlertAfter the person is told once
// through ntfy rather than left to wonder why nothing arrives.
func (s *session) waitUntilIdle(ctx workflow.Context) error {
	defer func() { s.busySince, s.busyAlerted = nil, false }()
	busy := s.Config.Busy.OrDefault()
	for {
		var pane string
		err := workflow.ExecuteActivity(ctx, activities.TmuxCaptureName, activities.CaptureRequest{
			Target: s.Config.TmuxTarget, Lines: busy.BusyLines,
		}).Get(ctx, &pane)
		if err != nil {
			return err
		}
		pattern, working := Busy(pane, s.Config.BusyPatterns)
		if !working && workflow.GetVersion(ctx, "screen-guards", workflow.DefaultVersion, 1) == 1 {
			pattern, working = Blocked(pane, s.Config.DialogPatterns, s.Config.InputPrompt)
		}
		if !working {
			return nil
		}
		now := workflow.Now(ctx)
		if s.busySince == nil {
			s.busySince = &now
			workflow.GetLogger(ctx).Info("pane busy, delivery waits", "session", s.Config.Name, "pattern", pattern, "queued", len(s.Queue))
		}
		after := busy.BusyAlertAfter
		if strings.HasPrefix(pattern, "dialog") || strings.HasPrefix(pattern, "a draft") {
			after = busy.WaitsForYouAfter
		}
		if !s.busyAlerted && now.Sub(*s.busySince) >= after {
			s.busyAlerted = true
			s.alertBusy(ctx, now.Sub(*s.busySince), pattern)
		}
		timer := workflow.NewTimer(ctx, busy.BusyWait)
		for !timer.IsReady() {
			s.waitForSignal(ctx, timer)
		}
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
	esc := s.Config.Escalation
	phase = esc.Effective(esc.PhaseFor(now.Sub(req.Since)), now, s.LastResetAt, s.Config.Reset.Possible())
	// Escalation is the session's, not each reminder's: one step per session per tick at most,
	// and a reminder that is late because intentq itself was down or behind (a backlog) is not
	// the agent ignoring it. Sessions from before this rule replay without it.
	if phase > PhaseNudge && workflow.GetVersion(ctx, "escalation-per-session", workflow.DefaultVersion, 1) == 1 {
		spacing := policy.Or(esc.StepEvery, policy.DefaultReminders.RepeatEvery)
		if req.Backlog || (s.LastEscalationAt != nil && now.Sub(*s.LastEscalationAt) < spacing) {
			phase = PhaseNudge
		} else {
			s.LastEscalationAt = &now
		}
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

// commitToHistory appends what is about to be typed to the session's history, before it is
// typed (SPEC H1-H3): exactly once per request, whatever the retries.
func (s *session) commitToHistory(ctx workflow.Context, req DeliveryRequest) error {
	if s.Config.HistoryPath == "" {
		return nil
	}
	ctx = workflow.WithActivityOptions(ctx, historyActivityOptions)
	entry := activities.HistoryEntry{Time: workflow.Now(ctx), Session: s.Config.Name, Kind: req.Kind, ID: req.ID, Text: req.Text}
	if err := workflow.ExecuteActivity(ctx, activities.HistoryAppendName, activities.AppendRequest{Path: s.Config.HistoryPath, Entry: entry}).Get(ctx, nil); err != nil {
		return fmt.Errorf("commit to history %s: %w", s.Config.HistoryPath, err)
	}
	return nil
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
		if !check || !s.notSubmitted(ctx, res.Bottom, text) {
			return nil
		}
		if attempt == policy.SubmitAttempts {
			return temporal.NewApplicationError(fmt.Sprintf("session %s: the text stayed on the input line after %d tries (the CLI took Enter as a newline?)", s.Config.Name, attempt), ErrTypeNotSubmitted)
		}
		workflow.GetLogger(ctx).Warn("delivery not submitted, clearing the input line", "session", s.Config.Name, "attempt", attempt)
		if err := s.pressKeys(ctx, orDefaultKeys(s.Config.ClearKeys)); err != nil {
			return err
		}
	}
}

// notSubmitted reads the bottom lines after Enter: where the CLI's input prompt is known, only
// the input line counts (the text elsewhere on the screen, in the transcript or a program's
// echo, says nothing, and a draft the person began since is not ours to clear); otherwise, as
// before, the end of the text still showing in the bottom lines.
func (s *session) notSubmitted(ctx workflow.Context, bottom, text string) bool {
	if s.Config.InputPrompt != "" && workflow.GetVersion(ctx, "confirm-by-input-line", workflow.DefaultVersion, 1) == 1 {
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

// typeText types text into the pane and presses Enter.
func (s *session) typeText(ctx workflow.Context, text string) error {
	return workflow.ExecuteActivity(ctx, activities.TmuxInjectName, activities.InjectRequest{
		Target: s.Config.TmuxTarget, Text: text, NewlineKey: s.Config.NewlineKey,
	}).Get(ctx, nil)
}

func (s *session) pressKeys(ctx workflow.Context, keys []string) error {
	return workflow.ExecuteActivity(ctx, activities.TmuxSendKeysName, activities.KeysRequest{
		Target: s.Config.TmuxTarget, Keys: keys, Delay: 200 * time.Millisecond,
	}).Get(ctx, nil)
}
