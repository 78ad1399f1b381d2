package hooks

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
)

// Events the starter's `hook` command answers.
const (
	EventSessionStart = "session-start"
	EventPostToolUse  = "post-tool-use"
	EventStop         = "stop"
)

// MaxTimeout caps every hook's time (SPEC S4).
const MaxTimeout = 10 * time.Second

// Dial connects the backend; it must honour ctx.
type Dial func(ctx context.Context) (Backend, func(), error)

// Run answers one hook event: it reads the input from stdin, runs the handler against the
// backend within timeout (at most MaxTimeout) and prints the output. Whatever goes wrong,
// malformed input, Temporal down, a slow cluster, it allows (prints nothing) and logs why: a
// hook never wedges the agent.
func Run(ctx context.Context, event string, stdin io.Reader, stdout io.Writer, s Settings, dial Dial, timeout time.Duration) error {
	handler, ok := map[string]func(context.Context, Backend, Settings, Input) (Output, error){
		EventSessionStart: SessionStart,
		EventPostToolUse:  PostToolUse,
		EventStop:         Stop,
	}[event]
	if !ok {
		return fmt.Errorf("unknown hook event %q (session-start, post-tool-use, stop)", event)
	}
	log := s.logger().With(zap.String("hook", event), zap.String("session", s.Session))
	in, err := ReadInput(stdin)
	if err != nil {
		log.Warn("hook input unusable; allowing", zap.Error(err))
		return nil
	}
	if timeout <= 0 || timeout > MaxTimeout {
		timeout = min(max(timeout, 0), MaxTimeout)
		if timeout == 0 {
			timeout = 5 * time.Second
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	done := make(chan Output, 1)
	go func() {
		out, err := func() (Output, error) {
			b, closeFn, err := dial(ctx)
			if err != nil {
				return Output{}, err
			}
			defer closeFn()
			return handler(ctx, b, s, in)
		}()
		if err != nil {
			log.Warn("hook could not complete; allowing", zap.Error(err))
			out = Output{}
		}
		done <- out
	}()
	select {
	case out := <-done:
		return Write(stdout, out)
	case <-ctx.Done():
		log.Warn("hook ran out of time; allowing", zap.Duration("timeout", timeout))
		return nil
	}
}
