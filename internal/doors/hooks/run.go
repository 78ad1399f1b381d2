package hooks

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/hookapi"
)

// Events the starter's `hook` command answers.
const (
	EventSessionStart     = hookapi.EventSessionStart
	EventUserPromptSubmit = hookapi.EventUserPromptSubmit
	EventPreToolUse       = hookapi.EventPreToolUse
	EventPostToolUse      = hookapi.EventPostToolUse
	EventStop             = hookapi.EventStop
	EventNotification     = hookapi.EventNotification
	EventSessionEnd       = hookapi.EventSessionEnd
)

// EventPermissionRequest is the starter's argument for the permission hook (package
// hooktemporal answers it).
const EventPermissionRequest = hookapi.EventPermissionRequest

// ApprovalTimeout is the timeout (seconds) setup gives the permission hook in the CLI's
// settings: above any wait the config allows (MaxApprovalWait), so the hook always ends itself.
const ApprovalTimeout = 3600

// MaxApprovalWait bounds hooks.approval_wait and hooks.codex_approval_wait.
const MaxApprovalWait = 50 * time.Minute

// PermissionInput is the PermissionRequest hook's input beyond Input.
type PermissionInput struct {
	Input
	// PermissionSuggestions are Claude Code's offers of a lasting rule ("Yes, and always ...").
	PermissionSuggestions []map[string]any `json:"permission_suggestions"`
}

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
	{"SessionEnd", EventSessionEnd},
	{"PermissionRequest", EventPermissionRequest},
}

// TimeoutFor is the timeout (seconds) setup gives the hook of event arg: an hour for the
// permission hook (it waits for the person; hooks.approval_wait ends it sooner), else 10.
func TimeoutFor(arg string) int {
	if arg == EventPermissionRequest {
		return ApprovalTimeout
	}
	return 10
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
	EventSessionEnd:       SessionEnd,
}

// MaxTimeout caps every hook's time (SPEC S4): Claude Code's own limit in the settings intentq
// installs. A hook finishes KillMargin before it, so Claude Code never kills a hook that has
// committed what it printed before it could read the output.
const MaxTimeout = 10 * time.Second

// KillMargin is kept free under MaxTimeout.
const KillMargin = 1500 * time.Millisecond

// CommitBudget is the time kept for the commit after the print (at most a third of the hook's
// time): the handler never eats it, and the hook prints only when at least half of it is left
// (exactly once: a printed take is committed).
const CommitBudget = 1500 * time.Millisecond

// Budget is a hook's timeout in a process that took the hook over from intentq-hook (began is
// config.EnvHookStarted's value, Unix nanoseconds; empty when the process began the hook): what
// is left of the hook's time (at most MaxTimeout - KillMargin), at least a millisecond.
func Budget(timeout time.Duration, began string, now time.Time) time.Duration {
	ns, err := strconv.ParseInt(began, 10, 64)
	if err != nil || ns <= 0 {
		return timeout
	}
	return max(hookTime(timeout)-now.Sub(time.Unix(0, ns)), time.Millisecond)
}

// DefaultTimeout is a hook's time when none is configured.
const DefaultTimeout = 5 * time.Second

// hookTime is a hook's whole time for the configured timeout: DefaultTimeout when none is, at
// most MaxTimeout - KillMargin.
func hookTime(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return min(timeout, MaxTimeout-KillMargin)
}

// Dial connects the backend; it must honour ctx.
type Dial func(ctx context.Context) (Backend, func(), error)

// Run answers one hook event: it reads the input from stdin, runs the handler against the
// backend within timeout (at most MaxTimeout - KillMargin) less CommitBudget, prints the output
// and then commits the messages it printed on a budget of their own. An answer that comes too
// late to be committed is not printed (its messages go back to the queue when the take's lease
// ends). Whatever goes wrong, malformed input, Temporal down, a slow cluster, it allows (prints
// nothing, commits nothing) and logs why: a hook never wedges the agent.
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
	timeout = hookTime(timeout)
	end := time.Now().Add(timeout)
	commitBudget := min(CommitBudget, timeout/3)
	parent := ctx
	ctx, cancel := context.WithDeadline(ctx, end.Add(-commitBudget))
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
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// An answer that came at the deadline still counts (select picks at random).
		select {
		case r = <-done:
		default:
			log.Warn("hook ran out of time; allowing", zap.Duration("timeout", timeout))
			return nil
		}
	}
	if r.closeFn != nil {
		defer r.closeFn()
	}
	left := time.Until(end)
	if (r.answer.Taken != "" || r.answer.Context != nil) && left < commitBudget/2 {
		log.Warn("hook answered too late to commit what it would print; printing nothing", zap.Duration("left", left))
		return nil
	}
	if err := Write(stdout, r.answer.Output, s.Flat); err != nil {
		return err // not printed: not committed, the messages wait again
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(parent), max(left, 100*time.Millisecond))
	defer ccancel()
	commitPrinted(cctx, r.backend, s.Session, r.answer, log)
	return nil
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
