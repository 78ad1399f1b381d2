package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

// registerSignalAll stands in for activities.Signals in a test environment: each target's
// result goes to handle, as the server would pass it to the intent; before, when set, may fail
// the whole activity first (a worker that is away).
func registerSignalAll(env *testsuite.TestWorkflowEnvironment, before func() error, handle func(workflowID, signal string, res DeliveryResult)) {
	env.RegisterActivityWithOptions(func(ctx context.Context, req activities.SignalAllRequest) error {
		if before != nil {
			if err := before(); err != nil {
				return err
			}
		}
		for _, t := range req.Targets {
			var res DeliveryResult
			if err := json.Unmarshal(t.Arg, &res); err != nil {
				return fmt.Errorf("result for %s: %w", t.WorkflowID, err)
			}
			handle(t.WorkflowID, req.Signal, res)
		}
		return nil
	}, activity.RegisterOptions{Name: activities.SignalAllName})
}

// Issue 38 (SessionVersion 11): the results of what reached the agent wait while more waits to
// be typed and go to their intents together once the queue is empty; meanwhile the session
// answers that its agent has the message (a person's edit or /cancel asks it). A run from
// before the rule tells each block's results at once.
func TestResultsWaitForTheBacklog(t *testing.T) {
	one, two := message("1"), message("2")
	run := func(old bool) (h *sessionHarness, has map[string]bool) {
		h = newSessionHarness(t)
		if old {
			h.env.OnGetVersion("results-after-backlog", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		}
		has = map[string]bool{}
		h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
		h.send(time.Second, SignalDeliver, one)
		h.send(2*time.Second, SignalDeliver, two) // arrives while message 1 is typed
		h.send(4*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{one.ReplyTo}}))
		h.env.RegisterDelayedCallback(func() {
			for _, id := range []string{one.ReplyTo, two.ReplyTo, "intent/42/3"} {
				v, err := h.env.QueryWorkflow(QueryHasMessage, id)
				require.NoError(t, err)
				var got bool
				require.NoError(t, v.Get(&got))
				has[id] = got
			}
		}, 5*time.Second)
		h.send(6*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
		h.send(8*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{two.ReplyTo}}))
		h.send(9*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
		h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
		// A run of version 10, below the rule: it decides it by its marker.
		h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: sessionResultsAfterBacklog - 1, Config: hookSession()})
		require.Equal(t, []string{one.Text, two.Text}, h.typed, "each typed once, in order")
		require.True(t, h.results[one.ID].OK)
		require.True(t, h.results[two.ID].OK)
		return h, has
	}

	h, has := run(false)
	require.Equal(t, map[string]bool{one.ReplyTo: true, two.ReplyTo: false, "intent/42/3": false}, has,
		"the agent has message 1 (its result held), not message 2 (queued while the agent works), nor one never sent")
	require.Equal(t, 8*time.Second, h.resultAt[one.ID].Sub(h.start), "message 1's result waited for message 2's typing")
	require.Equal(t, h.resultAt[one.ID], h.resultAt[two.ID], "told together")

	h, _ = run(true)
	require.Equal(t, 4*time.Second, h.resultAt[one.ID].Sub(h.start), "the rule before: told at its receipt")
	require.Equal(t, 8*time.Second, h.resultAt[two.ID].Sub(h.start))
}

// Issue 38: results wait at most policy.ResultsHold while the pane keeps the session waiting (an
// agent at work for minutes with messages queued), well before their intents would ask again.
func TestHeldResultsAreToldWithinTheHold(t *testing.T) {
	one, two := message("1"), message("2")
	h := newSessionHarness(t)
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(time.Second, SignalDeliver, one)
	h.send(2*time.Second, SignalDeliver, two)
	// Message 1's receipt, and the agent works on for five minutes: message 2 waits.
	h.send(4*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{one.ReplyTo}}))
	for at := 20 * time.Second; at < 5*time.Minute; at += 20 * time.Second {
		h.send(at, SignalHookWords, said(AgentEvent{Event: EventPreToolUse}))
	}
	h.send(5*time.Minute, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(5*time.Minute+2*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{two.ReplyTo}}))
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 10*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})
	require.Equal(t, []string{one.Text, two.Text}, h.typed)
	told := h.resultAt[one.ID].Sub(h.start)
	require.GreaterOrEqual(t, told, 4*time.Second+policy.ResultsHold, "held while more waits")
	require.LessOrEqual(t, told, 4*time.Second+policy.ResultsHold+hookSession().BusyWait, "told once the hold is up, at the next look at the pane")
	require.Less(t, told, policy.DeliveryTimeout, "before the intent would ask again")
	require.Equal(t, 5*time.Minute+2*time.Second, h.resultAt[two.ID].Sub(h.start))
}

// Issue 38: held results are told before the session resets its agent's CLI: the new context
// lists, in full, what the agent had from the intents it answers to, as their intents know it.
func TestHeldResultsAreToldBeforeAReset(t *testing.T) {
	one := message("1")
	h := newSessionHarness(t)
	cfg := hookSession()
	cfg.Escalation = EscalationPolicy{Interrupt: true, Reset: true, StepEvery: time.Minute}
	cfg.Reset = ResetSteps{Command: "/clear"}
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(time.Second, SignalDeliver, one)
	// A reminder of a message the agent never took in, old enough for a reset, arrives while
	// message 1 is typed.
	h.send(2*time.Second, SignalDeliver, DeliveryRequest{ID: "r", ReplyTo: "intent/42/2", Kind: KindReminder, Text: "nudge", Since: h.start.Add(-10 * time.Minute), Tick: 1})
	h.send(4*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{one.ReplyTo}}))
	h.send(5*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(7*time.Second, SignalHookWords, said(AgentEvent{Event: EventSessionStart, Detail: "clear"}))
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{one.Text, "/clear", "nudge"}, h.typed)
	require.True(t, h.results[one.ID].OK)
	require.LessOrEqual(t, h.resultAt[one.ID].Sub(h.start), h.typedAt[1], "told before the reset")
	require.True(t, h.results["r"].Reset)
}
