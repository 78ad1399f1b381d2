package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/testenv"
)

// Issue 10: 200 intents pending (recorded by the ingest door: the plugin handed the messages to
// the agent, intentq reminds) for a plain line-reader pane that echoes what is typed, and the
// worker stopped twice while their reminders go out, once with SIGTERM and once with kill -9:
// every due reminder reaches the pane exactly once (a reminder asked for again after its wait
// timed out is not typed again, a typing the dead worker had entered is not repeated, and one it
// had typed without its Enter is cleared before it is typed again).
func TestN3RestartsWith200PendingTypeEachOnce(t *testing.T) {
	// Not side by side with the other end-to-end tests: under their load (make test, 2 cores)
	// this test once saw 18 of its 200 reminders typed twice across the two restarts, not at
	// the restarts themselves. The cause is not found yet (the session's queue keeps one request
	// per intent and kind, and typings are keyed); until it is, it runs alone, as it always did.
	if testing.Short() {
		t.Skip("runs the worker binary through two restarts")
	}
	bin := binaries(t)
	env, home, ingest := ingestEnv(t,
		"INTENTQ_REMINDERS_FIRST_AFTER=10s", "INTENTQ_REMINDERS_REPEAT_EVERY=1h",
		"INTENTQ_SESSIONS_SECRETARY_TMUX_TARGET=secretary:0", "INTENTQ_SESSIONS_SECRETARY_CLI=kimi",
		"INTENTQ_SESSIONS_SECRETARY_DEFAULT=true", "INTENTQ_SESSIONS_SECRETARY_ESCALATION_INTERRUPT=false",
		"INTENTQ_SESSIONS_SECRETARY_ESCALATION_RESET=false",
		// The line reader stands in for Kimi's process.
		"INTENTQ_CLIS_KIMI_PROCESS_NAMES="+testenv.StandInProcessNames)
	// A plain line reader with the terminal's echo on, as a shell's `read` loop is.
	out := filepath.Join(home, "pane.txt")
	tmuxSession(t, env, "secretary", "trap '' INT; while IFS= read -r l; do printf '%s\\n' \"$l\" >> "+out+"; done")

	worker, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	const n = 200
	recordBurst(t, ingest, "3", n)
	reminders := func() int {
		data, _ := os.ReadFile(out)
		return strings.Count(string(data), "【未対応メッセージ】")
	}
	waitCount := func(want int, timeout time.Duration) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for reminders() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d reminders in the pane after %s, want %d", reminders(), timeout, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	restart := func(sig syscall.Signal) {
		t.Helper()
		if err := worker.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		_ = worker.Wait()
		worker, lines = startWorker(t, bin, env)
		waitFor(t, lines, "ready", 60*time.Second)
	}
	waitCount(30, 5*time.Minute)
	restart(syscall.SIGTERM)
	waitCount(110, 5*time.Minute)
	restart(syscall.SIGKILL)
	waitCount(n, 6*time.Minute)

	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pane := string(data)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("msg_id=%d chat=3:", i)
		if c := strings.Count(pane, "【未対応メッセージ】"+id); c != 1 {
			t.Errorf("reminder of %d typed %d times", i, c)
		}
	}
	if lines := strings.Count(pane, "\n"); lines != n {
		t.Errorf("%d lines reached the pane, want %d (each reminder on its own line)", lines, n)
	}
}
