package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/policy"
)

// The global limit on headless agent runs across all workers (SPEC P2) is one workflow that
// hands out permits: a run holds one while it runs, whatever worker executes it.
const (
	SemaphoreID           = "semaphore/agent-runs"
	SemaphoreWorkflowName = "Semaphore"
	SignalAcquire         = "acquire"
	SignalRelease         = "release"
	SignalPermits         = "permits"
	SignalGranted         = "permit-granted"
	QuerySemaphore        = "semaphore"
)

// SemaphoreRequest names the workflow that wants or returns a permit.
type SemaphoreRequest struct {
	Holder string `json:"holder"`
}

// SemaphoreState is the semaphore's state, carried over by continue-as-new.
type SemaphoreState struct {
	Permits int      `json:"permits"`
	Holders []string `json:"holders"`
	// Waiting are holders-to-be in arrival order.
	Waiting []string `json:"waiting"`
}

// SemaphoreWorkflow grants at most Permits permits at a time, first come first served. An
// acquire from a workflow that already holds a permit (a retried request) is granted again
// without taking a second one.
func SemaphoreWorkflow(ctx workflow.Context, st SemaphoreState) error {
	if st.Permits < 1 {
		st.Permits = 1
	}
	if err := workflow.SetQueryHandler(ctx, QuerySemaphore, func() (SemaphoreState, error) { return st, nil }); err != nil {
		return err
	}
	acquire := workflow.GetSignalChannel(ctx, SignalAcquire)
	release := workflow.GetSignalChannel(ctx, SignalRelease)
	permits := workflow.GetSignalChannel(ctx, SignalPermits)
	grant := func(holder string) {
		if err := workflow.SignalExternalWorkflow(ctx, holder, "", SignalGranted, SemaphoreRequest{Holder: holder}).Get(ctx, nil); err != nil {
			// The holder is gone: its permit goes back.
			st.Holders = remove(st.Holders, holder)
		}
	}
	releaseOne := func(r SemaphoreRequest) {
		st.Holders = remove(st.Holders, r.Holder)
		st.Waiting = remove(st.Waiting, r.Holder)
	}
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(acquire, func(c workflow.ReceiveChannel, _ bool) {
			// A holder releases and then asks again for its next run; when both signals are
			// pending, the selector may offer the acquire first. Apply pending releases first,
			// or the holder would be granted again while still counted, and others would starve.
			var rel SemaphoreRequest
			for release.ReceiveAsync(&rel) {
				releaseOne(rel)
			}
			var r SemaphoreRequest
			c.Receive(ctx, &r)
			switch {
			case contains(st.Holders, r.Holder):
				grant(r.Holder)
			case !contains(st.Waiting, r.Holder):
				st.Waiting = append(st.Waiting, r.Holder)
			}
		})
		sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
			var r SemaphoreRequest
			c.Receive(ctx, &r)
			releaseOne(r)
		})
		sel.AddReceive(permits, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &st.Permits) })
		sel.Select(ctx)
		for len(st.Holders) < st.Permits && len(st.Waiting) > 0 {
			next := st.Waiting[0]
			st.Waiting = st.Waiting[1:]
			st.Holders = append(st.Holders, next)
			grant(next)
		}
		if historyTooLong(ctx, policy.MaxHistoryEvents) &&
			acquire.Len() == 0 && release.Len() == 0 && permits.Len() == 0 {
			return workflow.NewContinueAsNewError(ctx, SemaphoreWorkflowName, st)
		}
	}
}

// AcquirePermit asks the semaphore for a permit for this workflow and waits until granted.
func AcquirePermit(ctx workflow.Context) error {
	me := workflow.GetInfo(ctx).WorkflowExecution.ID
	granted := workflow.GetSignalChannel(ctx, SignalGranted)
	// A grant left over from an earlier, re-asked acquire must not count for this one.
	for granted.ReceiveAsync(nil) {
	}
	if err := workflow.SignalExternalWorkflow(ctx, SemaphoreID, "", SignalAcquire, SemaphoreRequest{Holder: me}).Get(ctx, nil); err != nil {
		return err
	}
	for {
		var r SemaphoreRequest
		ok, _ := granted.ReceiveWithTimeout(ctx, 10*time.Minute, &r)
		if ok {
			return nil
		}
		// Ask again: a lost signal must not leave the run waiting forever.
		if err := workflow.SignalExternalWorkflow(ctx, SemaphoreID, "", SignalAcquire, SemaphoreRequest{Holder: me}).Get(ctx, nil); err != nil {
			return err
		}
	}
}

// ReleasePermit gives this workflow's permit back.
func ReleasePermit(ctx workflow.Context) {
	me := workflow.GetInfo(ctx).WorkflowExecution.ID
	_ = workflow.SignalExternalWorkflow(ctx, SemaphoreID, "", SignalRelease, SemaphoreRequest{Holder: me}).Get(ctx, nil)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func remove(list []string, s string) []string {
	out := list[:0]
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}
