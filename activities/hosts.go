package activities

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// HostServedName is Signals.HostServed.
const HostServedName = "HostServed"

// PollerFreshness is how recently a worker must have polled a task queue to count as alive.
const PollerFreshness = 2 * time.Minute

// HostServedRequest names a session's workflow.
type HostServedRequest struct {
	WorkflowID string `json:"workflow_id"`
}

// HostServedResult says on which task queue the session's workflow runs (its host's) and
// whether a worker polls it.
type HostServedResult struct {
	Queue  string `json:"queue"`
	Served bool   `json:"served"`
}

// HostServed reports whether the worker of a session's host is there (issue 38): the task
// queue the session's workflow runs on, and whether a worker polled its workflow tasks within
// PollerFreshness. An intent whose session does not answer asks it before it pushes a reminder
// itself.
func (s *Signals) HostServed(ctx context.Context, req HostServedRequest) (HostServedResult, error) {
	if s == nil || s.Client == nil {
		return HostServedResult{}, temporal.NewNonRetryableApplicationError("no Temporal client to describe sessions with", ErrTypeSignalsNotConfigured, nil)
	}
	desc, err := s.Client.DescribeWorkflowExecution(ctx, req.WorkflowID, "")
	if err != nil {
		return HostServedResult{}, fmt.Errorf("describe %s: %w", req.WorkflowID, err)
	}
	queue := desc.GetWorkflowExecutionInfo().GetTaskQueue()
	fresh, err := FreshPollers(ctx, s.Client, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return HostServedResult{}, err
	}
	return HostServedResult{Queue: queue, Served: len(fresh) > 0}, nil
}

// FreshPollers are the identities of the workers that polled taskQueue's tasks of kind within
// PollerFreshness.
func FreshPollers(ctx context.Context, c client.Client, taskQueue string, kind enumspb.TaskQueueType) ([]string, error) {
	resp, err := c.DescribeTaskQueue(ctx, taskQueue, kind)
	if err != nil {
		return nil, fmt.Errorf("describe task queue %s: %w", taskQueue, err)
	}
	var fresh []string
	for _, p := range resp.GetPollers() {
		if time.Since(p.GetLastAccessTime().AsTime()) < PollerFreshness {
			fresh = append(fresh, p.GetIdentity())
		}
	}
	return fresh, nil
}
