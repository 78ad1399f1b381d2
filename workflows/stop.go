package workflows

// The phone's /stop (issue 36): the agent's running turn is interrupted with the CLI's own stop
// key, pressed once, only while its hooks say it works and its screen shows no dialog and no
// draft, never while intentq types; the screen confirms it (the CLI's busy marker gone). While
// the stop looks, nothing is typed or offered, and the key goes only to the turn the stop was
// asked for (sessionStopHoldsTyping): never to one intentq's typing started.

import (
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"
)

// UpdateStop interrupts the agent's running turn (StopResult).
const UpdateStop = "stop"

// StopResult says whether the agent's turn was stopped, and if not, why (for the person).
type StopResult struct {
	Stopped bool   `json:"stopped"`
	Why     string `json:"why,omitempty"`
}

// stopLooks is how many times (a second apart) the screen is read after the stop key for the
// busy marker to go.
const stopLooks = 5

// stopTurn interrupts the agent's running turn.
func (s *session) stopTurn(ctx workflow.Context) (StopResult, error) {
	switch {
	case len(s.Config.StopKeys) == 0:
		return StopResult{Why: "this CLI cannot be stopped from the phone; stop it at the terminal"}, nil
	case s.Ledger.typing != "" || len(s.Ledger.block) > 0:
		return StopResult{Why: "intentq is typing into it right now; try again in a moment"}, nil
	case s.Agent == nil:
		return StopResult{Why: "its hooks have not reported yet, so intentq cannot tell whether it works"}, nil
	case s.Agent.State != AgentWorking:
		return StopResult{Why: "its agent is not working (" + s.Agent.State + ")"}, nil
	case s.stopHoldsTyping && s.stopping:
		return StopResult{Why: "a /stop is under way already; its answer follows"}, nil
	}
	since, typings := s.Agent.Since, s.typings
	if s.stopHoldsTyping {
		// Nothing is typed or offered until this stop has ended, whichever way it ends; the
		// main loop then looks at the pane again.
		s.stopping = true
		defer func() {
			s.stopping = false
			s.wakeCh.SendAsync(true)
		}()
	}
	ctx = workflow.WithActivityOptions(ctx, tmuxActivityOptions)
	lines := s.Config.Busy.OrDefault().BusyLines
	pane, err := s.capture(ctx, lines)
	if err != nil {
		return StopResult{Why: "its pane could not be read (" + ShortCause(err) + ")"}, nil
	}
	if pattern, blocked := Blocked(pane, s.Config.DialogPatterns, s.Config.InputPrompt, s.Config.InputPlaceholders...); blocked {
		// A key would answer the dialog or touch the person's draft.
		return StopResult{Why: pattern + " is on its screen; answer it at the terminal"}, nil
	}
	if s.stopHoldsTyping {
		if why := s.turnWentOn(since, typings); why != "" {
			return StopResult{Why: why}, nil
		}
	}
	if err := s.pressKeys(ctx, s.Config.StopKeys); err != nil {
		return StopResult{Why: "the stop key could not be pressed (" + ShortCause(err) + ")"}, nil
	}
	keys := strings.Join(s.Config.StopKeys, " ")
	workflow.GetLogger(ctx).Info("stop pressed for the person", "session", s.Config.Name, "keys", keys)
	for range stopLooks {
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return StopResult{}, err
		}
		if pane, err = s.capture(ctx, lines); err != nil {
			continue
		}
		if _, busy := Busy(pane, s.Config.BusyPatterns); !busy {
			// No Stop hook follows an interrupt: the screen is the word.
			now := workflow.Now(ctx)
			s.Agent.State, s.Agent.Since, s.Agent.At, s.Agent.Event = AgentIdle, now, now, UpdateStop
			s.publishAgentState(ctx)
			s.wakeCh.SendAsync(true) // what waits for the agent may go now
			return StopResult{Stopped: true}, nil
		}
	}
	return StopResult{Why: "pressed " + keys + ", but it still looks busy; look at the terminal"}, nil
}

// turnWentOn says why the turn a stop was asked for (the agent working since since, this run
// having begun typings typings) is not the one that runs now, or "" when it is: the screen took
// seconds to read, and meanwhile intentq typed, or the turn ended, or ended and went on (a Stop
// hook handed the agent messages, or a new prompt began one).
func (s *session) turnWentOn(since time.Time, typings int) string {
	switch {
	case s.typings != typings || s.Ledger.typing != "" || len(s.Ledger.block) > 0:
		return "its turn ended and intentq typed your next message meanwhile; nothing was pressed"
	case s.Agent.State != AgentWorking:
		return "its agent is not working any more (" + s.Agent.State + "); nothing was pressed"
	case !s.Agent.Since.Equal(since):
		return "its turn ended and a new one began meanwhile; nothing was pressed (send /stop again to stop that one)"
	}
	return ""
}

// holdForStop waits, reading what arrives, until the /stop under way has ended.
func (s *session) holdForStop(ctx workflow.Context) {
	for s.stopping && ctx.Err() == nil {
		s.waitForSignal(ctx, nil)
	}
}
