package workflows

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
)

// The card and the approval's record name the answer the CLI acted on. These run an
// approval as a hook that confirms its hand-over (Confirms): it takes the phone's answer and
// confirms handing it over, or tells the approval the terminal answered.

// confirmingInput is approvalInput from a hook that confirms its hand-over.
func confirmingInput(env *testsuite.TestWorkflowEnvironment) ApprovalInput {
	in := approvalInput(env)
	in.Confirms = true
	return in
}

// hookUpdate runs the hook's update name at the delay at, and keeps its result in got.
func (h *approvalHarness) hookUpdate(at time.Duration, name, id string, got *ApprovalResult, gotErr *error) {
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { *gotErr = err },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { *got, _ = v.(ApprovalResult); *gotErr = err },
		})
	}, at)
}

// follow signals what happened at the terminal at the delay at.
func (h *approvalHarness) follow(at time.Duration, event string) {
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalFollowed, ApprovalFollow{Event: event})
	}, at)
}

// The phone's answer counts once the hook hands it over: the hook waiting since the card came
// gets it as pending, confirms, and the press is answered with it; a second press meanwhile is
// told the first counted.
func TestApprovalPhoneAnswerCountsOnceHandedOver(t *testing.T) {
	h := newApprovalHarness(t)
	var taken, handed, press, second ApprovalResult
	var takeErr, handErr, pressErr, secondErr error
	h.hookUpdate(time.Second, UpdateTakeAnswer, "take", &taken, &takeErr)
	h.decide(30*time.Second, ApprovalAnswer{Data: "tok:a1", UserID: 42, User: "Ann", Chat: "42", Via: "button"}, &press, &pressErr)
	h.decide(30*time.Second+100*time.Millisecond, ApprovalAnswer{Data: "tok:d1", UserID: 43, User: "Bob", Chat: "42", Via: "button"}, &second, &secondErr)
	h.hookUpdate(30*time.Second+200*time.Millisecond, UpdateHandedOver, "handed", &handed, &handErr)
	h.env.ExecuteWorkflow(ApprovalWorkflowName, confirmingInput(h.env))
	r := h.result(t)
	require.NoError(t, takeErr)
	require.NoError(t, handErr)
	require.NoError(t, pressErr)
	require.NoError(t, secondErr)
	require.True(t, taken.Pending, "the hook takes the answer before it counts")
	require.Equal(t, ChoiceAllow, taken.Choice)
	require.Equal(t, OutcomeDecided, r.Outcome)
	require.Equal(t, ChoiceAllow, r.Choice)
	require.Equal(t, r, handed, "the hook prints what the record says")
	require.False(t, press.Already)
	require.Equal(t, r, press)
	require.True(t, second.Already, "the second press is told the first counted")
	require.Equal(t, ChoiceAllow, second.Choice)
	require.Len(t, h.edits, 1)
	require.Contains(t, h.edits[0].Text, "✅ Allowed once from the phone by Ann")
}

// (b) No at the terminal and Allow pressed in the same second: Claude Code ends the hook, which
// prints nothing; the approval is the terminal's, on the card, in the record and in the press's
// answer, and the hook's confirmation racing the end is refused.
func TestApprovalHookEndedAfterPressIsTheTerminals(t *testing.T) {
	h := newApprovalHarness(t)
	var taken, handed, press ApprovalResult
	var takeErr, handErr, pressErr error
	h.hookUpdate(time.Second, UpdateTakeAnswer, "take", &taken, &takeErr)
	h.decide(30*time.Second, ApprovalAnswer{Data: "tok:a1", UserID: 42, User: "Ann", Chat: "42", Via: "button"}, &press, &pressErr)
	h.follow(30*time.Second+300*time.Millisecond, EventHookEnded)
	h.hookUpdate(30*time.Second+400*time.Millisecond, UpdateHandedOver, "handed", &handed, &handErr)
	h.env.ExecuteWorkflow(ApprovalWorkflowName, confirmingInput(h.env))
	r := h.result(t)
	require.Equal(t, OutcomeTerminal, r.Outcome, "the record: %+v", r)
	require.Empty(t, r.Choice)
	require.NoError(t, pressErr)
	require.True(t, press.Already, "the press is told it did not count")
	require.Equal(t, OutcomeTerminal, press.Outcome)
	if handErr == nil {
		require.NotEqual(t, OutcomeDecided, handed.Outcome, "the hook may not print after its end")
	}
	require.Len(t, h.edits, 1)
	require.NotContains(t, h.edits[0].Text, "Allowed")
	require.Contains(t, h.edits[0].Text, "⌨️ answered at the terminal")
}

