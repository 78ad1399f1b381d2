package service_test

// The real-system checker's worker and its faults, shared by the schedules that play at once:
// the worker restarted or away for longer than a lease (one outage at a time, seen by every
// schedule playing then), workflow tasks failing after an activity (armed per session), and a
// slow Telegram for one reply call at a time.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/doors/hooks/hooktemporal"
	"github.com/intentq/intentq/internal/service"
	"github.com/intentq/intentq/workflows"
)

// Between two faults of the worker that one schedule draws, the worker serves for a while: every
// fault is seen by all the schedules playing at once, and back to back they would keep the
// worker away for most of the time (a schedule that draws one too soon goes without).
const (
	restartGap = 20 * time.Second
	outageGap  = 150 * time.Second
)

// sharedWorker is the service the schedules share: stopped and started by any of them, between the
// others' calls.
type sharedWorker struct {
	// mu is held for reading by every call to the service (a hook, a reply, a look at an
	// intent), and for writing while the worker stops or starts: a restart falls between calls,
	// as it did when one schedule played at a time.
	mu   sync.RWMutex
	svc  *service.Service
	down bool // stopped for longer than a lease: the agents' hooks go on without it
	// up is closed when the worker is back from the outage under way.
	up chan struct{}
	// restarts and outages count the faults; backAt is when the worker last came back;
	// awayFor the time it was away before, and awaySince the start of the present outage.
	restarts, outages int
	backAt            time.Time
	awayFor           time.Duration
	awaySince         time.Time
	// outage is the goroutine that brings the worker back after an outage.
	outage sync.WaitGroup
}

// serving runs call with the worker as it is now, up or away (a hook of a working agent runs
// whether or not a worker answers it).
func (w *sharedWorker) serving(call func(svc *service.Service, down bool)) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	call(w.svc, w.down)
}

// whileUp runs call once the worker serves: what only a served agent or its person does (a reply,
// a look at an intent, a session start) waits for the end of an outage.
func (w *sharedWorker) whileUp(call func(svc *service.Service)) {
	for {
		w.mu.RLock()
		if !w.down {
			defer w.mu.RUnlock()
			call(w.svc)
			return
		}
		up := w.up
		w.mu.RUnlock()
		<-up
	}
}

// isDown reports whether an outage is under way.
func (w *sharedWorker) isDown() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.down
}

// upFor is how long the worker has served since began: a schedule's deadlines count only that
// time, since an outage another schedule drew stops every schedule's progress.
func (w *sharedWorker) upFor(began time.Time) time.Duration {
	w.mu.RLock()
	defer w.mu.RUnlock()
	away := w.awayFor
	if w.down {
		away += time.Since(w.awaySince)
	}
	return time.Since(began) - away
}

// faultCounts are the worker's faults so far, for a schedule to tell which it saw.
func (w *sharedWorker) faultCounts() (restarts, outages int) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.restarts, w.outages
}

// restart stops the worker (and its embedded server) and starts it again on the same data_dir,
// unless it came back less than restartGap ago or is away (then it reports false).
func (rs *realSystem) restart(t testing.TB) (bool, error) {
	w := &rs.worker
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down || time.Since(w.backAt) < restartGap {
		return false, nil
	}
	w.svc.Stop(context.Background())
	w.restarts++
	return true, rs.startLocked(t)
}

// stopForLonger stops the worker for d, longer than a take's lease (the agents go on meanwhile:
// their hooks find no worker and record what they printed), unless an outage is under way or the
// last ended less than outageGap ago (then it reports false).
func (rs *realSystem) stopForLonger(t testing.TB, d time.Duration) bool {
	w := &rs.worker
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down || (w.outages > 0 && time.Since(w.backAt) < outageGap) {
		return false
	}
	w.svc.Stop(context.Background())
	w.down, w.up, w.awaySince = true, make(chan struct{}), time.Now()
	w.outages++
	w.outage.Add(1)
	go func() {
		defer w.outage.Done()
		time.Sleep(d) // the outage's length, drawn by the schedule: nothing to wait for
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := rs.startLocked(t); err != nil {
			t.Errorf("the worker back from an outage: %v", err)
		}
		w.down = false
		w.awayFor += time.Since(w.awaySince)
		close(w.up)
	}()
	return true
}

