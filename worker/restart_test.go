package main_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/peers"
	"github.com/intentq/intentq/internal/testkit/testenv"
)

// Issue 10: 200 intents pending (recorded by the ingest door: the plugin handed the messages to
// the agent, intentq reminds) for a plain line-reader pane that echoes what is typed, and the
// worker stopped twice while their reminders go out, once with SIGTERM and once with kill -9:
// every due reminder reaches the pane exactly once (a reminder asked for again after its wait
// timed out is not typed again, a typing the dead worker had entered is not repeated, and one it
// had typed without its Enter is cleared before it is typed again).
func TestN3RestartsWith200PendingTypeEachOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the worker binary through two restarts")
	}
	peers.Tmux(t)
	bin := binaries(t)
	home := t.TempDir()
	tmuxDir, err := os.MkdirTemp("", "iq")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmuxDir)
	ingest := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMUX_TMPDIR=" + tmuxDir,
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_UI_PORT=%d", testenv.FreePort(t)),
		"INTENTQ_INGEST_LISTEN=" + ingest, "INTENTQ_INGEST_TOKEN=tok", "INTENTQ_METRICS_LISTEN=127.0.0.1:0",
		"INTENTQ_REMINDERS_FIRST_AFTER=10s", "INTENTQ_REMINDERS_REPEAT_EVERY=1h",
		"INTENTQ_SESSIONS_SECRETARY_TMUX_TARGET=secretary:0", "INTENTQ_SESSIONS_SECRETARY_CLI=kimi",
		"INTENTQ_SESSIONS_SECRETARY_DEFAULT=true", "INTENTQ_SESSIONS_SECRETARY_ESCALATION_INTERRUPT=false",
		"INTENTQ_SESSIONS_SECRETARY_ESCALATION_RESET=false",
	}
	// A plain line reader with the terminal's echo on, as a shell's `read` loop is.
	out := filepath.Join(t.TempDir(), "pane.txt")
	tmux := exec.Command("tmux", "new-session", "-d", "-s", "secretary", "-x", "250", "-y", "50",
		"trap '' INT; while IFS= read -r l; do printf '%s\\n' \"$l\" >> "+out+"; done")
	tmux.Env = env
	if b, err := tmux.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, b)
	}
	defer func() { k := exec.Command("tmux", "kill-server"); k.Env = env; _ = k.Run() }()

	worker, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	const n = 200
	for i := 1; i <= n; i++ {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ingest+"/v1/intents",
			strings.NewReader(fmt.Sprintf(`{"chat_id":"3","message_id":%d,"text":"burst %d"}`, i, i)))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("record %d: %v %v", i, err, resp)
		}
		resp.Body.Close()
	}
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
