package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/intentq/intentq/internal/base/tclient"
)

// TestGroupSyncWaitsForAnFsyncThatBeganAfterTheCall: a caller that arrives while an fsync runs
// is not served by it (its commit may have come after that fsync began) but by the next, which
// every caller waiting then shares.
func TestGroupSyncWaitsForAnFsyncThatBeganAfterTheCall(t *testing.T) {
	var mu sync.Mutex
	var began []time.Time
	release := make(chan struct{})
	first := make(chan struct{})
	g := NewGroupSync(func() error {
		mu.Lock()
		began = append(began, time.Now())
		n := len(began)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
		return nil
	})
	done := make(chan struct{})
	go func() { _ = g.Sync(); close(done) }()
	<-first
	// Ten callers arrive while the first fsync runs.
	var wg sync.WaitGroup
	var returned atomic.Int32
	var arrived sync.WaitGroup
	arrivedAt := make([]time.Time, 10)
	for i := range 10 {
		wg.Add(1)
		arrived.Add(1)
		go func() {
			defer wg.Done()
			arrivedAt[i] = time.Now()
			arrived.Done()
			if err := g.Sync(); err != nil {
				t.Errorf("sync: %v", err)
			}
			returned.Add(1)
		}()
	}
	arrived.Wait()
	// Until the first fsync ends nobody who came later may return.
	select {
	case <-done:
		t.Fatal("the first caller returned before its fsync ended")
	default:
	}
	if n := returned.Load(); n != 0 {
		t.Fatalf("%d callers returned on an fsync that began before they called", n)
	}
	close(release)
	wg.Wait()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(began) != 2 {
		t.Fatalf("%d fsyncs for 11 callers, want 2 (the first, and one shared by the ten that came during it)", len(began))
	}
	for i, at := range arrivedAt {
		if !began[1].After(at) {
			t.Errorf("caller %d (at %v) was served by an fsync that began at %v", i, at, began[1])
		}
	}
}

// TestGroupSyncReportsTheFsyncsError: a failed fsync fails its callers; the next one that
// succeeds serves the callers after it.
func TestGroupSyncReportsTheFsyncsError(t *testing.T) {
	fail := true
	g := NewGroupSync(func() error {
		if fail {
			return errors.New("EIO")
		}
		return nil
	})
	if err := g.Sync(); err == nil {
		t.Fatal("a failed fsync reported success")
	}
	fail = false
	if err := g.Sync(); err != nil {
		t.Fatalf("sync after recovery: %v", err)
	}
}

// TestFileSync syncs an existing log and passes over a missing one (SQLite removed it after
// checkpointing everything).
func TestFileSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temporal.db-wal")
	if err := FileSync(path)(); err != nil {
		t.Fatalf("missing log: %v", err)
	}
	if err := os.WriteFile(path, []byte("frames"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := FileSync(path)(); err != nil {
		t.Fatalf("existing log: %v", err)
	}
	if err := FileSync(filepath.Join(path, "below-a-file"))(); err == nil {
		t.Fatal("a path that cannot be opened synced")
	}
}

// TestDurableCallsWaitsForClientsCallsOnly: a door's start, a hook's update, a signal and a
// cancel are answered after an fsync; a worker's polls and task completions and every read are
// not held up by one.
func TestDurableCallsWaitsForClientsCallsOnly(t *testing.T) {
	syncs := 0
	icpt := DurableCalls(func() error { syncs++; return nil })
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	call := func(method string) {
		t.Helper()
		resp, err := icpt(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/temporal.api.workflowservice.v1.WorkflowService/" + method}, handler)
		if err != nil || resp != "ok" {
			t.Fatalf("%s: %v %v", method, resp, err)
		}
	}
	for _, m := range []string{"StartWorkflowExecution", "SignalWithStartWorkflowExecution", "ExecuteMultiOperation",
		"SignalWorkflowExecution", "UpdateWorkflowExecution", "RequestCancelWorkflowExecution", "TerminateWorkflowExecution"} {
		before := syncs
		call(m)
		if syncs != before+1 {
			t.Errorf("%s answered without an fsync", m)
		}
	}
	for _, m := range []string{"PollWorkflowTaskQueue", "RespondWorkflowTaskCompleted", "PollActivityTaskQueue",
		"RespondActivityTaskCompleted", "RecordActivityTaskHeartbeat", "DescribeWorkflowExecution",
		"ListWorkflowExecutions", "CountWorkflowExecutions", "GetWorkflowExecutionHistory", "QueryWorkflow",
		"PollWorkflowExecutionUpdate", "DescribeTaskQueue"} {
		before := syncs
		call(m)
		if syncs != before {
			t.Errorf("%s waited for an fsync", m)
		}
	}
	// A call marked to commit later (a session's answers, a hook's words) passes through.
	before := syncs
	md, _ := metadata.FromOutgoingContext(tclient.CommitLater(context.Background()))
	if _, err := icpt(metadata.NewIncomingContext(context.Background(), md), nil,
		&grpc.UnaryServerInfo{FullMethod: "/x/SignalWorkflowExecution"}, handler); err != nil {
		t.Fatal(err)
	}
	if syncs != before {
		t.Error("a call marked to commit later waited for an fsync")
	}
	// A refusal is answered after an fsync too: "already started" may name a commit that is
	// not on disk yet.
	refused := status.Error(codes.AlreadyExists, "already started")
	before = syncs
	if _, err := icpt(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x/StartWorkflowExecution"},
		func(context.Context, any) (any, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Fatalf("refusal: %v", err)
	}
	if syncs != before+1 {
		t.Error("a refused start answered without an fsync")
	}
	// A failed fsync fails the call as unavailable (the client retries).
	failing := DurableCalls(func() error { return errors.New("EIO") })
	_, err := failing(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x/StartWorkflowExecution"}, handler)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("failed fsync: %v, want Unavailable", err)
	}
}
