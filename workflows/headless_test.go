package workflows

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

type headlessHarness struct {
	testsuite.WorkflowTestSuite
	env      *testsuite.TestWorkflowEnvironment
	start    time.Time
	mu       sync.Mutex
	runs     []activities.RunRequest
	runAt    []time.Duration
	active   int
	maxSeen  int
	outcome  func(n int, req activities.RunRequest) (activities.RunResult, error)
	acquired int
	released int
}

func newHeadlessHarness(t *testing.T) *headlessHarness {
	h := &headlessHarness{}
	h.env = h.NewTestWorkflowEnvironment()
	h.start = h.env.Now()
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: SessionWorkflowID("batch")})
	h.env.RegisterWorkflowWithOptions(HeadlessSessionWorkflow, workflow.RegisterOptions{Name: HeadlessWorkflowName})
	h.env.RegisterActivityWithOptions(func(ctx context.Context, req activities.RunRequest) (activities.RunResult, error) {
		h.mu.Lock()
		n := len(h.runs)
		h.runs = append(h.runs, req)
		h.runAt = append(h.runAt, h.env.Now().Sub(h.start).Round(time.Second))
		h.active++
		h.maxSeen = max(h.maxSeen, h.active)
		h.mu.Unlock()
		defer func() { h.mu.Lock(); h.active--; h.mu.Unlock() }()
		if h.outcome != nil {
			return h.outcome(n, req)
		}
		return activities.RunResult{Result: "answer to " + req.Prompt, SessionID: "cs-1", CostUSD: 0.5}, nil
	}, activity.RegisterOptions{Name: activities.AgentRunName})
	h.env.OnSignalExternalWorkflow(mock.Anything, SemaphoreID, "", mock.Anything, mock.Anything).Return(
		func(_, _, _, signal string, _ interface{}) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			switch signal {
			case SignalAcquire:
				h.acquired++
				h.env.RegisterDelayedCallback(func() {
					h.env.SignalWorkflow(SignalGranted, SemaphoreRequest{Holder: SessionWorkflowID("batch")})
				}, time.Millisecond)
			case SignalRelease:
				h.released++
			}
			return nil
		})
	return h
}

func (h *headlessHarness) prompt(at time.Duration, r PromptRequest, out *PromptRecord) {
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdatePrompt, "", &testsuite.TestUpdateCallback{
			OnReject: func(error) {}, OnAccept: func() {},
			OnComplete: func(v interface{}, err error) {
				if out != nil && err == nil {
					*out = v.(PromptRecord)
				}
			},
		}, r)
	}, at)
}

func (h *headlessHarness) audit(t *testing.T) HeadlessState {
	v, err := h.env.QueryWorkflow(QueryAudit)
	require.NoError(t, err)
	var st HeadlessState
	require.NoError(t, v.Get(&st))
	return st
}

func batchConfig() HeadlessConfig {
	return HeadlessConfig{Name: "batch", Command: "claude", BaseArgs: []string{"-p", "--output-format", "json"}, Timeout: time.Minute}
}

// P1, P2, P3, P7: FIFO, one run at a time, each under a permit; the same key runs once; the
// session resumes the CLI's session; cost sums up.
func TestP1HeadlessFIFOAndIdempotent(t *testing.T) {
	h := newHeadlessHarness(t)
	var first, again PromptRecord
	h.prompt(time.Second, PromptRequest{Key: "k1", Channel: "cli", Text: "one", ToolFlags: []string{"--allowedTools", "Read"}}, &first)
	h.prompt(time.Second, PromptRequest{Key: "k2", Channel: "telegram", Text: "two"}, nil)
	h.prompt(time.Second, PromptRequest{Key: "k1", Channel: "cli", Text: "one"}, &again)
	h.prompt(time.Second, PromptRequest{Channel: "web", Text: "three"}, nil)
	var st HeadlessState
	h.env.RegisterDelayedCallback(func() { st = h.audit(t); h.env.CancelWorkflow() }, time.Hour)
	h.env.ExecuteWorkflow(HeadlessWorkflowName, HeadlessState{Config: batchConfig()})

	require.Len(t, h.runs, 3, "k1 twice runs once")
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, []string{"one", "two", "three"}, []string{h.runs[0].Prompt, h.runs[1].Prompt, h.runs[2].Prompt})
	require.Equal(t, 1, h.maxSeen)
	require.Equal(t, 3, h.acquired)
	require.Equal(t, 3, h.released)
	require.Equal(t, activities.RunRequest{Session: "batch", Channel: "cli", Prompt: "one"}, h.runs[0], "a run names the session, nothing to execute")
	require.Equal(t, activities.RunRequest{Session: "batch", Channel: "telegram", Prompt: "two", ResumeID: "cs-1"}, h.runs[1], "later runs resume the CLI's session")
	require.InDelta(t, 1.5, st.CostUSD, 1e-9)
	for _, p := range st.Prompts {
		require.Equal(t, PromptSucceeded, p.Status)
		require.Len(t, p.Invocations, 1)
		require.Equal(t, "answer to "+p.Text, p.Result)
	}
}

