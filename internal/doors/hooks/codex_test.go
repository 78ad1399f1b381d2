package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 25: a Codex hook finds its agent by its thread. The first hook of a thread that runs in
// its own TUI's process binds the thread to the agent its environment names; later hooks of the
// thread, also those in Codex's shared daemon (whose environment is another TUI's), are that
// agent's; a thread no hook has bound has no agent in the shared daemon.
func TestThreadAgent(t *testing.T) {
	dir := t.TempDir()
	const a, b = "01a213a3-c666-7822-988b-24689d4e6342", "01a213a4-0851-74b1-98b2-7bb18f759b25"
	if got, err := ThreadAgent(dir, a, "secretary", false); err != nil || got != "secretary" {
		t.Fatalf("own process: %q %v", got, err)
	}
	// The shared daemon carries the first TUI's environment ("secretary"): thread a is still the
	// secretary's, thread b (another TUI's, never bound) is nobody's.
	if got, _ := ThreadAgent(dir, a, "", true); got != "secretary" {
		t.Errorf("bound thread in the daemon: %q", got)
	}
	if got, err := ThreadAgent(dir, b, "", true); err != nil || got != "" {
		t.Errorf("unbound thread in the daemon: %q %v", got, err)
	}
	// A binding outlasts the environment: a later hook of thread a names another agent in its
	// environment (a TUI restarted elsewhere with the same thread is rare; the first word stays).
	if got, _ := ThreadAgent(dir, a, "ops", false); got != "secretary" {
		t.Errorf("rebound: %q", got)
	}
	if got, _ := ThreadAgent(dir, b, "ops", false); got != "ops" {
		t.Errorf("thread b in its own process: %q", got)
	}
	// A person's own Codex (no agent in its environment) binds nothing.
	const c = "01a213a4-418b-7032-841f-9891a0785689"
	if got, _ := ThreadAgent(dir, c, "", false); got != "" {
		t.Errorf("no agent: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "codex-threads", c)); err == nil {
		t.Error("a thread without an agent was bound")
	}
	for _, bad := range []string{"", "../x", "a/b", "x y"} {
		if _, err := ThreadAgent(dir, bad, "secretary", false); err == nil {
			t.Errorf("thread id %q accepted", bad)
		}
	}
	// The newest thread of an agent (after /new, the next prompt's hooks bind the new thread).
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "codex-threads", b), later, later); err != nil {
		t.Fatal(err)
	}
	if got, _ := ThreadAgent(dir, "01a213a5-0000-7000-8000-000000000000", "ops", false); got != "ops" {
		t.Fatal(got)
	}
	if got := ThreadOf(dir, "ops"); got != b {
		t.Errorf("ThreadOf(ops) = %q, want %s (the newest binding)", got, b)
	}
	if got := ThreadOf(dir, "secretary"); got != a {
		t.Errorf("ThreadOf(secretary) = %q", got)
	}
}

// The shared daemon is `codex app-server ...` (0.169.0: "codex app-server --listen unix://
// --analytics-default-enabled --managed-daemon"); a TUI with its own app server is `codex
// --no-daemon`, and this test runs under neither.
func TestSharedDaemon(t *testing.T) {
	if !isCodexServer([]string{"/home/me/.codex/packages/app-server-daemon/releases/0.169.0-x86_64-unknown-linux-musl/bin/codex", "app-server", "--listen", "unix://"}) {
		t.Error("the daemon was not recognised")
	}
	if isCodexServer([]string{"/x/bin/codex", "--no-daemon"}) || isCodexServer([]string{"node", "/x/.bin/codex", "app-server"}) {
		t.Error("a TUI passed for the daemon")
	}
	if SharedDaemon() {
		t.Error("the test runs in a Codex daemon?")
	}
}

// Codex's PermissionRequest (its approval prompt opens) reports the agent waiting for the person,
// and prints nothing: Codex asks the person.
func TestCodexPermissionRequest(t *testing.T) {
	b := &fakeBackend{}
	if out := run(t, EventNotification, b, settings(), `{"hook_event_name":"PermissionRequest","session_id":"t","tool_name":"Bash","tool_input":{"command":"touch x"}}`); out != "" {
		t.Errorf("printed %q", out)
	}
	if len(b.reports) != 1 || b.reports[0].Detail != "permission_prompt" {
		t.Errorf("reports %+v", b.reports)
	}
}

// A hook's program as setup quotes it, read back (doctor checks it, setup repoints it).
func TestCommandProgram(t *testing.T) {
	for cmd, want := range map[string][2]string{
		"/opt/bin/intentq-hook hook stop":              {"/opt/bin/intentq-hook", " hook stop"},
		"'/my bin/intentq-hook' hook stop --cli codex": {"/my bin/intentq-hook", " hook stop --cli codex"},
		`'/it'\''s/starter' hook post-tool-use`:        {"/it's/starter", " hook post-tool-use"},
		"starter":                                      {"starter", ""},
		"  starter hook stop":                          {"starter", " hook stop"},
		"'/unterminated hook stop":                     {"/unterminated hook stop", ""},
	} {
		if prog, rest := CommandProgram(cmd); prog != want[0] || rest != want[1] {
			t.Errorf("%q: %q %q, want %q %q", cmd, prog, rest, want[0], want[1])
		}
	}
}

// A binding file is named only by what may be a thread id: never a path, never empty or long.
func TestIsThreadID(t *testing.T) {
	for id, want := range map[string]bool{
		"019a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8": true,
		"A-z-0-9":                              true,
		strings.Repeat("a", 100):               true,
		"":                                     false,
		strings.Repeat("a", 101):               false,
		"../etc":                               false,
		"a/b":                                  false,
		"a b":                                  false,
		"é":                                    false,
		"a\n":                                  false,
	} {
		if got := isThreadID(id); got != want {
			t.Errorf("isThreadID(%q) = %v, want %v", id, got, want)
		}
	}
}
