package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/platform/watchdog"
	"github.com/intentq/intentq/internal/service"
)

// Issue 24: after an ntfy outage the person heard three alerts within 48 s: the sessions'
// alert desks' summary and the watchdog's "reminders failed", which had counted every refused
// push. The worker's watchdog counts failed typing only; failed pushes stay with the desks.
func TestOneAlertVoiceAfterNtfyOutage(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	window := &watchdog.FailureWindow{Window: 10 * time.Minute, Limit: 10}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{service.AlarmingFailures(window)}})
	env.RegisterActivityWithOptions(func(context.Context) error { return errors.New("ntfy: 503") }, activity.RegisterOptions{Name: activities.NtfyPublishName})
	env.RegisterActivityWithOptions(func(context.Context) error { return errors.New("tmux: no pane") }, activity.RegisterOptions{Name: activities.TmuxInjectName})
	check := window.Check("reminders", "reminder deliveries")
	var outage, typing string
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		// A minute per attempt: the test environment moves its clock on by each retry's second,
		// and under load an attempt still running then timed out instead of failing (no typing
		// failure counted, no alert).
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1, MaximumAttempts: 15}})
		_ = workflow.ExecuteActivity(ctx, activities.NtfyPublishName).Get(ctx, nil)
		outage, _ = check.Run(context.Background())
		_ = workflow.ExecuteActivity(ctx, activities.TmuxInjectName).Get(ctx, nil)
		typing, _ = check.Run(context.Background())
		return nil
	}, workflow.RegisterOptions{Name: "W"})
	env.ExecuteWorkflow("W")
	if outage != "" {
		t.Errorf("15 refused pushes: the watchdog alerts %q beside the desks' summary", outage)
	}
	if !strings.Contains(typing, "failed") {
		t.Errorf("15 failed typings: watchdog says %q, want an alert", typing)
	}
}