// startLocked starts the worker on the same data_dir (w.mu held).
func (rs *realSystem) startLocked(t testing.TB) error {
	w := &rs.worker
	for attempt := 1; ; attempt++ {
		svc, err := service.Start(context.Background(), rs.cfg, zap.NewNop(), service.WithWorkerInterceptors(rs.faults))
		if err == nil {
			w.svc, w.backAt = svc, time.Now()
			t.Cleanup(func() { svc.Stop(context.Background()) })
			return nil
		}
		if attempt == 5 {
			return fmt.Errorf("restart: %w", err)
		}
		time.Sleep(time.Second) // the embedded server's ports and database, let go by the stop
	}
}

// dialer is a hook's backend as the worker is: its desk, and Temporal when the desk does not
// answer; while the worker is away (with it the embedded server), dialing Temporal fails as it
// would.
func (rs *realSystem) dialer(svc *service.Service, down bool) hooks.Dial {
	return func(context.Context) (hooks.Backend, func(), error) {
		if down {
			temporal, closeFn := hooks.Lazy(func(context.Context) (hooks.Backend, func(), error) {
				return nil, nil, errors.New("dial 127.0.0.1: connection refused")
			})
			return hooks.ThroughDesk(rs.cfg.DataDir, svc.Token(), temporal), closeFn, nil
		}
		return hooks.ThroughDesk(rs.cfg.DataDir, svc.Token(), hooktemporal.Temporal{Client: svc.Client(), Config: rs.cfg}), func() {}, nil
	}
}

// slowTelegram is the Bot API stand-in behind a slow link, for one reply call at a time: a
// message is sent 1.5 s after it was asked for, whether or not the caller still waits (so the
// call may end in an error after its answer went out). The other schedules' calls, and the
// worker's, stay fast.
func slowTelegram(t testing.TB, target string) *httptest.Server {
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(strings.ToLower(r.URL.Path), "/sendmessage") {
			time.Sleep(1500 * time.Millisecond) // the slow link itself
		}
		out := r.Clone(context.WithoutCancel(r.Context()))
		out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = to.Scheme, to.Host, to.Host, ""
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// taskFaults fails a workflow task of a session right after an activity or local activity
// completed (once per point, while the fault is armed for that session): the retried task runs
// again from the history, and a local activity runs again.
type taskFaults struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex
	armed map[string]func() bool // by session workflow ID
	done  map[string]bool
	count int
}

func (f *taskFaults) failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

// arm makes the session's tasks fail when armed says so; nil disarms.
func (f *taskFaults) arm(workflowID string, armed func() bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if armed == nil {
		delete(f.armed, workflowID)
		return
	}
	f.armed[workflowID] = armed
}

// fail reports whether the task at point of the session workflowID fails now (each point once).
func (f *taskFaults) fail(workflowID, point string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	armed := f.armed[workflowID]
	if armed == nil || f.done[point] || !armed() {
		return false
	}
	f.done[point] = true
	f.count++
	return true
}

func (f *taskFaults) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &faultyInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, f: f}
}

type faultyInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	f *taskFaults
}

func (i *faultyInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&faultyOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, f: i.f})
}

// faultyOutbound numbers the session's activities as its code schedules them (the same on every
// replay): a point is the run and that number.
type faultyOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	f   *taskFaults
	seq int
}

func (o *faultyOutbound) wrap(ctx workflow.Context, fut workflow.Future) workflow.Future {
	info := workflow.GetInfo(ctx)
	if info.WorkflowType.Name != workflows.SessionWorkflowName {
		return fut
	}
	o.seq++
	return &faultyFuture{Future: fut, session: info.WorkflowExecution.ID, point: fmt.Sprintf("%s/%d", info.WorkflowExecution.RunID, o.seq), f: o.f}
}

func (o *faultyOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	return o.wrap(ctx, o.Next.ExecuteActivity(ctx, activityType, args...))
}

func (o *faultyOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	return o.wrap(ctx, o.Next.ExecuteLocalActivity(ctx, activityType, args...))
}

type faultyFuture struct {
	workflow.Future
	session, point string
	f              *taskFaults
}

// Get fails the workflow task (a panic: the SDK fails the task and the server retries it) once
// the activity's result is in, when the fault says so.
func (ff *faultyFuture) Get(ctx workflow.Context, v any) error {
	err := ff.Future.Get(ctx, v)
	if !workflow.IsReplaying(ctx) && ff.f.fail(ff.session, ff.point) {
		panic("checker: the workflow task fails right after an activity")
	}
	return err
}
