package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/platform/embedded"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

const taskQueue = "embedded-test"

// sleeper waits on a durable timer, so it can only finish if the timer outlives a restart.
func sleeper(ctx workflow.Context, d time.Duration) (string, error) {
	if err := workflow.Sleep(ctx, d); err != nil {
		return "", err
	}
	return "woke", nil
}

// testToken is the access token the tests' servers require.
const testToken = "0123456789abcdef0123456789abcdef"

func options(t *testing.T, dir string, retention time.Duration) embedded.Options {
	return embedded.Options{
		Token:            testToken,
		DataDir:          dir,
		IP:               "127.0.0.1",
		Port:             testenv.FreePort(t),
		UIPort:           testenv.FreePort(t),
		Namespace:        "default",
		Retention:        retention,
		SearchAttributes: workflows.SearchAttributes(),
	}
}

func dial(t *testing.T, s *embedded.Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.FrontendAddress(), Namespace: "default",
		Credentials: client.NewAPIKeyStaticCredentials(testToken), ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRestartKeepsWorkflows starts a workflow with a timer, stops the server before the timer
// fires, starts a new server on the same data directory and sees the workflow complete.
func TestRestartKeepsWorkflows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := options(t, dir, 30*24*time.Hour)

	s1, err := embedded.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	c1 := dial(t, s1)

	desc, err := c1.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != 30*24*time.Hour {
		t.Errorf("retention = %s, want 720h", got)
	}
	missing, err := tclient.MissingSearchAttributes(ctx, c1, "default", workflows.SearchAttributes())
	if err != nil || len(missing) > 0 {
		t.Errorf("search attributes missing on a new namespace: %v %v", missing, err)
	}
	req, _ := http.NewRequest(http.MethodGet, s1.UIURL()+"/namespaces/default/workflows", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("web UI answered %s", resp.Status)
	}

	run, err := c1.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "restart/sleeper", TaskQueue: taskQueue}, sleeper, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A worker picks up the first task and schedules the timer; then everything goes down.
	w1 := worker.New(c1, taskQueue, worker.Options{})
	w1.RegisterWorkflow(sleeper)
	if err := w1.Start(); err != nil {
		t.Fatal(err)
	}
	waitForTimer(t, c1, run)
	w1.Stop()
	c1.Close()
	if err := s1.Stop(); err != nil {
		t.Fatal(err)
	}

	// Same data directory, same ports: the server must come back with the workflow.
	s2, err := embedded.Start(ctx, opts)
	if err != nil {
		t.Fatalf("restart on the same data dir: %v", err)
	}
	defer s2.Stop()
	c2 := dial(t, s2)
	defer c2.Close()
	w2 := worker.New(c2, taskQueue, worker.Options{})
	w2.RegisterWorkflow(sleeper)
	if err := w2.Start(); err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()

	getCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out string
	if err := c2.GetWorkflow(getCtx, run.GetID(), run.GetRunID()).Get(getCtx, &out); err != nil {
		t.Fatalf("workflow started before the restart did not complete: %v", err)
	}
	if out != "woke" {
		t.Errorf("result = %q", out)
	}
}

// waitForTimer waits until the workflow's first task ran and its timer is pending.
func waitForTimer(t *testing.T, c client.Client, run client.WorkflowRun) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		iter := c.GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, 0)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetTimerStartedEventAttributes() != nil {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("timer never started")
}

// TestRetentionReconciled: an existing namespace keeps its data but gets the configured
// retention through EnsureNamespace, as the worker does at every start.
func TestRetentionReconciled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := options(t, dir, 48*time.Hour)
	s, err := embedded.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c := dial(t, s)
	defer c.Close()
	if err := tclient.EnsureNamespace(ctx, c, tclient.NamespaceSpec{Name: "default", Retention: 72 * time.Hour, SearchAttributes: workflows.SearchAttributes()}); err != nil {
		t.Fatal(err)
	}
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != 72*time.Hour {
		t.Errorf("retention = %s, want 72h", got)
	}
}

// Issue 15: list calls back to back, as hooks, `starter pending` and the Web UI make them, are
// served, not refused by a per-namespace rate limit meant for a shared cluster (the SDK hides a
// refusal behind a back-off of hundreds of milliseconds; a raw client sees it).
func TestVisibilityNotThrottled(t *testing.T) {
	ctx := context.Background()
	s, err := embedded.Start(ctx, options(t, t.TempDir(), 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	conn, err := grpc.NewClient(s.FrontendAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	svc := workflowservice.NewWorkflowServiceClient(conn)
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+testToken)
	for i := 0; i < 50; i++ {
		_, err := svc.ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", PageSize: 10, Query: "WorkflowType = 'Intent'"})
		if err != nil {
			t.Fatalf("list call %d: %v", i+1, err)
		}
	}
}

// TestPortInUse: a taken port is a clear error naming the address and the config key, and
// nothing is started.
func TestPortInUse(t *testing.T) {
	for _, which := range []string{"port", "ui_port"} {
		t.Run(which, func(t *testing.T) {
			opts := options(t, t.TempDir(), 24*time.Hour)
			port := opts.Port
			if which == "ui_port" {
				port = opts.UIPort
			}
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()

			s, err := embedded.Start(context.Background(), opts)
			if err == nil {
				s.Stop()
				t.Fatal("Start succeeded on a taken port")
			}
			var inUse *embedded.PortInUseError
			if !errors.As(err, &inUse) {
				t.Fatalf("err = %v (%T), want *PortInUseError", err, err)
			}
			key := "temporal.embedded." + which
			if inUse.Key != key || inUse.Addr != l.Addr().String() {
				t.Errorf("error names %s %s, want %s %s", inUse.Key, inUse.Addr, key, l.Addr())
			}
			msg := err.Error()
			for _, want := range []string{l.Addr().String(), key, "INTENTQ_TEMPORAL_EMBEDDED_" + map[string]string{"port": "PORT", "ui_port": "UI_PORT"}[which]} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
}

// publishAgentState upserts the AgentState search attribute, as a session does.
func publishAgentState(ctx workflow.Context) error {
	return workflow.UpsertTypedSearchAttributes(ctx, workflows.AgentStateKey.ValueSet(workflows.AgentIdle))
}

// A data_dir made by an older intentq lacks a newer search attribute: the server adds it at
// start and every service uses it at once (without the debug-only refresh on every read).
func TestSearchAttributeAddedToExistingDataDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := options(t, dir, 24*time.Hour)
	old.SearchAttributes = workflows.SearchAttributes()
	delete(old.SearchAttributes, workflows.AgentStateKey.GetName())
	s1, err := embedded.Start(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Stop(); err != nil {
		t.Fatal(err)
	}

	s2, err := embedded.Start(ctx, options(t, dir, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	c := dial(t, s2)
	defer c.Close()
	if missing, err := tclient.MissingSearchAttributes(ctx, c, "default", workflows.SearchAttributes()); err != nil || len(missing) > 0 {
		t.Fatalf("after start: missing %v, %v", missing, err)
	}
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(publishAgentState)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	runCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(runCtx, client.StartWorkflowOptions{ID: "sa/upsert", TaskQueue: taskQueue, WorkflowTaskTimeout: time.Second}, publishAgentState)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(runCtx, nil); err != nil {
		t.Fatalf("a workflow upserting the added attribute: %v", err)
	}
	resp, err := c.ListWorkflow(runCtx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("%s = %q", workflows.AgentStateKey.GetName(), workflows.AgentIdle)})
	if err != nil {
		t.Fatalf("a list by the added attribute: %v", err)
	}
	_ = resp // visibility is eventually consistent: the query being accepted is what counts here
}
