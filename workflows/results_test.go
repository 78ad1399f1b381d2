package workflows

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/intentq/intentq/activities"
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
