// Package watchdog notices, from inside the worker process, when the reminder engine stops
// working (SPEC I9): no worker polls the task queue, reminders fail repeatedly, the plugin patch
// vanished. Each condition alerts once through ntfy, with metadata only, and again only when it
// changes; a check may also repair what it found (re-apply the plugin patch).
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
)

// Check looks at one condition. It returns a non-empty problem when something is wrong; the
// text is metadata (IDs, counts, names), never message text.
type Check struct {
	Name string
	Run  func(ctx context.Context) (problem string, err error)
}

// ErrNotMine is what a check returns when another worker speaks for it: it has no opinion
// this time, and what it said before stands.
var ErrNotMine = errors.New("another worker speaks for this check")

// Publisher sends an alert; *activities.Ntfy is the real one.
type Publisher interface {
	Publish(ctx context.Context, p activities.Push) error
}

// Watchdog runs checks on an interval and alerts on changes.
type Watchdog struct {
	Checks   []Check
	Ntfy     Publisher // nil: alerts are only logged
	Topic    string
	Interval time.Duration
	Logger   *zap.Logger

	mu    sync.Mutex
	state map[string]string // check name -> current problem ("" = fine)
	// held are alerts ntfy did not take; they go out, summarised, with the next alert or the
	// next run once ntfy answers again.
	held []string
}

// Run checks every Interval until ctx ends.
func (w *Watchdog) Run(ctx context.Context) {
	interval := w.Interval
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		w.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunOnce runs every check once and alerts on each condition that changed: a new or different
// problem alerts, a resolved one says so; a problem that stays the same stays quiet.
func (w *Watchdog) RunOnce(ctx context.Context) {
	defer w.flushHeld(ctx)
	for _, c := range w.Checks {
		problem, err := c.Run(ctx)
		if errors.Is(err, ErrNotMine) {
			continue
		}
		if err != nil {
			w.logger().Warn("watchdog check failed", zap.String("check", c.Name), zap.Error(err))
			continue
		}
		w.mu.Lock()
		if w.state == nil {
			w.state = map[string]string{}
		}
		before := w.state[c.Name]
		w.state[c.Name] = problem
		w.mu.Unlock()
		switch {
		case problem == before:
		case problem != "":
			w.alert(ctx, c.Name, "intentq watchdog: "+c.Name, problem, 4, "warning")
		default:
			w.alert(ctx, c.Name, "intentq watchdog: "+c.Name+" ok again", "resolved: "+before, 3, "white_check_mark")
		}
	}
}

// Problems returns the current problems by check name, sorted.
func (w *Watchdog) Problems() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, p := range w.state {
		if p != "" {
			out = append(out, name+": "+p)
		}
	}
	sort.Strings(out)
	return out
}

func (w *Watchdog) alert(ctx context.Context, check, title, message string, priority int, tag string) {
	w.logger().Warn("watchdog", zap.String("check", check), zap.String("state", message))
	if w.Ntfy == nil || w.Topic == "" {
		return
	}
	if err := w.publish(ctx, activities.Push{Topic: w.Topic, Title: title, Message: message, Priority: priority, Tags: []string{tag}}); err != nil {
		w.logger().Warn("watchdog alert not sent; kept for later", zap.String("check", check), zap.Error(err))
		w.mu.Lock()
		w.held = append(w.held, title+": "+message)
		w.mu.Unlock()
	}
}

// flushHeld pushes the alerts ntfy did not take, as one summary, once it answers again.
func (w *Watchdog) flushHeld(ctx context.Context) {
	w.mu.Lock()
	held := w.held
	w.mu.Unlock()
	if len(held) == 0 || w.Ntfy == nil || w.Topic == "" {
		return
	}
	msg := fmt.Sprintf("%d watchdog alerts could not be sent while ntfy was unreachable: %s", len(held), strings.Join(held, " | "))
	if err := w.publish(ctx, activities.Push{Topic: w.Topic, Title: "intentq watchdog: missed alerts", Message: msg, Priority: 4, Tags: []string{"warning"}}); err != nil {
		return
	}
	w.mu.Lock()
	w.held = w.held[len(held):]
	w.mu.Unlock()
}

func (w *Watchdog) publish(ctx context.Context, p activities.Push) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return w.Ntfy.Publish(ctx, p)
}

func (w *Watchdog) logger() *zap.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return zap.NewNop()
}

// FailureWindow counts failures in a sliding window: "reminders fail repeatedly" is more than
// Limit failures within Window (SPEC I9: 10 in 10 minutes).
type FailureWindow struct {
	Window time.Duration
	Limit  int
	Now    func() time.Time

	mu    sync.Mutex
	times []time.Time
}

// Add records one failure.
func (f *FailureWindow) Add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times = append(f.prune(), f.now())
}

// Check is a watchdog Check over the window.
func (f *FailureWindow) Check(name, what string) Check {
	return Check{Name: name, Run: func(context.Context) (string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.times = f.prune()
		if len(f.times) > f.Limit {
			return fmt.Sprintf("%d %s failed in the last %s", len(f.times), what, f.Window), nil
		}
		return "", nil
	}}
}

func (f *FailureWindow) prune() []time.Time {
	cut := f.now().Add(-f.Window)
	kept := f.times[:0]
	for _, t := range f.times {
		if t.After(cut) {
			kept = append(kept, t)
		}
	}
	return kept
}

func (f *FailureWindow) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}
