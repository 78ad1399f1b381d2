package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/hookapi"
)

// Resets the agent gets from elsewhere, played by the exactly-once checker: the
// person's /clear at an idle prompt, the CLI restarting, a compaction in the middle of a turn.
// Each starts a new context: the agent's SessionStart hook runs intentq's real handler
// (hooks.SessionStart) against the session workflow (its take at the desk, its `had` query) and
// the intents' memos as the session's told results make them. After each schedule the checker
// asserts, per context: no message entered it twice; and in the last context every message the
// agent had (and has not answered: the model's agent answers none) is there with its text, once,
// and every other message that was not taken back entered it once.

// contextPlay is the agent's contexts in one schedule.
type contextPlay struct {
	// n numbers the current context (0: the first); entered counts what entered it.
	n       int
	entered map[string]int
	// arrived: the intents whose message's first request was sent (the door recorded them).
	arrived []string
	// resultAt: when each intent's memo says it was delivered (what the session told it).
	resultAt map[string]time.Time
	resets   int
}

func newContextPlay() contextPlay {
	return contextPlay{entered: map[string]int{}, resultAt: map[string]time.Time{}}
}

// scheduleResets plays up to two resets at moments the worker is there (the hook's take and
// `had` need it; a reset during an outage leaves the hook with the memos alone, which the
// hooks' own tests cover).
func (r *checkRun) scheduleResets() {
	for range r.p.prng.IntN(3) {
		at := time.Duration(60000+r.p.prng.IntN(1400000)) * time.Millisecond
		if r.outage(at) {
			continue
		}
		r.at(at, r.reset)
	}
}

// reset starts a new context and runs the SessionStart hook for it. Not while a typing waits
// for its confirmation: a CLI fires the prompt's own hook (the receipt) as it submits, before
// anything can reset it, and the model's agent sends no receipts (the session reads its input
// line instead), so a reset there would be one no real CLI makes; it comes a little later.
func (r *checkRun) reset() {
	if r.outage(r.now()) {
		return
	}
	if r.typingUnconfirmed() {
		r.at(r.now()+5*time.Second, r.reset)
		return
	}
	source := "clear"
	switch {
	case r.working(r.now()):
		source = SourceCompact // the turn goes on in the new context
	case r.p.prng.IntN(2) == 0:
		source = "startup"
	}
	r.mu.Lock()
	r.closeContext()
	r.c.n++
	r.c.resets++
	r.c.entered = map[string]int{}
	n := r.c.n
	r.mu.Unlock()
	r.note("context %d begins (%s)", n, source)

	b := &checkerHookBackend{r: r}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stamp, _ := json.Marshal(r.env.Now().Format(time.RFC3339Nano))
	answer, err := hooks.SessionStart(ctx, b, hooks.Settings{Session: "s", Now: r.env.Now},
		hooks.Input{SessionID: fmt.Sprintf("context-%d", n), Source: source, Timestamp: stamp})
	if err != nil {
		r.note("session-start hook of context %d: %v", n, err)
	}
	if out := answer.Output.HookSpecificOutput; out != nil {
		r.mu.Lock()
		r.enter(fmt.Sprintf("listed by session-start/%d", n), out.AdditionalContext)
		r.mu.Unlock()
	}
	for _, w := range b.words { // the desk passes its words on
		r.signal(SignalHookWords, w)
	}
	if answer.Taken != "" {
		r.signal(SignalHookWords, committed(answer.Taken))
	}
}

// closeContext checks the context that ends (the caller holds r.mu): nothing entered it twice.
func (r *checkRun) closeContext() {
	for key, n := range r.c.entered {
		if n > 1 {
			r.fail("%s entered context %d %d times", key, r.c.n, n)
		}
	}
}

