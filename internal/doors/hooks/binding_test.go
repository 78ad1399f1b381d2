package hooks

import (
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/receipt"
)

// Issue 37: an agent started by hand is bound to its session by the receipt of a block intentq
// typed into the session's pane, never guessed.
func TestHandStartedAgentIsBoundByItsReceipt(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	block := receipt.DeliveryHeader + "7 chat=42 from=42 @alice: hello"
	if err := receipt.Record(receipt.Dir(dir), block, receipt.Typed{Session: "work", Pane: "%3", Socket: "/tmp/tmux-1/default", At: now}); err != nil {
		t.Fatal(err)
	}
	clis := map[string]string{"work": "claude", "other": "codex"}
	cliOf := func(s string) string { return clis[s] }
	pane := Pane{ID: "%3", Socket: "/tmp/tmux-1/default"}
	const id = "0b7c6d1e-1111-2222-3333-444455556666"

	// Not a typed block: nothing, and no error.
	if agent, err := BindByReceipt(dir, "claude", id, "just a prompt", pane, cliOf, now); agent != "" || err != nil {
		t.Fatalf("a prompt of the person's bound %q (%v)", agent, err)
	}
	// The wrong pane, the wrong CLI, outside tmux, too late: refused, and said why.
	for name, c := range map[string]struct {
		cli  string
		pane Pane
		at   time.Time
		want string
	}{
		"pane":    {"claude", Pane{ID: "%4", Socket: pane.Socket}, now, "pane %4 received a block typed into pane %3"},
		"socket":  {"claude", Pane{ID: "%3", Socket: "/tmp/tmux-1/other"}, now, "typed into pane %3"},
		"cli":     {"gemini", pane, now, `configured for "claude"`},
		"no tmux": {"claude", Pane{}, now, "outside tmux"},
		"late":    {"claude", pane, now.Add(BindWithin + time.Second), "after the block was typed"},
	} {
		agent, err := BindByReceipt(dir, c.cli, id, block, c.pane, cliOf, c.at)
		if agent != "" || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: bound %q, error %v (want one saying %q)", name, agent, err, c.want)
		}
		if _, refused := Bindings(dir, "work"); !strings.Contains(refused, c.want) {
			t.Errorf("%s: doctor reads %q", name, refused)
		}
	}
	// Its pane, its CLI, in time: bound, persisted, and the refusal forgotten.
	agent, err := BindByReceipt(dir, "claude", id, "\n\n<pasted_content id=\"x\">\n"+block, pane, cliOf, now.Add(time.Second))
	if agent != "work" || err != nil {
		t.Fatalf("bound %q, %v", agent, err)
	}
	if got, err := BoundAgent(dir, "claude", id); got != "work" || err != nil {
		t.Fatalf("later hooks of %s find %q (%v)", id, got, err)
	}
	bound, refused := Bindings(dir, "work")
	if len(bound) != 1 || bound[0].ID != id || !strings.Contains(bound[0].How, "pane %3") || refused != "" {
		t.Fatalf("doctor reads %+v, refused %q", bound, refused)
	}
	// Its MCP server, in the same pane, finds the session; one in another pane or server does not.
	if got := PaneAgent(dir, pane); got != "work" {
		t.Errorf("PaneAgent in the agent's pane = %q", got)
	}
	for _, other := range []Pane{{ID: "%4", Socket: pane.Socket}, {ID: "%3", Socket: "/tmp/tmux-1/other"}, {ID: "%3", Socket: pane.Socket, Shared: true}, {}} {
		if got := PaneAgent(dir, other); got != "" {
			t.Errorf("PaneAgent(%+v) = %q", other, got)
		}
	}
	// The same hook again (a retry) keeps it; another agent with the same block (pasted by the
	// person into another Claude Code) is refused: a block binds one agent.
	if agent, err := BindByReceipt(dir, "claude", id, block, pane, cliOf, now.Add(2*time.Second)); agent != "work" || err != nil {
		t.Fatalf("the same agent again: %q, %v", agent, err)
	}
	if agent, err := BindByReceipt(dir, "claude", "another-id", block, pane, cliOf, now.Add(2*time.Second)); agent != "" || err == nil || !strings.Contains(err.Error(), "already bound") {
		t.Fatalf("a second agent with the same block: %q, %v", agent, err)
	}
	if got, _ := BoundAgent(dir, "claude", "another-id"); got != "" {
		t.Fatalf("the second agent is bound to %q", got)
	}
	// A binding is per CLI: a Gemini session with the same id is not Claude Code's.
	if got, _ := BoundAgent(dir, "gemini", id); got != "" {
		t.Fatalf("gemini %s bound to %q", id, got)
	}
}

// Codex's shared daemon runs every TUI's hooks with the first TUI's environment: its pane says
// nothing, so only the thread that received the block is bound, and where Codex keeps its
// thread bindings (run-agent's too).
func TestCodexThreadInTheSharedDaemonIsBoundByItsReceipt(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	a := receipt.DeliveryHeader + "1 chat=42: for a"
	b := receipt.ReminderHeader + "2 chat=42: for b"
	for block, s := range map[string]receipt.Typed{a: {Session: "a", Pane: "%1", At: now}, b: {Session: "b", Pane: "%2", At: now}} {
		if err := receipt.Record(receipt.Dir(dir), block, s); err != nil {
			t.Fatal(err)
		}
	}
	cliOf := func(string) string { return "codex" }
	shared := Pane{ID: "%1", Shared: true} // the first TUI's pane, whoever's hook it is
	if agent, err := BindByReceipt(dir, "codex", "thread-b", b, shared, cliOf, now); agent != "b" || err != nil {
		t.Fatalf("thread-b: %q, %v", agent, err)
	}
	if agent, err := BindByReceipt(dir, "codex", "thread-a", a, shared, cliOf, now); agent != "a" || err != nil {
		t.Fatalf("thread-a: %q, %v", agent, err)
	}
	for thread, want := range map[string]string{"thread-a": "a", "thread-b": "b"} {
		if got, err := ThreadAgent(dir, thread, "", true); got != want || err != nil {
			t.Errorf("ThreadAgent(%s) = %q, %v; want %q", thread, got, err, want)
		}
	}
	if ThreadOf(dir, "b") != "thread-b" {
		t.Errorf("ThreadOf(b) = %q", ThreadOf(dir, "b"))
	}
}