// P6: retryable failures are tried again 1 s and 2 s later, at most 3 attempts, each audited.
func TestP6HeadlessRetry(t *testing.T) {
	h := newHeadlessHarness(t)
	h.outcome = func(n int, req activities.RunRequest) (activities.RunResult, error) {
		if n < 2 {
			res := activities.RunResult{ExitCode: 137}
			return res, activities.RunError(res, "killed", activities.ErrTypeCLICrashed, false, nil)
		}
		return activities.RunResult{Result: "ok", CostUSD: 0.1}, nil
	}
	h.prompt(0, PromptRequest{Key: "r", Text: "retry me"}, nil)
	var st HeadlessState
	h.env.RegisterDelayedCallback(func() { st = h.audit(t); h.env.CancelWorkflow() }, time.Hour)
	h.env.ExecuteWorkflow(HeadlessWorkflowName, HeadlessState{Config: batchConfig()})
	require.Equal(t, []time.Duration{0, time.Second, 3 * time.Second}, h.runAt)
	p := st.Prompts[0]
	require.Equal(t, PromptSucceeded, p.Status)
	require.Len(t, p.Invocations, 3)
	require.Equal(t, 137, p.Invocations[0].ExitCode)
	require.Contains(t, p.Invocations[0].Error, "killed")
}

// P6: non-retryable failures and non-idempotent prompts run once.
func TestP6HeadlessNoRetry(t *testing.T) {
	h := newHeadlessHarness(t)
	h.outcome = func(n int, req activities.RunRequest) (activities.RunResult, error) {
		if req.Prompt == "deny" {
			res := activities.RunResult{DeniedTools: []string{"Write"}}
			return res, activities.RunError(res, "permission denied for Write", activities.ErrTypePermissionDenied, true, nil)
		}
		return activities.RunResult{}, temporal.NewApplicationError("timeout", activities.ErrTypeRunTimeout)
	}
	h.prompt(0, PromptRequest{Key: "a", Text: "deny"}, nil)
	h.prompt(0, PromptRequest{Key: "b", Text: "push", NoRetry: true}, nil)
	var st HeadlessState
	h.env.RegisterDelayedCallback(func() { st = h.audit(t); h.env.CancelWorkflow() }, time.Hour)
	h.env.ExecuteWorkflow(HeadlessWorkflowName, HeadlessState{Config: batchConfig()})
	require.Len(t, h.runs, 2)
	for _, p := range st.Prompts {
		require.Equal(t, PromptFailed, p.Status)
		require.Len(t, p.Invocations, 1)
	}
	require.Contains(t, st.Prompts[0].Error, "permission denied for Write")
	require.EqualValues(t, 2, st.Failed)
}

