package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// HeartbeatEvery is how often a pane's activities tell the server they are alive. With the
// session's heartbeat timeout a few times this, a worker that died while typing is noticed in
// seconds and the typing resumes (its markers say what went in), not after the whole
// start-to-close timeout (issue 38).
const HeartbeatEvery = time.Second

// keepAlive heartbeats for the activity of ctx every HeartbeatEvery until the returned stop is
// called; outside an activity it does nothing.
func keepAlive(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	activity.RecordHeartbeat(ctx)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(HeartbeatEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
