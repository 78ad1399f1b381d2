// Package workflows holds intentq's deterministic workflow code: policy lives here, side effects
// live in package activities.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

// ProbeWorkflowIDPrefix starts the IDs of doctor probes: `doctor/probe/<caller>/<unix-nanos>`.
const ProbeWorkflowIDPrefix = "doctor/probe/"

// Probe is the doctor's end-to-end check: a workflow task and an activity task both have to be
// picked up by a worker on the task queue. It returns the identity of the worker that ran the
// activity.
func Probe(ctx workflow.Context) (activities.WorkerInfo, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		// The doctor waits for one answer; retrying would only hide a broken worker.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var info activities.WorkerInfo
	err := workflow.ExecuteActivity(ctx, activities.ProbeActivityName).Get(ctx, &info)
	return info, err
}
