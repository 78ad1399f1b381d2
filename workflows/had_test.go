package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/hookapi"
)

// resetHookBackend is what the agent's SessionStart hook reaches in a session harness: the model
// desk for its take, the intents' memos as the session's told results make them (a result the
// session holds is not in a memo), and the session workflow itself for what its agent had.
type resetHookBackend struct {
	hooks.Backend // any other call fails the test (nil)
	h             *sessionHarness
	// intents are the pending intents' requests, oldest first; texts what the person wrote.
	intents []DeliveryRequest
	texts   map[string]string
	mu      sync.Mutex
	// words are what the desk passes on to the session once the hook is done.
	words []HookWords
}

func (b *resetHookBackend) PendingPage(_ context.Context, f hookapi.Filter, _ int) (hookapi.Page, error) {
	b.h.mu.Lock()
	defer b.h.mu.Unlock()
	var page hookapi.Page
	for i, r := range b.intents {
		p := hookapi.Summary{ID: r.ReplyTo, ChatID: "42", Status: hookapi.StatusPending, Session: f.Session, Source: hookapi.SourceTelegram,
			ReceivedAt: b.h.start.Add(time.Duration(i) * time.Second), Text: b.texts[r.ReplyTo], Snippet: b.texts[r.ReplyTo]}
		if res, told := b.h.results[r.ID]; told && res.OK {
			p.Delivered = &res.At // the intent's memo: it knows what it was told
		}
		page.Intents = append(page.Intents, p)
	}
	return page, nil
}

func (b *resetHookBackend) Take(_ context.Context, _ string, req hookapi.TakeRequest) (hookapi.TakeResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	words := said(AgentEvent{Event: req.Event, At: b.h.env.Now(), Detail: req.Detail})
	res := hookapi.TakeResult{Key: req.Key}
	if b.h.desk != nil {
		if taken, msgs := b.h.desk.take(req.Key, req.Event, b.h.env.Now()); taken != nil {
			words.Taken = []StandingTaken{*taken}
			res.Key, res.Messages = taken.Key, msgs
		}
	}
	b.words = append(b.words, words)
	return res, nil
}

func (b *resetHookBackend) Taken(_ context.Context, _, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.words = append(b.words, committed(key))
	return nil
}

func (b *resetHookBackend) CommitContext(context.Context, string, string, string) error { return nil }

func (b *resetHookBackend) Had(_ context.Context, _ string, intents []string) ([]hookapi.HadMessage, error) {
	v, err := b.h.env.QueryWorkflow(QueryHad, intents)
	if err != nil {
		return nil, err
	}
	var had []hookapi.HadMessage
	return had, v.Get(&had)
}

func (b *resetHookBackend) Text(_ context.Context, id string) (string, error) {
	if text, ok := b.texts[id]; ok {
		return text, nil
	}
	return "", errors.New("no such intent")
}

// Message 1 is typed and receipted while message 2 waits behind it, so message 1's
// result is held (results-after-backlog) and its intent's memo does not say it was delivered.
// Then the agent's context is reset by something intentq did not do: the CLI restarting
// (startup), the person's /clear, a compaction. The new context holds message 1 in full (the
// session says its agent had it), and message 2 once: in full when the hook takes it, else named
// and typed after. Before, message 1 was named "(not handed over yet: it follows on its own)"
// without its text, and never followed: the session had it as delivered.
func TestANewContextHoldsWhatTheAgentHad(t *testing.T) {
	type reset struct {
		source, end string // the SessionStart's source; the SessionEnd before it, if any
		desk        bool   // a desk runs: message 2 stands offered there, and the hook takes it
	}
	var resets []reset
	for _, desk := range []bool{true, false} {
		resets = append(resets, reset{"startup", "prompt_input_exit", desk}, reset{"clear", SessionEndClear, desk}, reset{"compact", "", desk})
	}
	for _, reset := range resets {
		t.Run(fmt.Sprintf("%s/desk=%v", reset.source, reset.desk), func(t *testing.T) {
			one, two := message("1"), message("2")
			h := newSessionHarness(t)
			if reset.desk {
				h.desk = newModelDesk()
			}
			b := &resetHookBackend{h: h, intents: []DeliveryRequest{one, two},
				texts: map[string]string{one.ReplyTo: "text 1", two.ReplyTo: "text 2"}}
			h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
			h.send(time.Second, SignalDeliver, one)
			h.send(2*time.Second, SignalDeliver, two) // arrives while message 1 is typed
			h.send(4*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{one.ReplyTo}}))
			if reset.end != "" {
				h.send(5*time.Second, SignalHookWords, said(AgentEvent{Event: EventSessionEnd, Detail: reset.end}))
			}
			var block string
			var typedBefore int
			h.env.RegisterDelayedCallback(func() {
				require.Empty(t, h.results, "message 1's result is held while message 2 waits")
				typedBefore = len(h.typed)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				s := hooks.Settings{Session: "secretary", Now: h.env.Now}
				answer, err := hooks.SessionStart(ctx, b, s, hooks.Input{SessionID: "new", Source: reset.source})
				require.NoError(t, err)
				require.NotNil(t, answer.Output.HookSpecificOutput, "the new context lists what is pending")
				block = answer.Output.HookSpecificOutput.AdditionalContext
				if answer.Taken != "" {
					require.NoError(t, b.Taken(ctx, "secretary", answer.Taken))
				}
				for _, w := range b.words { // the desk passes its words on
					h.env.SignalWorkflow(SignalHookWords, w)
				}
			}, 6*time.Second)
			h.send(8*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
			h.runFor(t, time.Minute)

			require.Equal(t, []string{one.Text}, h.typed[:typedBefore], "message 1 was typed before the reset")
			newContext := block + "\n" + strings.Join(h.typed[typedBefore:], "\n")
			require.Equal(t, 1, strings.Count(newContext, "text 1"), "the new context holds message 1, in full, once:\n%s", newContext)
			require.Equal(t, 1, strings.Count(newContext, "text 2"), "and message 2 once:\n%s", newContext)
			require.NotRegexp(t, `id=intent/42/1 [^\n]*not handed over`, block, "message 1 is not named as one to follow")
			require.True(t, h.results[one.ID].OK)
			require.True(t, h.results[two.ID].OK)
		})
	}
}