// P2: the semaphore grants at most N permits, FIFO, and takes them back on release.
func TestP2SemaphoreLimitsAcrossHolders(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(SemaphoreWorkflow, workflow.RegisterOptions{Name: SemaphoreWorkflowName})
	var mu sync.Mutex
	var granted []string
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", SignalGranted, mock.Anything).Return(
		func(_, holder, _, _ string, _ interface{}) error {
			mu.Lock()
			defer mu.Unlock()
			granted = append(granted, holder)
			return nil
		})
	for i, holder := range []string{"session/a", "session/b", "session/c", "session/a"} {
		holder := holder
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalAcquire, SemaphoreRequest{Holder: holder}) }, time.Duration(i+1)*time.Second)
	}
	var mid SemaphoreState
	env.RegisterDelayedCallback(func() {
		v, _ := env.QueryWorkflow(QuerySemaphore)
		_ = v.Get(&mid)
		env.SignalWorkflow(SignalRelease, SemaphoreRequest{Holder: "session/a"})
	}, 10*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(SemaphoreWorkflowName, SemaphoreState{Permits: 2})
	require.Equal(t, []string{"session/a", "session/b"}, mid.Holders)
	require.Equal(t, []string{"session/c"}, mid.Waiting)
	require.Equal(t, []string{"session/a", "session/b", "session/a", "session/c"}, granted, "a re-asking holder is granted again; c gets a's permit after release")
}

// P6: a cancelled prompt is not run (queued) or is stopped (running), and never retried.
func TestP6HeadlessCancel(t *testing.T) {
	h := newHeadlessHarness(t)
	h.outcome = func(n int, req activities.RunRequest) (activities.RunResult, error) {
		return activities.RunResult{Result: "ran " + req.Prompt}, nil
	}
	var first, second PromptRecord
	h.prompt(0, PromptRequest{Key: "a", Text: "one"}, &first)
	h.prompt(0, PromptRequest{Key: "b", Text: "two"}, &second)
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateCancel, "", &testsuite.TestUpdateCallback{OnReject: func(error) {}, OnAccept: func() {}, OnComplete: func(interface{}, error) {}}, "batch#2")
	}, 0)
	var st HeadlessState
	h.env.RegisterDelayedCallback(func() { st = h.audit(t); h.env.CancelWorkflow() }, time.Hour)
	h.env.ExecuteWorkflow(HeadlessWorkflowName, HeadlessState{Config: batchConfig()})
	require.Len(t, h.runs, 1)
	require.Equal(t, PromptSucceeded, st.Prompts[0].Status)
	require.Equal(t, PromptCancelled, st.Prompts[1].Status)
	require.Empty(t, st.Prompts[1].Invocations)
}

// Issue 23: the workflow's input names the session; its program, arguments and tool flags never
// reach the run. The worker refuses a session its config does not have (non-retryable): the
// prompt fails once, with the reason.
func TestHeadlessRunNamesTheSessionOnly(t *testing.T) {
	h := newHeadlessHarness(t)
	h.outcome = func(n int, req activities.RunRequest) (activities.RunResult, error) {
		return activities.RunResult{}, temporal.NewNonRetryableApplicationError(
			"agent run refused: workflow session/batch asked to run session \"evil\": not a headless session of this worker's config; nothing was run",
			activities.ErrTypeUnknownHeadless, nil)
	}
	h.prompt(0, PromptRequest{Key: "k", Channel: "cli", Text: "hi", ToolFlags: []string{"--dangerously-skip-permissions"}}, nil)
	var st HeadlessState
	h.env.RegisterDelayedCallback(func() { st = h.audit(t); h.env.CancelWorkflow() }, time.Hour)
	evil := HeadlessConfig{Name: "evil", Command: "/bin/sh", BaseArgs: []string{"-c", "touch /tmp/pwned"}, Timeout: time.Minute}
	h.env.ExecuteWorkflow(HeadlessWorkflowName, HeadlessState{Config: evil})

	require.Len(t, h.runs, 1, "not retried")
	input, _ := json.Marshal(h.runs[0])
	for _, s := range []string{"/bin/sh", "touch", "dangerously"} {
		require.NotContains(t, string(input), s)
	}
	require.Equal(t, "evil", h.runs[0].Session)
	require.Equal(t, PromptFailed, st.Prompts[0].Status)
	require.Contains(t, st.Prompts[0].Error, "nothing was run")
	require.EqualValues(t, 1, st.Failed)
}
