package watchdog

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
	"github.com/intentq/intentq/internal/testkit/fakentfy"
)

// I9: each condition alerts once when it appears, stays quiet while unchanged, alerts again
// when it changes, and says when it is resolved; pushes carry metadata only.
func TestI9AlertsOnChangeOnly(t *testing.T) {
	ntfy := fakentfy.New()
	defer ntfy.Close()
	problem := ""
	w := &Watchdog{
		Checks: []Check{{Name: "worker", Run: func(context.Context) (string, error) { return problem, nil }}},
		Ntfy:   &activities.Ntfy{URL: ntfy.URL()}, Topic: "ops",
	}
	ctx := context.Background()
	w.RunOnce(ctx) // fine
	problem = `no worker polls workflow tasks on task queue "intentq"`
	w.RunOnce(ctx)
	w.RunOnce(ctx) // unchanged: quiet
	problem = `no worker polls activity tasks on task queue "intentq"`
	w.RunOnce(ctx)
	problem = ""
	w.RunOnce(ctx)
	w.RunOnce(ctx)
	msgs := ntfy.Messages()
	if len(msgs) != 3 {
		t.Fatalf("%d alerts, want 3 (appeared, changed, resolved): %+v", len(msgs), msgs)
	}
	if !strings.Contains(msgs[0].Message, "workflow tasks") || !strings.Contains(msgs[1].Message, "activity tasks") || !strings.HasPrefix(msgs[2].Message, "resolved") {
		t.Errorf("alerts = %q, %q, %q", msgs[0].Message, msgs[1].Message, msgs[2].Message)
	}
	if msgs[0].Topic != "ops" || msgs[0].Priority != 4 {
		t.Errorf("alert = %+v", msgs[0])
	}
	if len(w.Problems()) != 0 {
		t.Errorf("problems = %v", w.Problems())
	}
}

// Hardening: alerts that ntfy did not take are kept and pushed once, summarised, when it
// answers again.
func TestI9AlertsHeldWhileNtfyIsDown(t *testing.T) {
	ntfy := fakentfy.New()
	defer ntfy.Close()
	problem := ""
	w := &Watchdog{
		Checks: []Check{{Name: "worker", Run: func(context.Context) (string, error) { return problem, nil }}},
		Ntfy:   &activities.Ntfy{URL: ntfy.URL()}, Topic: "ops",
	}
	ctx := context.Background()
	ntfy.FailAlways(502)
	problem = "no worker polls the task queue"
	w.RunOnce(ctx)
	problem = ""
	w.RunOnce(ctx)
	w.RunOnce(ctx)
	ntfy.Recover()
	w.RunOnce(ctx)
	w.RunOnce(ctx)
	msgs := ntfy.Messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Message, "2 watchdog alerts") ||
		!strings.Contains(msgs[0].Message, "no worker polls") || !strings.Contains(msgs[0].Message, "resolved") {
		t.Fatalf("after ntfy is back: %+v, want one summary of the 2 missed alerts", msgs)
	}
}

// A check that cannot run changes nothing.
func TestCheckErrorKeepsState(t *testing.T) {
	w := &Watchdog{Checks: []Check{{Name: "x", Run: func(context.Context) (string, error) { return "", errors.New("temporal down") }}}}
	w.RunOnce(context.Background())
	if len(w.Problems()) != 0 {
		t.Errorf("problems = %v", w.Problems())
	}
}

// I9: more than 10 failures within 10 minutes is a condition; they age out of the window.
func TestI9FailureWindow(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	f := &FailureWindow{Window: 10 * time.Minute, Limit: 10, Now: func() time.Time { return now }}
	check := f.Check("reminders", "reminders")
	for i := 0; i < 10; i++ {
		f.Add()
		now = now.Add(30 * time.Second)
	}
	if p, _ := check.Run(context.Background()); p != "" {
		t.Errorf("10 failures: %q, want fine", p)
	}
	f.Add()
	if p, _ := check.Run(context.Background()); !strings.Contains(p, "11 reminders failed") {
		t.Errorf("11 failures: %q", p)
	}
	now = now.Add(10 * time.Minute)
	if p, _ := check.Run(context.Background()); p != "" {
		t.Errorf("after the window: %q", p)
	}
}

// The interceptor counts failed attempts of the watched activity types only.
func TestCountFailuresInterceptor(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	f := &FailureWindow{Window: time.Hour, Limit: 100}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{CountFailures(f, activities.NtfyPublishName)}})
	env.RegisterActivityWithOptions(func(context.Context) error { return errors.New("ntfy 500") }, activity.RegisterOptions{Name: activities.NtfyPublishName})
	env.RegisterActivityWithOptions(func(context.Context) error { return errors.New("other") }, activity.RegisterOptions{Name: "Other"})
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Second, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}})
		_ = workflow.ExecuteActivity(ctx, activities.NtfyPublishName).Get(ctx, nil)
		_ = workflow.ExecuteActivity(ctx, "Other").Get(ctx, nil)
		return nil
	}, workflow.RegisterOptions{Name: "W"})
	env.ExecuteWorkflow("W")
	if p, _ := f.Check("c", "x").Run(context.Background()); p != "" {
		t.Fatal(p)
	}
	f.mu.Lock()
	n := len(f.times)
	f.mu.Unlock()
	if n != 3 {
		t.Errorf("counted %d failures, want 3 (the watched activity's attempts only)", n)
	}
}
