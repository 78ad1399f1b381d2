package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/intentq/intentq/internal/base/tclient"
)

// SignalAllName is Signals.SignalAll.
const SignalAllName = "SignalAll"

// Error types of SignalAll that no retry mends.
const (
	ErrTypeSignalRequestInvalid = "SignalRequestInvalid"
	ErrTypeSignalsNotConfigured = "SignalsNotConfigured"
)

// SignalAllRequest asks for one signal to each of many workflows.
type SignalAllRequest struct {
	// Signal is the signal's name.
	Signal string `json:"signal"`
	// Key names this request uniquely in the sender's history (its run and a sequence number):
	// each signal carries Key and its target as the server's request ID, so a retry sends
	// nothing twice.
	Key     string         `json:"key"`
	Targets []SignalTarget `json:"targets"`
}

// SignalTarget is one workflow and the signal's argument for it (JSON).
type SignalTarget struct {
	WorkflowID string          `json:"workflow_id"`
	Arg        json.RawMessage `json:"arg"`
}

// Signals sends signals from the worker: one activity for a block's worth of signals, where a
// workflow's own SignalExternalWorkflow costs it a workflow task for each (issue 26: a session
// answering 50 intents one task at a time kept a hook's take waiting behind them).
type Signals struct {
	Client    client.Client
	Namespace string
}

// signalParallel bounds the signals SignalAll has in flight.
const signalParallel = 16

// SignalAll signals every target, at most signalParallel at once. A workflow that no longer
// runs (an intent closed meanwhile) needs no answer and is passed over; any other failure fails
// the activity, whose retry repeats nothing the server already took (the request IDs).
func (s *Signals) SignalAll(ctx context.Context, req SignalAllRequest) error {
	if s == nil || s.Client == nil {
		return temporal.NewNonRetryableApplicationError("no Temporal client to signal with", ErrTypeSignalsNotConfigured, nil)
	}
	if req.Signal == "" || req.Key == "" {
		return temporal.NewNonRetryableApplicationError("signal request without a name or key", ErrTypeSignalRequestInvalid, nil)
	}
	ids := signalRequestIDs(req)
	var g errgroup.Group
	g.SetLimit(signalParallel)
	for i, t := range req.Targets {
		g.Go(func() error {
			input, err := tclient.Payloads().ToPayloads(t.Arg)
			if err != nil {
				return temporal.NewNonRetryableApplicationError(fmt.Sprintf("encode signal %s for %s: %v", req.Signal, t.WorkflowID, err), ErrTypeSignalRequestInvalid, err)
			}
			// The session's answers need no fsync of their own (tclient.CommitLater).
			_, err = s.Client.WorkflowService().SignalWorkflowExecution(tclient.CommitLater(ctx), &workflowservice.SignalWorkflowExecutionRequest{
				Namespace:         s.Namespace,
				WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: t.WorkflowID},
				SignalName:        req.Signal,
				Input:             input,
				Identity:          "intentq-worker",
				RequestId:         ids[i],
			})
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("signal %s to %s: %w", req.Signal, t.WorkflowID, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// signalRequestIDs are the server's request IDs of req's signals: Key and the target, and for a
// target named again in the same request (two results for one intent: its message and a
// reminder answered by one typing) also which time, so the server does not take the second for a
// retry of the first and drop it. A retry of the activity carries the same targets in the same
// order, so the same IDs.
func signalRequestIDs(req SignalAllRequest) []string {
	ids := make([]string, len(req.Targets))
	seen := map[string]int{}
	for i, t := range req.Targets {
		ids[i] = req.Key + "/" + t.WorkflowID
		if n := seen[t.WorkflowID]; n > 0 {
			ids[i] += fmt.Sprintf("#%d", n)
		}
		seen[t.WorkflowID]++
	}
	return ids
}