// (a) Yes at the terminal, then a long tool run: Deny pressed meanwhile reaches the hook, which
// finds the prompt closed (Claude Code's registry); the approval is the terminal's, never
// "Denied from the phone".
func TestApprovalPromptClosedBeforePressIsTheTerminals(t *testing.T) {
	h := newApprovalHarness(t)
	var taken, press ApprovalResult
	var takeErr, pressErr error
	h.hookUpdate(time.Second, UpdateTakeAnswer, "take", &taken, &takeErr)
	h.decide(time.Minute, ApprovalAnswer{Data: "tok:d1", UserID: 42, User: "Ann", Chat: "42", Via: "button"}, &press, &pressErr)
	h.follow(time.Minute+200*time.Millisecond, EventPromptClosed)
	h.env.ExecuteWorkflow(ApprovalWorkflowName, confirmingInput(h.env))
	r := h.result(t)
	require.NoError(t, takeErr)
	require.Equal(t, ChoiceDeny, taken.Choice)
	require.Equal(t, OutcomeTerminal, r.Outcome, "the record: %+v", r)
	require.Equal(t, "answered at the terminal before the phone", r.Detail)
	require.NoError(t, pressErr)
	require.True(t, press.Already)
	require.Equal(t, "Already answered: answered at the terminal before the phone", "Already answered: "+press.Words())
	require.Len(t, h.edits, 1)
	require.NotContains(t, h.edits[0].Text, "Denied")
	require.NotContains(t, h.edits[0].Text, "❌")
}

// A phone's answer no hook takes (the hook was killed outright) reached no CLI: after
// handOverWait the approval is the terminal's.
func TestApprovalAnswerNoHookTakesCountsForNothing(t *testing.T) {
	h := newApprovalHarness(t)
	var press ApprovalResult
	var pressErr error
	h.decide(time.Minute, ApprovalAnswer{Data: "tok:a1", UserID: 42, User: "Ann", Chat: "42", Via: "button"}, &press, &pressErr)
	in := confirmingInput(h.env)
	h.env.ExecuteWorkflow(ApprovalWorkflowName, in)
	r := h.result(t)
	require.Equal(t, OutcomeTerminal, r.Outcome)
	require.Contains(t, r.Detail, "did not reach the agent")
	require.Equal(t, time.Minute+handOverWait, r.At.Sub(in.AskedAt).Round(time.Second))
	require.NoError(t, pressErr)
	require.True(t, press.Already)
	require.NotContains(t, h.edits[0].Text, "Allowed")
}

// The review's suspicion, two permission requests at once (the session tracks one approval):
// settled here at the session. The second request's PermissionRequest is passed to the first
// approval as "the terminal went on", so the first ends as the terminal's while its dialog may
// still wait (a CLI that asks for two tools at once); its hook then takes that end and prints
// nothing: no answer the CLI did not act on is recorded, but the first card says "answered at
// the terminal" early and takes no answer from the phone. The second approval is followed on.
func TestSessionTwoPermissionRequestsAtOnce(t *testing.T) {
	h := newSessionHarness(t)
	var mu sync.Mutex
	told := map[string][]string{}
	h.env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", SignalFollowed, mock.Anything).Return(
		func(_, workflowID, _, _ string, arg interface{}) error {
			mu.Lock()
			defer mu.Unlock()
			told[workflowID] = append(told[workflowID], arg.(ApprovalFollow).Event)
			return nil
		})
	first, second := ApprovalWorkflowID("secretary", "A"), ApprovalWorkflowID("secretary", "B")
	h.send(time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	h.send(2*time.Second, SignalHookWords, said(AgentEvent{Event: EventPermissionRequest, Detail: first}))
	h.send(2*time.Second+100*time.Millisecond, SignalHookWords, said(AgentEvent{Event: EventPermissionRequest, Detail: second}))
	h.send(5*time.Second, SignalHookWords, said(AgentEvent{Event: EventPostToolUse, Detail: "Read"}))
	h.runFor(t, time.Minute)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{EventPermissionRequest}, told[first], "the first approval is ended by the second request")
	require.Equal(t, []string{EventPostToolUse}, told[second], "the second is followed by the next hook")
}