// checkLastContext asserts that the last context holds every message once (at most once if the
// person took it back), with its text: one the agent had before a reset was presented again.
func (r *checkRun) checkLastContext() {
	r.closeContext()
	for i := 1; i <= r.keys; i++ {
		key := fmt.Sprintf("intent/1/%d", i)
		_, withdrawn := r.p.withdrawnAt[key]
		switch n := r.c.entered[key]; {
		case withdrawn && n <= 1:
		case n == 0 && r.c.n > 0 && r.entered[key] > 0:
			r.fail("message %s, which the agent had, is missing from its context %d (after a reset)", key, r.c.n)
		case n != 1:
			r.fail("message %s entered the agent's context %d %d times, want once", key, r.c.n, n)
		}
	}
}

// checkerHookBackend is what the SessionStart hook reaches in the checker: the model desk for its
// take, the intents' memos, and the session workflow for what its agent had (while the worker is
// there).
type checkerHookBackend struct {
	hooks.Backend // any other call panics (nil): the hook makes none
	r             *checkRun
	words         []HookWords
}

func (b *checkerHookBackend) PendingPage(_ context.Context, f hookapi.Filter, _ int) (hookapi.Page, error) {
	r := b.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var page hookapi.Page
	for _, id := range r.c.arrived {
		if _, gone := r.p.withdrawnAt[id]; gone {
			continue
		}
		p := hookapi.Summary{ID: id, ChatID: "1", Status: hookapi.StatusPending, Session: f.Session, Source: hookapi.SourceTelegram,
			ReceivedAt: r.start, Text: r.p.text[id], Snippet: r.p.text[id]}
		if at, told := r.c.resultAt[id]; told {
			p.Delivered = &at
		}
		page.Intents = append(page.Intents, p)
	}
	return page, nil
}

func (b *checkerHookBackend) Take(_ context.Context, _ string, req hookapi.TakeRequest) (hookapi.TakeResult, error) {
	r := b.r
	words := said(AgentEvent{Event: req.Event, At: r.env.Now(), Detail: req.Detail})
	res := hookapi.TakeResult{Key: req.Key}
	if taken, msgs := r.desk.take(req.Key, req.Event, r.env.Now()); taken != nil {
		words.Taken = []StandingTaken{*taken}
		res.Key, res.Messages = taken.Key, msgs
		r.deskTakes++
	}
	b.words = append(b.words, words)
	return res, nil
}

func (b *checkerHookBackend) Had(_ context.Context, _ string, intents []string) ([]hookapi.HadMessage, error) {
	if b.r.outage(b.r.now()) {
		return nil, errWorkerAway
	}
	v, err := b.r.env.QueryWorkflow(QueryHad, intents)
	if err != nil {
		return nil, err
	}
	var had []hookapi.HadMessage
	return had, v.Get(&had)
}

func (b *checkerHookBackend) Text(_ context.Context, id string) (string, error) {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	if text, ok := b.r.p.text[id]; ok {
		return text, nil
	}
	return "", errors.New("no such intent")
}

func (b *checkerHookBackend) CommitContext(context.Context, string, string, string) error { return nil }

// arrive notes that intent id's message was recorded (its first request sent).
func (r *checkRun) arrive(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.c.arrived, id) {
		r.c.arrived = append(r.c.arrived, id)
	}
}

// typingUnconfirmed reports whether a message typed in the last minute is not confirmed yet:
// the session's `had` does not count it (a held result is confirmed, only not told).
func (r *checkRun) typingUnconfirmed() bool {
	r.mu.Lock()
	var typed []string
	for key, at := range r.p.knownAt {
		if r.now()-at < time.Minute && slices.Contains(r.p.typedAt, at) {
			typed = append(typed, key)
		}
	}
	r.mu.Unlock()
	if len(typed) == 0 {
		return false
	}
	v, err := r.env.QueryWorkflow(QueryHad, typed)
	if err != nil {
		return true
	}
	var had []hookapi.HadMessage
	if err := v.Get(&had); err != nil {
		return true
	}
	return len(had) < len(typed)
}
