package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

type sessionHarness struct {
	testsuite.WorkflowTestSuite
	env     *testsuite.TestWorkflowEnvironment
	mu      sync.Mutex
	typed   []string // texts in the order the pane got them
	results map[string]DeliveryResult
	active  int // injections running at once
	maxSeen int
}

func newSessionHarness(t *testing.T) *sessionHarness {
	h := &sessionHarness{results: map[string]DeliveryResult{}}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: SessionWorkflowName})
	h.env.RegisterActivityWithOptions(func(ctx context.Context, req activities.InjectRequest) error {
		h.mu.Lock()
		h.active++
		h.maxSeen = max(h.maxSeen, h.active)
		h.mu.Unlock()
		defer func() { h.mu.Lock(); h.active--; h.mu.Unlock() }()
		if req.Target == "gone:0" {
			return temporal.NewNonRetryableApplicationError("tmux target gone:0 not found", activities.ErrTypeTmuxTargetMissing, nil)
		}
		h.mu.Lock()
		h.typed = append(h.typed, req.Text)
		h.mu.Unlock()
		return nil
	}, activity.RegisterOptions{Name: activities.TmuxInjectName})
	h.env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", SignalDeliveryResult, mock.Anything).Return(
		func(_, workflowID, _, _ string, arg interface{}) error {
			res := arg.(DeliveryResult)
			h.mu.Lock()
			h.results[res.ID] = res
			h.mu.Unlock()
			return nil
		})
	return h
}

func (h *sessionHarness) send(at time.Duration, signal string, arg any) {
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(signal, arg) }, at)
}

// N3: one delivery at a time, in arrival order, each answered to its intent.
func TestSessionDeliversInOrderOneAtATime(t *testing.T) {
	h := newSessionHarness(t)
	// Four requests arrive together, the last one twice: a repeated request that is still
	// queued is not typed twice.
	h.env.RegisterDelayedCallback(func() {
		for _, text := range []string{"first", "second", "third", "fourth", "fourth"} {
			h.env.SignalWorkflow(SignalDeliver, DeliveryRequest{ID: text, ReplyTo: "intent/1/" + text, Kind: KindReminder, Text: text})
		}
	}, time.Second)
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QuerySession)
		require.NoError(t, err)
		var view SessionView
		require.NoError(t, v.Get(&view))
		require.EqualValues(t, 4, view.Delivered)
		h.env.CancelWorkflow()
	}, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Config: SessionConfig{Name: "secretary", TmuxTarget: "secretary:0"}})
	require.Equal(t, []string{"first", "second", "third", "fourth"}, h.typed)
	require.Equal(t, 1, h.maxSeen)
	require.Len(t, h.results, 4)
	for _, r := range h.results {
		require.True(t, r.OK)
	}
}

// A missing pane is a failed delivery with its type, reported to the intent; nothing is lost.
func TestSessionReportsMissingTarget(t *testing.T) {
	h := newSessionHarness(t)
	h.send(0, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Text: "a"})
	h.send(time.Second, SignalConfigure, SessionConfig{Name: "secretary", TmuxTarget: "secretary:0"})
	h.send(2*time.Second, SignalDeliver, DeliveryRequest{ID: "b", ReplyTo: "intent/1/b", Text: "b"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Config: SessionConfig{Name: "secretary", TmuxTarget: "gone:0"}})
	require.False(t, h.results["a"].OK)
	require.Equal(t, activities.ErrTypeTmuxTargetMissing, h.results["a"].ErrorType)
	require.Contains(t, h.results["a"].Error, "gone:0")
	require.True(t, h.results["b"].OK, "after configure, deliveries go to the new target")
	require.Equal(t, []string{"b"}, h.typed)
}

// The session continues as new when its history grows, carrying its counters and queue.
func TestSessionContinuesAsNew(t *testing.T) {
	h := newSessionHarness(t)
	for i := 0; i < 30; i++ {
		id := string(rune('a' + i%26))
		h.send(time.Duration(i)*time.Second, SignalDeliver, DeliveryRequest{ID: id + string(rune('0'+i/26)), ReplyTo: "intent/1/x", Text: id})
	}
	h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 45*time.Second)
	h.send(50*time.Second, SignalDeliver, DeliveryRequest{ID: "last", ReplyTo: "intent/1/x", Text: "last"})
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Config: SessionConfig{Name: "s", TmuxTarget: "s:0"}})
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
	var next SessionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, "s:0", next.Config.TmuxTarget)
	require.Greater(t, next.Delivered, int64(0))
	require.EqualValues(t, 31, next.Delivered)
	require.Len(t, h.typed, 31)
	require.Empty(t, next.Queue, "the session only continues as new with nothing queued")
}
