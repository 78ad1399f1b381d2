package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/intentq/intentq/internal/base/tclient"
)

// The embedded server's SQLite commits at synchronous=normal: a commit is in the write-ahead
// log, safe from a crash of any process, but reaches the disk only at the next fsync. A call
// that a client makes from outside a worker's task (a door starting an intent, a hook or
// `starter reply` updating a workflow, a signal, a cancel) is answered only once an fsync of the
// log that began after its commit has completed: what the server acknowledged to a door
// survives a power loss, so a Telegram offset or an ingest 200 never outruns the disk. Calls of
// a worker's task (polls, task completions, heartbeats) are not waited for: after a power loss
// the log ends at an earlier commit, consistent as a whole (the log is a prefix), and those
// tasks run again, as after a worker crash. Concurrent calls share one fsync (a group commit):
// with an fsync per commit, one SQLite connection committed 50 sessions x 100 messages in 57 s,
// not the 60 s end to end issue 38 asks.

// GroupSync makes the write-ahead log durable for every caller at once: Sync returns once an
// fsync that began after the call has completed, so callers that arrive while one runs share
// the next.
type GroupSync struct {
	fsync func() error

	mu       sync.Mutex
	cond     *sync.Cond
	running  bool
	started  uint64
	finished uint64
	err      error
}

// NewGroupSync returns a GroupSync that runs fsync; FileSync(path) is the real one.
func NewGroupSync(fsync func() error) *GroupSync {
	g := &GroupSync{fsync: fsync}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Sync waits for an fsync that began after it was called, running one when none runs.
func (g *GroupSync) Sync() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	need := g.started + 1
	for g.finished < need {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		g.started++
		gen := g.started
		g.mu.Unlock()
		err := g.fsync()
		g.mu.Lock()
		g.running = false
		g.finished, g.err = gen, err
		g.cond.Broadcast()
	}
	return g.err
}

// FileSync returns a function that fsyncs the file at path (opened anew each time: SQLite
// deletes and creates its log when its last connection closes and opens). A missing file has
// nothing to sync: SQLite removes its log only once everything in it is in the database,
// synced.
func FileSync(path string) func() error {
	return func() error {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", path, err)
		}
		return nil
	}
}

// workerTaskCalls are the frontend's calls a worker makes while it runs a task, and the reads
// readCall does not know by their names: their commits are not waited for (see above).
var workerTaskCalls = map[string]bool{
	"PollWorkflowTaskQueue":            true,
	"PollActivityTaskQueue":            true,
	"PollNexusTaskQueue":               true,
	"RespondWorkflowTaskCompleted":     true,
	"RespondWorkflowTaskFailed":        true,
	"RespondQueryTaskCompleted":        true,
	"RespondActivityTaskCompleted":     true,
	"RespondActivityTaskFailed":        true,
	"RespondActivityTaskCanceled":      true,
	"RespondActivityTaskCompletedById": true,
	"RespondActivityTaskFailedById":    true,
	"RespondActivityTaskCanceledById":  true,
	"RecordActivityTaskHeartbeat":      true,
	"RecordActivityTaskHeartbeatById":  true,
	"RespondNexusTaskCompleted":        true,
	"RespondNexusTaskFailed":           true,
	"ShutdownWorker":                   true,
	"ResetStickyTaskQueue":             true,
	"RecordWorkerHeartbeat":            true,
	"QueryWorkflow":                    true,
	"PollWorkflowExecutionUpdate":      true,
}

// readCall reports whether a call only reads.
func readCall(method string) bool {
	for _, prefix := range []string{"Describe", "List", "Count", "Get", "Scan"} {
		if strings.HasPrefix(method, prefix) {
			return true
		}
	}
	return false
}

// commitLater reports whether the call asked to be answered before its fsync
// (tclient.CommitLater).
func commitLater(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(tclient.CommitLaterKey)) > 0
}

// DurableCalls is the frontend interceptor that answers a client's call only once its commit
// is on disk (durable, a GroupSync's Sync); a worker's task calls, reads and calls marked
// tclient.CommitLater pass through. A failed fsync fails the call as unavailable: the client
// retries, and every call intentq makes is idempotent (a start finds its intent, an update its
// ID).
func DurableCalls(durable func() error) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
		if workerTaskCalls[method] || readCall(method) || commitLater(ctx) {
			return resp, err
		}
		// Also after a refusal: "already started" may name a commit not yet on disk.
		if serr := durable(); serr != nil {
			return nil, status.Errorf(codes.Unavailable, "embedded temporal: commit not durable: %v", serr)
		}
		return resp, err
	}
}
