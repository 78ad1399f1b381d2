package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/platform/watchdog"
	"github.com/intentq/intentq/internal/service"
)

// Issue 24: after an ntfy outage the person heard three alerts within 48 s: the sessions'
// alert desks' summary and the watchdog's "reminders failed", which had counted every refused
// push. The worker's watchdog counts failed typing only; failed pushes stay with the desks.
func TestOneAlertVoiceAfterNtfyOutage(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	// Each attempt run as the worker runs it, through its interceptors (no workflow, no retry
	// timers: the test environment's clock once timed an attempt out under load).
	env := suite.NewTestActivityEnvironment()
	window := &watchdog.FailureWindow{Window: 10 * time.Minute, Limit: 10}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{service.AlarmingFailures(window)}})
	env.RegisterActivityWithOptions(func(context.Context) error { return errors.New("ntfy: 503") }, activity.RegisterOptions{Name: activities.NtfyPublishName})
	env.RegisterActivityWithOptions(func(context.Context) error { return errors.New("tmux: no pane") }, activity.RegisterOptions{Name: activities.TmuxInjectName})
	check := window.Check("reminders", "reminder deliveries")
	// 15 attempts that ran the activity and failed with its own error: under make test's load
	// the test environment now and then ends an attempt before it runs (its own timeout), which
	// no worker counts either; such an attempt is made again.
	var others []string // the errors of the attempts that did not run
	attempts := func(name, own string) {
		ran := 0
		for tries := 0; ran < 15; tries++ {
			if tries == 100 {
				t.Fatalf("%s ran %d times in 100 tries", name, ran)
			}
			_, err := env.ExecuteActivity(name)
			if err == nil {
				t.Fatalf("%s succeeded", name)
			}
			if strings.Contains(err.Error(), own) {
				ran++
			} else {
				others = append(others, err.Error())
			}
		}
	}
	attempts(activities.NtfyPublishName, "ntfy: 503")
	if outage, _ := check.Run(context.Background()); outage != "" {
		t.Errorf("15 refused pushes: the watchdog alerts %q beside the desks' summary", outage)
	}
	attempts(activities.TmuxInjectName, "tmux: no pane")
	if typing, _ := check.Run(context.Background()); !strings.Contains(typing, "failed") {
		t.Errorf("15 failed typings: watchdog says %q, want an alert (attempts that did not run: %q)", typing, others)
	}
}
