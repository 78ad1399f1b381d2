package hooks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// undelivered is n Telegram intents of chat 42 whose messages have not reached the agent yet
// (no delivered time in their memo), the newest first as a page lists them, from message first.
func undelivered(first, n int) []intent.Summary {
	var list []intent.Summary
	for i := first; i < first+n; i++ {
		list = append(list, intent.Summary{ID: fmt.Sprintf("intent/42/%d", i), ChatID: "42", MessageID: fmt.Sprint(i), Session: "secretary",
			Source: workflows.SourceTelegram, ReceivedAt: now.Add(-10 * time.Minute), Snippet: fmt.Sprintf("message number %d while you work", i)})
	}
	return list
}

// The real Codex (its Stop hook hands messages over) on a loaded machine: a Stop hook
// whose take found no standing offer at the desk listed the 5 newest pending intents as owed
// answers, their text with them, and the session then typed the same messages into the idle
// pane: 5 of 20 reached the model twice. A message not handed over yet is the session's to
// deliver once: neither the Stop hook's owed list nor the tool-call reminder names it, whatever
// the CLI; a delivered one still unanswered is still named.
func TestStopListsOnlyMessagesTheAgentHas(t *testing.T) {
	delivered := now.Add(-time.Minute)
	b := &fakeBackend{remindDue: true, pending: append(undelivered(101, 5), intent.Summary{ID: "intent/42/90", ChatID: "42", Session: "secretary",
		Source: workflows.SourceTelegram, ReceivedAt: now.Add(-10 * time.Minute), Snippet: "an older message the agent has", Delivered: &delivered})}
	s := settings() // Codex's: the Stop hook takes (StopTyped false)
	var o Output
	out := run(t, EventStop, b, s, `{"session_id":"s"}`)
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.Decision != "block" || !strings.Contains(o.Reason, "intent/42/90") {
		t.Fatalf("stop with a delivered, unanswered message: %q, want a block naming it", out)
	}
	for i := 101; i <= 105; i++ {
		if strings.Contains(o.Reason, fmt.Sprintf("intent/42/%d", i)) || strings.Contains(o.Reason, fmt.Sprintf("message number %d ", i)) {
			t.Errorf("the stop hook listed message %d, which the session has not handed over yet (it then types it):\n%s", i, o.Reason)
		}
	}
	if len(b.takes) != 1 || b.takes[0].RemindOnly {
		t.Errorf("takes %+v: want one take that may hand messages over", b.takes)
	}

	// Only undelivered ones owed: the agent stops (the session types them once it has).
	b.pending = undelivered(101, 5)
	if out := run(t, EventStop, b, s, `{"session_id":"s"}`); out != "" {
		t.Errorf("stop with only undelivered messages pending: %q, want no block", out)
	}

	// The reminder after a tool call (RemindTools) names none of them either.
	b.pending = undelivered(101, 3)
	if out := run(t, EventPostToolUse, b, s, `{"session_id":"s","tool_name":"Bash","tool_use_id":"t1"}`); strings.Contains(out, "message number") {
		t.Errorf("the tool-call reminder listed messages not handed over yet: %q", out)
	}
}
