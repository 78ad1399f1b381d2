package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// askStop sends the person's /stop at time at, its look at the screen taking look (a loaded
// machine); answered is called with the stop's answer.
func (h *sessionHarness) askStop(t *testing.T, at, look time.Duration, answered func(StopResult)) {
	h.env.RegisterDelayedCallback(func() {
		h.mu.Lock()
		h.nextLookTakes = look
		h.mu.Unlock()
		h.env.UpdateWorkflow(UpdateStop, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("stop rejected: %v", err) },
			OnAccept: func() {},
			OnComplete: func(r interface{}, err error) {
				require.NoError(t, err)
				answered(r.(StopResult))
			},
		})
	}, at)
}

// keysPressed lists the keys events, in order.
func (h *sessionHarness) keysPressed() []string {
	var keys []string
	for _, e := range h.events {
		if strings.HasPrefix(e, "keys ") {
			keys = append(keys, e)
		}
	}
	return keys
}

// The person's /stop takes 10 s to read the screen (a loaded machine); meanwhile
// the turn it was asked for ends and a message waits. Nothing is typed while the stop looks, and
// the stop presses nothing: the turn it was asked for has ended, and a key now would interrupt
// the one the waiting message starts. The message goes in after the stop's answer. When a Stop
// hook hands the message over instead (the turn goes on with it), the stop presses nothing
// either. A run from before (version 11, without the marker) keeps its old behaviour: it typed
// the message while the stop looked, and the stop's Escape then interrupted the turn it began.
func TestStopNeverInterruptsATurnIntentqTyped(t *testing.T) {
	const look = 10 * time.Second
	for _, version := range []int{SessionVersion, sessionStopHoldsTyping - 1} {
		t.Run(fmt.Sprint("turn ends, version ", version), func(t *testing.T) {
			h := newSessionHarness(t)
			h.slowLooks()
			h.busyTill, h.escapeStops, h.promptsReceipted = time.Hour, true, true
			cfg := hookSession()
			cfg.StopKeys = []string{"Escape"}
			if version < sessionStopHoldsTyping {
				h.env.OnGetVersion("stop-holds-typing", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
			h.send(time.Second, SignalDeliver, message("1"))
			h.send(1500*time.Millisecond, SignalHookWords, said(AgentEvent{Event: EventPreToolUse, Detail: "Bash"}))
			var stop StopResult
			var stopAt time.Duration
			h.askStop(t, 2*time.Second, look, func(r StopResult) { stop, stopAt = r, h.env.Now().Sub(h.start) })
			// The turn ends while the stop looks: its screen is idle from then.
			h.env.RegisterDelayedCallback(func() {
				h.mu.Lock()
				h.busyTill = 3 * time.Second
				h.mu.Unlock()
				h.env.SignalWorkflow(SignalHookWords, said(AgentEvent{Event: EventStop}))
			}, 3*time.Second)
			h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
			h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: version, Config: cfg})

			require.Equal(t, []string{message("1").Text}, h.typed, "the message goes in once")
			require.True(t, h.results[message("1").ID].OK)
			typedAt := slices.Index(h.events, "typed "+message("1").Text)
			escapeAt := slices.Index(h.events, "keys Escape")
			if version < sessionStopHoldsTyping {
				require.Greater(t, escapeAt, typedAt, "the build before pressed Escape after it typed")
				return
			}
			require.Empty(t, h.keysPressed(), "no key: the turn the stop was asked for had ended")
			require.GreaterOrEqual(t, stopAt, 2*time.Second+look)
			require.GreaterOrEqual(t, h.typedAt[0], stopAt, "nothing typed while the stop looked")
			require.False(t, stop.Stopped, "%+v", stop)
			require.Contains(t, stop.Why, "not working any more (idle)")
		})
	}

	t.Run("a Stop hook hands the message over", func(t *testing.T) {
		h := newSessionHarness(t)
		h.slowLooks()
		h.busyTill, h.escapeStops = time.Hour, true
		cfg := hookSession()
		cfg.StopKeys = []string{"Escape"}
		h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
		h.send(time.Second, SignalDeliver, message("1"))
		var stop StopResult
		h.askStop(t, 2*time.Second, look, func(r StopResult) { stop = r })
		// The turn ends while the stop looks, and its Stop hook takes the message: the turn goes
		// on with it.
		var took *TakeResult
		h.take(t, 3*time.Second, EventStop, "stop/1", time.Time{}, func(r *TakeResult) { took = r })
		h.send(3500*time.Millisecond, SignalHookWords, committed("stop/1"))
		h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
		h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})

		require.NotNil(t, took)
		require.Equal(t, []DeliveryRequest{message("1")}, took.Messages)
		require.Equal(t, EventStop, h.results[message("1").ID].Via)
		require.Empty(t, h.typed)
		require.False(t, stop.Stopped, "%+v", stop)
		require.Contains(t, stop.Why, "a new one began meanwhile")
		require.Empty(t, h.keysPressed(), "no key: the turn went on with the message the hook handed over")
	})
}

// A /stop still looking at the screen when the session's history is long enough to
// continue as new is answered by the run before it ends (the stop presses its key and the screen
// confirms it); the next run carries what the stop left. Before, the run continued as new at once
// and the stop's caller was never answered.
func TestStopInFlightAtContinueAsNewIsAnswered(t *testing.T) {
	h := newSessionHarness(t)
	h.slowLooks()
	h.busyTill, h.escapeStops = time.Hour, true
	cfg := hookSession()
	cfg.StopKeys = []string{"Escape"}
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	answered := false
	var stop StopResult
	h.askStop(t, 2*time.Second, 10*time.Second, func(r StopResult) { stop, answered = r, true })
	h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 3*time.Second)
	// The agent's next tool call wakes the session, which may then continue as new.
	h.send(4*time.Second, SignalHookWords, said(AgentEvent{Event: EventPreToolUse, Detail: "Bash"}))
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
	require.True(t, answered, "the stop in flight is answered before the run continues as new")
	require.True(t, stop.Stopped, "%+v", stop)
	require.Equal(t, []string{"keys Escape"}, h.keysPressed())
	var next SessionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, AgentIdle, next.Agent.State, "the next run has what the stop left")
	require.Equal(t, UpdateStop, next.Agent.Event)
}
