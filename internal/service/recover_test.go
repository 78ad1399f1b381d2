package service_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"

	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

// slowReads makes the intents' state queries answer as after a crash on a loaded machine: the
// first reads of some intents time out, others answer late, so parallel reads finish out of
// arrival order.
type slowReads struct {
	interceptor.ClientInterceptorBase
	mu       sync.Mutex
	timeouts map[string]int           // workflow ID: reads left that time out
	delays   map[string]time.Duration // workflow ID: how late each read answers
}

func (s *slowReads) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	return &slowReadsOutbound{ClientOutboundInterceptorBase: interceptor.ClientOutboundInterceptorBase{Next: next}, s: s}
}

type slowReadsOutbound struct {
	interceptor.ClientOutboundInterceptorBase
	s *slowReads
}

func (o *slowReadsOutbound) QueryWorkflow(ctx context.Context, in *interceptor.ClientQueryWorkflowInput) (converter.EncodedValue, error) {
	o.s.mu.Lock()
	timeout := o.s.timeouts[in.WorkflowID] > 0
	if timeout {
		o.s.timeouts[in.WorkflowID]--
	}
	delay := o.s.delays[in.WorkflowID]
	o.s.mu.Unlock()
	if timeout {
		return nil, fmt.Errorf("query %s: %w", in.WorkflowID, context.DeadlineExceeded)
	}
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return o.Next.QueryWorkflow(ctx, in)
}

// Issue 24: after a crash mid-burst, Recover gave up at its first slow read and the doors
// opened anyway; the messages the dead worker had started were typed minutes later, after newer
// ones. Now a read that times out is asked again, reads run in parallel, and what the dead
// worker started is queued whole and in arrival order, however the reads finish.
func TestRecoverCompleteAndOrderedDespiteSlowReads(t *testing.T) {
	cfg := testenv.Config(t)
	pane := tmuxReader(t)
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	const n = 8
	slow := &slowReads{timeouts: map[string]int{}, delays: map[string]time.Duration{}}
	for i := 1; i <= n; i++ {
		id := workflows.IntentID("9", fmt.Sprint(i))
		switch i % 3 {
		case 2:
			slow.timeouts[id] = 2 // times out twice, answers on the third read
		case 1:
			slow.delays[id] = time.Duration(n-i) * 150 * time.Millisecond // the oldest answer last
		}
	}
	c, err := client.NewClientFromExisting(svc.Client(), client.Options{Namespace: cfg.Temporal.Namespace, Interceptors: []interceptor.ClientInterceptor{slow}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := intent.New(c, cfg)
	base := time.Now()
	for i := 1; i <= n; i++ {
		// Start only: the door died before QueueDelivery.
		if _, err := rec.Start(ctx, intent.Message{ChatID: "9", MessageID: fmt.Sprint(i), Text: fmt.Sprintf("started by the dead worker %d", i),
			Source: workflows.SourceTelegram, ReceivedAt: base.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "all pending in visibility", 20*time.Second, func() bool {
		list, err := intent.List(ctx, c, intent.Filter{Status: workflows.StatusPending, ChatID: "9"})
		return err == nil && len(list) == n
	})
	got, err := rec.Recover(ctx)
	if err != nil || got != n {
		t.Fatalf("Recover = %d, %v; want %d queued and no error", got, err, n)
	}
	slow.mu.Lock()
	for id, left := range slow.timeouts {
		if left != 0 {
			t.Errorf("%s: %d timed-out reads not asked again", id, left)
		}
	}
	slow.mu.Unlock()
	waitUntil(t, "every message in the pane", 30*time.Second, func() bool {
		b, _ := os.ReadFile(pane)
		return strings.Count(string(b), "started by the dead worker") == n
	})
	b, _ := os.ReadFile(pane)
	last := -1
	for i := 1; i <= n; i++ {
		at := strings.Index(string(b), fmt.Sprintf("started by the dead worker %d", i))
		if at < last || at < 0 {
			t.Fatalf("message %d out of order in the pane:\n%s", i, b)
		}
		last = at
	}
}
