package watchdog

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// CountFailures returns a worker interceptor that adds to window every failed attempt of the
// named activity types (the reminder's tmux and ntfy activities).
func CountFailures(window *FailureWindow, activityTypes ...string) interceptor.WorkerInterceptor {
	types := map[string]bool{}
	for _, t := range activityTypes {
		types[t] = true
	}
	return &failureCounter{window: window, types: types}
}

type failureCounter struct {
	interceptor.WorkerInterceptorBase
	window *FailureWindow
	types  map[string]bool
}

func (f *failureCounter) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityCounter{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, f: f}
}

type activityCounter struct {
	interceptor.ActivityInboundInterceptorBase
	f *failureCounter
}

func (a *activityCounter) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (interface{}, error) {
	out, err := a.Next.ExecuteActivity(ctx, in)
	if err != nil && a.f.types[activity.GetInfo(ctx).ActivityType.Name] {
		a.f.window.Add()
	}
	return out, err
}
