package activities

import (
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// Issue 38: a typing heartbeats while it runs, so a worker that dies mid-typing is noticed by
// the heartbeat timeout (seconds), not the 30 s start-to-close timeout: a typing of 2.5 s under
// a heartbeat timeout of 1 s completes (it would time out without its heartbeats).
func TestInjectHeartbeatsWhileItTypes(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "-echo")
	tm := &Tmux{Socket: srv.socket, EnterDelay: 4 * time.Second}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute) // the activity takes real time
	env.RegisterActivityWithOptions(tm.Inject, activity.RegisterOptions{Name: TmuxInjectName})
	typing := func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, HeartbeatTimeout: 2 * time.Second})
		return workflow.ExecuteActivity(ctx, TmuxInjectName, InjectRequest{Target: "reader", Text: "slow enter"}).Get(ctx, nil)
	}
	env.RegisterWorkflowWithOptions(typing, workflow.RegisterOptions{Name: "typing"})
	env.ExecuteWorkflow("typing")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("a typing of 4 s under a heartbeat timeout of 2 s: %v", err)
	}
	waitFile(t, out, "slow enter\n")
}
