package hooks

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/workflows"
)

// Events the starter's `hook` command answers.
const (
	EventSessionStart     = workflows.EventSessionStart
	EventUserPromptSubmit = workflows.EventUserPromptSubmit
	EventPreToolUse       = workflows.EventPreToolUse
	EventPostToolUse      = workflows.EventPostToolUse
	EventStop             = workflows.EventStop
	EventNotification     = workflows.EventNotification
)

// ClaudeEvent pairs Claude Code's name of a hook event with the starter's argument for it.
type ClaudeEvent struct{ Name, Arg string }

// ClaudeEvents are the hooks intentq installs (setup) and expects (doctor).
var ClaudeEvents = []ClaudeEvent{
	{"SessionStart", EventSessionStart},
	{"UserPromptSubmit", EventUserPromptSubmit},
	{"PreToolUse", EventPreToolUse},
	{"PostToolUse", EventPostToolUse},
	{"Stop", EventStop},
	{"Notification", EventNotification},
}

// Events are the starter's arguments, in ClaudeEvents' order.
func Events() []string {
	var args []string
	for _, e := range ClaudeEvents {
		args = append(args, e.Arg)
	}
	return args
}

// handlers answer the events.
var handlers = map[string]func(context.Context, Backend, Settings, Input) (Answer, error){
	EventSessionStart:     SessionStart,
	EventUserPromptSubmit: UserPromptSubmit,
	EventPreToolUse:       PreToolUse,
	EventPostToolUse:      PostToolUse,
	EventStop:             Stop,
	EventNotification:     Notification,
}

// MaxTimeout caps every hook's time (SPEC S4).
const MaxTimeout = 10 * time.Second

// Dial connects the backend; it must honour ctx.
type Dial func(ctx context.Context) (Backend, func(), error)

// Run answers one hook event: it reads the input from stdin, runs the handler against the
// backend within timeout (at most MaxTimeout), prints the output and then commits the messages
// it printed. Whatever goes wrong, malformed input, Temporal down, a slow cluster, it allows
// (prints nothing, commits nothing) and logs why: a hook never wedges the agent.
func Run(ctx context.Context, event string, stdin io.Reader, stdout io.Writer, s Settings, dial Dial, timeout time.Duration) error {
	handler, ok := handlers[event]
	if !ok {
		return fmt.Errorf("unknown hook event %q (%s)", event, strings.Join(Events(), ", "))
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

	type result struct {
		answer  Answer
		backend Backend
		closeFn func()
	}
	done := make(chan result, 1)
	go func() {
		b, closeFn, err := dial(ctx)
		if err != nil {
			log.Warn("hook could not reach Temporal; allowing", zap.Error(err))
			done <- result{}
			return
		}
		answer, err := handler(ctx, b, s, in)
		if err != nil {
			log.Warn("hook could not complete", zap.Error(err))
		}
		done <- result{answer, b, closeFn}
	}()
	select {
	case r := <-done:
		if r.closeFn != nil {
			defer r.closeFn()
		}
		if err := Write(stdout, r.answer.Output); err != nil {
			return err // not printed: not committed, the messages wait again
		}
		commitPrinted(ctx, r.backend, s.Session, r.answer, log)
		return nil
	case <-ctx.Done():
		log.Warn("hook ran out of time; allowing", zap.Duration("timeout", timeout))
		return nil
	}
}

// commitPrinted commits what a hook printed, the take and the context block at once (two
// signals; neither needs a worker).
func commitPrinted(ctx context.Context, b Backend, session string, a Answer, log *zap.Logger) {
	var wg sync.WaitGroup
	if a.Taken != "" {
		wg.Go(func() {
			if err := b.Taken(ctx, session, a.Taken); err != nil {
				log.Warn("hook printed messages but could not commit them; they will be handed over again", zap.String("take", a.Taken), zap.Error(err))
			}
		})
	}
	if a.Context != nil {
		wg.Go(func() {
			if err := b.CommitContext(ctx, session, a.Context.ID, a.Context.Text); err != nil {
				log.Warn("hook printed a block the session's history will not hold", zap.String("block", a.Context.ID), zap.Error(err))
			}
		})
	}
	wg.Wait()
}

// Group is the group, among a Claude Code settings file's groups of one hook event, that runs
// `... hook <arg>`; nil when none does.
func Group(groups []any, arg string) map[string]any {
	for _, g := range groups {
		group, _ := g.(map[string]any)
		list, _ := group["hooks"].([]any)
		for _, h := range list {
			entry, _ := h.(map[string]any)
			cmd, _ := entry["command"].(string)
			fields := strings.Fields(cmd)
			for i := 0; i+1 < len(fields); i++ {
				if fields[i] == "hook" && fields[i+1] == arg {
					return group
				}
			}
		}
	}
	return nil
}
