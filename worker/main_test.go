package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentq/intentq/activities"
	intentqhooks "github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/platform/doctor"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/internal/testkit/peers"
	"github.com/intentq/intentq/internal/testkit/procs"
	"github.com/intentq/intentq/internal/testkit/testenv"
)

// TestWorkerProcess runs the real binaries as `make run` does: the worker on the embedded
// default logs `ready` with its addresses, `starter doctor` passes against it, and SIGTERM
// shuts it down cleanly.
func TestWorkerProcess(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := binaries(t)

	home := t.TempDir()
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TMUX_TMPDIR=" + t.TempDir(), // never the developer's own tmux server
		"INTENTQ_METRICS_LISTEN=127.0.0.1:0",
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_UI_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_INGEST_LISTEN=127.0.0.1:%d", testenv.FreePort(t)),
		// The stand-in agent (cat) counts as Claude Code's process.
		"INTENTQ_CLIS_CLAUDE_PROCESS_NAMES=" + testenv.StandInProcessNames,
	}
	testenv.Agent(t, env, "secretary:0", filepath.Join(home, ".claude", "secretary", "settings.json"))
	worker, lines := startWorker(t, bin, env)
	ready := waitFor(t, lines, "ready", 60*time.Second)
	for _, key := range []string{"temporal", "ui", "ingest", "task_queue"} {
		if _, ok := ready[key]; !ok {
			t.Errorf("ready line lacks %q: %v", key, ready)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".intentq", "temporal.db")); err != nil {
		t.Errorf("embedded database not in data_dir: %v", err)
	}
	// Everything under data_dir is private: the database, its -wal and -shm, every folder.
	_ = filepath.WalkDir(filepath.Join(home, ".intentq"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v: group or others have access", path, info.Mode().Perm())
		}
		return nil
	})

	doc := exec.Command(filepath.Join(bin, "starter"), "doctor", "--json")
	doc.Env = env
	var out bytes.Buffer
	doc.Stdout = &out
	doc.Stderr = &out
	if err := doc.Run(); err != nil {
		t.Fatalf("starter doctor: %v\n%s", err, out.String())
	}
	var report doctor.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil || !report.OK() || len(report) < 6 {
		t.Fatalf("doctor --json = %s (%v)", out.String(), err)
	}

	starterCommands(t, filepath.Join(bin, "starter"), env)

	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, lines, "stopped", 40*time.Second)
	if err := worker.Wait(); err != nil {
		t.Errorf("worker exit after SIGTERM: %v", err)
	}

	// With the worker gone, doctor fails and says so with exit code 1.
	doc = exec.Command(filepath.Join(bin, "starter"), "doctor")
	doc.Env = env
	text, err := doc.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Errorf("doctor with nothing running: err %v, want exit 1\n%s", err, text)
	}
	if !strings.Contains(string(text), "FAIL") {
		t.Errorf("doctor output lacks FAIL:\n%s", text)
	}
}

// binaries builds ./worker and ./starter once per test binary and returns their directory.
func binaries(t testing.TB) string { return procs.Binaries(t) }

func TestMain(m *testing.M) {
	if standInMain() {
		return
	}
	code := m.Run()
	procs.Cleanup()
	os.Exit(code)
}

// eventually waits up to d for ok, looking every 200 ms, else fails the test naming what it
// waited for and what show says then.
func eventually(t testing.TB, what string, d time.Duration, ok func() bool, show func() string) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s\n%s", d, what, show())
		}
	}
}

// startWorker runs the worker binary with env and returns it with its log lines.
func startWorker(t testing.TB, bin string, env []string) (*exec.Cmd, <-chan map[string]any) {
	t.Helper()
	w := procs.StartWorker(t, bin, env)
	return w.Cmd, w.Lines
}

// readyWorker starts the worker with env, waits until it is ready and returns its log lines.
func readyWorker(t testing.TB, env []string) <-chan map[string]any {
	t.Helper()
	_, lines := startWorker(t, binaries(t), env)
	waitFor(t, lines, "ready", 60*time.Second)
	return lines
}

// newBot is a Telegram Bot API stand-in for token, closed when the test ends.
func newBot(t testing.TB, token string) *fakebot.Server {
	b := fakebot.New(token)
	t.Cleanup(b.Close)
	return b
}

// ingestEnv is the environment of a worker on its own embedded server, HOME and tmux server,
// with an ingest endpoint (token "tok") at the returned address, plus extra.
func ingestEnv(t testing.TB, extra ...string) (env []string, home, ingest string) {
	t.Helper()
	peers.Tmux(t)
	home = t.TempDir()
	tmuxDir, err := os.MkdirTemp("", "iq") // short: tmux sockets have a path limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmuxDir) })
	ingest = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMUX_TMPDIR=" + tmuxDir,
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_UI_PORT=%d", testenv.FreePort(t)),
		"INTENTQ_INGEST_LISTEN=" + ingest, "INTENTQ_INGEST_TOKEN=tok", "INTENTQ_METRICS_LISTEN=127.0.0.1:0",
		"INTENTQ_CLIS_CLAUDE_PROCESS_NAMES=" + testenv.StandInProcessNames,
		// Stand-in panes' shell loops run in sh, not the user's login shell (tmux's default).
		"SHELL=/bin/sh",
	}
	return append(env, extra...), home, ingest
}

// envValue returns name's value in env; the test fails when it is not there.
func envValue(t testing.TB, env []string, name string) string {
	t.Helper()
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	t.Fatalf("%s not in the environment", name)
	return ""
}

// writeConfig writes home/intentq.yaml for a worker whose settings come from env: the embedded
// server's ports and the ingest address, then rest (telegram, sessions, ...). An agent CLI that
// starts `starter mcp` with a few variables of its environment only hands it this file
// (INTENTQ_CONFIG).
func writeConfig(t testing.TB, env []string, home, rest string) string {
	t.Helper()
	file := filepath.Join(home, "intentq.yaml")
	yaml := fmt.Sprintf("temporal:\n  embedded:\n    port: %s\n    ui_port: %s\ningest:\n  listen: %q\n",
		envValue(t, env, "INTENTQ_TEMPORAL_EMBEDDED_PORT"), envValue(t, env, "INTENTQ_TEMPORAL_EMBEDDED_UI_PORT"),
		envValue(t, env, "INTENTQ_INGEST_LISTEN")) + rest
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// waitIntentClosed waits until `starter show id` says the intent is closed (after an agent's
// reply); the test fails with what it shows when timeout passes first.
func waitIntentClosed(t testing.TB, env []string, id string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(500 * time.Millisecond) {
		out := starterRun(t, env, 0, "show", id, "--json")
		if strings.Contains(out, `"status": "closed"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("intent %s after the reply:\n%s", id, out)
		}
	}
}

// tmuxSession starts a detached tmux session running shell on env's tmux server; the test's
// end kills the server.
func tmuxSession(t testing.TB, env []string, name, shell string) {
	t.Helper()
	tmux := exec.Command("tmux", "new-session", "-d", "-s", name, "-x", "250", "-y", "50", shell)
	tmux.Env = env
	if out, err := tmux.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { k := exec.Command("tmux", "kill-server"); k.Env = env; _ = k.Run() })
}

// recordBurst records n messages of chat through the ingest endpoint.
func recordBurst(t testing.TB, ingest, chat string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ingest+"/v1/intents",
			strings.NewReader(fmt.Sprintf(`{"chat_id":%q,"message_id":%d,"text":"burst %d"}`, chat, i, i)))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("record %d: %v %v", i, err, resp)
		}
		resp.Body.Close()
	}
}

// H2: kill -9 of the worker during a burst of 100 reminders leaves a history file whose every
// line parses, numbered without duplicates or gaps, and every reminder is in it after restart.
func TestH2HistoryAcrossKill9(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker binary through a crash")
	}
	bin := binaries(t)
	env, home, ingest := ingestEnv(t, "INTENTQ_REMINDERS_FIRST_AFTER=1s", "INTENTQ_REMINDERS_REPEAT_EVERY=1h")
	// Like an agent, the reader survives the escalation's C-c.
	tmuxSession(t, env, "secretary", "trap '' INT; stty -echo; exec cat > /dev/null")

	worker, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	const n = 100
	recordBurst(t, ingest, "3", n)
	history := filepath.Join(home, ".intentq", "history", "secretary.jsonl")
	countLines := func() int {
		data, _ := os.ReadFile(history)
		return strings.Count(string(data), "\n")
	}
	deadline := time.Now().Add(60 * time.Second)
	for countLines() < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	killedAt := countLines()

	_, lines = startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	reminded := func() map[string]bool {
		data, _ := os.ReadFile(history)
		entries, _, _ := activities.ReadHistory(bytes.NewReader(data))
		seen := map[string]bool{}
		for _, e := range entries {
			seen[strings.SplitN(e.ID, "#", 2)[0]] = true
		}
		return seen
	}
	deadline = time.Now().Add(4 * time.Minute)
	for len(reminded()) < n && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	data, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var e activities.HistoryEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d does not parse: %q", i+1, line)
		}
		seqs = append(seqs, e.Seq)
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("seq %d at line %d: duplicates or gaps in %v", seq, i+1, seqs)
		}
	}
	if got := len(reminded()); got != n {
		t.Errorf("%d of %d intents' reminders are in the history", got, n)
	}
	t.Logf("killed after %d entries; %d entries at the end", killedAt, len(seqs))
}

func waitFor(t testing.TB, lines <-chan map[string]any, msg string, timeout time.Duration) map[string]any {
	t.Helper()
	return procs.WaitFor(t, lines, msg, timeout)
}

// run runs the starter and returns its output and exit code.
func run(t testing.TB, starter string, env []string, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(starter, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// starterCommands drives record, pending, show, close, link and ignore through the binary.
func starterCommands(t testing.TB, starter string, env []string) {
	out, code := run(t, starter, env, "hello from stdin\nsecond line\n", "record", "--chat", "9", "--msg", "1", "--text", "-")
	if code != 0 || !strings.Contains(out, "recorded intent/9/1 (session secretary)") {
		t.Fatalf("record: %d %s", code, out)
	}
	out, code = run(t, starter, env, "", "record", "--chat", "9", "--msg", "1", "--text", "again")
	if code != 0 || !strings.Contains(out, "already recorded intent/9/1") {
		t.Errorf("record twice: %d %s", code, out)
	}
	run(t, starter, env, "", "record", "--chat", "9", "--msg", "2", "--text", "second intent")
	out, code = run(t, starter, env, "", "record", "--chat", "9/x", "--msg", "3", "--text", "bad")
	if code != 1 || !strings.Contains(out, "chat_id") {
		t.Errorf("record with a bad chat: %d %s", code, out)
	}

	var list []map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for len(list) < 2 && time.Now().Before(deadline) {
		out, code = run(t, starter, env, "", "pending", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("pending --json: %d %s", code, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(list) != 2 {
		t.Fatalf("pending --json = %s", out)
	}
	for _, key := range []string{"id", "chat_id", "message_id", "status", "received_at", "reminders", "last_reminded_at"} {
		if _, ok := list[0][key]; !ok {
			t.Errorf("pending --json lacks %q: %v", key, list[0])
		}
	}
	if list[0]["id"] != "intent/9/1" || list[0]["status"] != "pending" || list[0]["snippet"] != "hello from stdin second line" {
		t.Errorf("pending[0] = %v", list[0])
	}
	out, _ = run(t, starter, env, "", "pending")
	if !strings.Contains(out, "intent/9/1") || !strings.Contains(out, "REMINDERS") {
		t.Errorf("pending table:\n%s", out)
	}

	out, code = run(t, starter, env, "", "show", "9/1")
	if code != 0 || !strings.Contains(out, "hello from stdin\nsecond line") || !strings.Contains(out, "pending") {
		t.Errorf("show: %d %s", code, out)
	}
	if out, code = run(t, starter, env, "", "link", "intent/9/2", "--job", "J-1"); code != 0 || !strings.Contains(out, "linked") {
		t.Errorf("link: %d %s", code, out)
	}
	if out, code = run(t, starter, env, "", "close", "--chat", "9", "--reply-to", "1"); code != 0 || !strings.Contains(out, "closed") {
		t.Errorf("close: %d %s", code, out)
	}
	// Read your writes: the list right after the close no longer shows it.
	if out, _ = run(t, starter, env, "", "pending"); strings.Contains(out, "intent/9/1 ") {
		t.Errorf("pending right after the close still lists it:\n%s", out)
	}
	if out, code = run(t, starter, env, "", "close", "intent/9/1"); code != 1 || !strings.Contains(out, "already closed") {
		t.Errorf("close twice: %d %s", code, out)
	}
	if out, code = run(t, starter, env, "", "close", "9/404"); code != 1 || !strings.Contains(out, "no such intent") {
		t.Errorf("close unknown: %d %s", code, out)
	}
	if out, code = run(t, starter, env, "", "ignore", "9/2"); code != 0 || !strings.Contains(out, "ignored") {
		t.Errorf("ignore a linked intent: %d %s", code, out)
	}
	if _, code = run(t, starter, env, "", "link"); code != 2 {
		t.Errorf("link without arguments: exit %d, want 2", code)
	}
}

// Hardening, SPEC S4: a hook that cannot load its config still allows (exit 0, no output) but
// says so where the person sees it: one ntfy push per cause, however many hook runs meet it,
// and `starter doctor` shows the last hook error until a hook run works again. intentq-hook, as
// setup installs it, hands such a run to the starter: the same one voice.
func TestHookConfigErrorIsReported(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	starter := filepath.Join(binaries(t), "starter")
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	home := t.TempDir()
	good := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMUX_TMPDIR=" + t.TempDir(),
		"INTENTQ_NTFY_URL=" + ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone",
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_PORT=%d", testenv.FreePort(t))}
	bad := append(append([]string{}, good...), "INTENTQ_HOOKS_TIMEOUT=abc")

	hook := func(env []string, program string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(filepath.Dir(starter), program), "hook", "stop")
		cmd.Env = env
		cmd.Stdin = strings.NewReader(`{"session_id":"s","stop_hook_active":false}`)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stdout.Len() != 0 {
			t.Fatalf("hook: %v, stdout %q (want exit 0 and nothing: allow)\n%s", err, stdout.String(), stderr.String())
		}
	}
	hookErrors := func() doctor.Result {
		t.Helper()
		cmd := exec.Command(starter, "doctor", "--json")
		cmd.Env = good
		out, _ := cmd.Output()
		var report doctor.Report
		if err := json.Unmarshal(out, &report); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, out)
		}
		for _, r := range report {
			if r.Name == "hook errors" {
				return r
			}
		}
		t.Fatalf("doctor has no hook errors check:\n%s", out)
		return doctor.Result{}
	}

	for _, program := range []string{"starter", "intentq-hook", "intentq-hook"} {
		hook(bad, program)
	}
	if msgs := ntfy.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0].Message, "hooks.timeout") {
		t.Fatalf("pushes = %+v, want one naming hooks.timeout", msgs)
	}
	if r := hookErrors(); r.OK || !strings.Contains(r.Detail, "hooks.timeout") || !strings.Contains(r.Detail, "3 runs") {
		t.Errorf("doctor hook errors = %+v", r)
	}
	hook(good, "intentq-hook")
	if r := hookErrors(); !r.OK {
		t.Errorf("after a working hook run: %+v", r)
	}
	if n := len(ntfy.Messages()); n != 1 {
		t.Errorf("%d pushes, want still 1", n)
	}
}

// starterRun runs the starter binary with env and returns its output; it fails the test when
// the exit code is not want.
func starterRun(t testing.TB, env []string, want int, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binaries(t), "starter"), args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("starter %s: %v", strings.Join(args, " "), err)
	}
	if code != want {
		t.Fatalf("starter %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	return string(out)
}

// `starter setup` merges the hooks into the secretary's settings (backup first, idempotent,
// --dry-run shows the diff); --service writes the user units and enables them, --remove undoes
// it. systemctl is a stand-in that records its arguments (no user systemd runs here).
func TestSetupHooksAndService(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := binaries(t)
	home := t.TempDir()
	fakeBin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "systemctl.log")
	if err := os.WriteFile(filepath.Join(fakeBin, "systemctl"), []byte("#!/bin/sh\necho \"$@\" >> '"+calls+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + fakeBin + ":" + os.Getenv("PATH")}
	settings := filepath.Join(home, ".claude", "secretary", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	// The person's own hook stays; an older setup's post-tool-use, limited to two tools, now
	// runs after every tool (it hands over messages at each tool call); its allowance of the
	// whole intentq MCP server becomes one of the session-scoped tools (issue 23). The hooks an
	// earlier setup wrote, with this starter or one that is gone, run intentq-hook now (issue
	// 38); the person's own stays as it is.
	mine := `{"model": "opus", "permissions": {"allow": ["Bash(ls:*)", "mcp__intentq"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}],
	  "PostToolUse": [{"matcher": "mcp__plugin_telegram_telegram__reply|Bash", "hooks": [{"type": "command", "command": "/old/starter hook post-tool-use", "timeout": 10}]}],
	  "Stop": [{"hooks": [{"type": "command", "command": "` + filepath.Join(bin, "starter") + ` hook stop", "timeout": 10}]}]}}`
	if err := os.WriteFile(settings, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"theme":"dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	diff := starterRun(t, env, 0, "setup", "--dry-run")
	if !strings.Contains(diff, "+ ") || !strings.Contains(diff, "hook session-start") {
		t.Errorf("dry run shows no diff:\n%s", diff)
	}
	if b, _ := os.ReadFile(settings); string(b) != mine {
		t.Fatalf("dry run changed the settings:\n%s", b)
	}
	starterRun(t, env, 0, "setup")
	var got struct {
		Model string                      `json:"model"`
		Hooks map[string][]map[string]any `json:"hooks"`
	}
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &got); err != nil || got.Model != "opus" || len(got.Hooks["PreToolUse"]) != 2 || len(got.Hooks) != len(intentqhooks.ClaudeEvents) ||
		len(got.Hooks["PostToolUse"]) != 1 || got.Hooks["PostToolUse"][0]["matcher"] != nil {
		t.Fatalf("merged settings = %s (%v)", b, err)
	}
	if r := doctor.Hooks(settings); !r.OK {
		t.Errorf("doctor after setup: %+v", r)
	}
	hookBin := filepath.Join(bin, "intentq-hook")
	for name, groups := range got.Hooks {
		for _, g := range groups {
			for _, h := range g["hooks"].([]any) {
				cmd := h.(map[string]any)["command"].(string)
				switch {
				case cmd == "my-guard":
				case !strings.HasPrefix(cmd, hookBin+" hook "):
					t.Errorf("%s runs %q, not intentq-hook", name, cmd)
				}
			}
		}
	}
	// Only the session-scoped MCP tools are allowed without a prompt (issue 23): not the whole
	// server, not inbox_send.
	if !strings.Contains(string(b), `"mcp__intentq__reply"`) || strings.Contains(string(b), `"mcp__intentq"`) || strings.Contains(string(b), "inbox_send") || !strings.Contains(string(b), `"Bash(ls:*)"`) {
		t.Errorf("intentq's session-scoped MCP tools are not (or not only) allowed in %s", b)
	}
	var claudeJSON struct {
		Theme      string `json:"theme"`
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	cj, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err := json.Unmarshal(cj, &claudeJSON); err != nil || claudeJSON.Theme != "dark" ||
		claudeJSON.MCPServers["intentq"].Command != filepath.Join(bin, "starter") || strings.Join(claudeJSON.MCPServers["intentq"].Args, " ") != "mcp" {
		t.Errorf("~/.claude.json = %s (%v)", cj, err)
	}
	if backups, _ := filepath.Glob(settings + ".bak-*"); len(backups) != 1 {
		t.Errorf("backups = %v", backups)
	}
	if out := starterRun(t, env, 0, "setup"); !strings.Contains(out, "already") {
		t.Errorf("second setup: %s", out)
	}
	if after, _ := os.ReadFile(settings); string(after) != string(b) {
		t.Error("a second setup changed the settings")
	}

	units := filepath.Join(home, ".config", "systemd", "user")
	dry := starterRun(t, env, 0, "setup", "--service", "--dry-run")
	if !strings.Contains(dry, "Restart=always") || !strings.Contains(dry, "would run systemctl --user enable --now intentq-worker.service intentq-watchdog.timer") {
		t.Errorf("service dry run:\n%s", dry)
	}
	if _, err := os.Stat(units); err == nil {
		t.Fatal("the dry run wrote units")
	}
	starterRun(t, env, 0, "setup", "--service")
	for _, name := range []string{"intentq-worker.service", "intentq-watchdog.service", "intentq-watchdog.timer"} {
		b, err := os.ReadFile(filepath.Join(units, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "intentq-worker.service" && !strings.Contains(string(b), filepath.Join(bin, "worker")) {
			t.Errorf("%s does not run the worker next to starter:\n%s", name, b)
		}
	}
	starterRun(t, env, 0, "setup", "--service", "--remove")
	if entries, _ := os.ReadDir(units); len(entries) != 0 {
		t.Errorf("units left after --remove: %v", entries)
	}
	log, _ := os.ReadFile(calls)
	want := "--user daemon-reload\n--user enable --now intentq-worker.service intentq-watchdog.timer\n" +
		"--user disable --now intentq-worker.service intentq-watchdog.timer\n--user daemon-reload\n"
	if string(log) != want {
		t.Errorf("systemctl calls:\n%s\nwant\n%s", log, want)
	}
}

// The watchdog outside the worker: with the worker killed (-9), `doctor --notify` pushes once,
// stays quiet on the next runs, and pushes "recovered" once when the worker is back.
func TestDoctorNotifyOutlivesTheWorker(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker binary")
	}
	bin := binaries(t)
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	home := t.TempDir()
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMUX_TMPDIR=" + t.TempDir(),
		"INTENTQ_METRICS_LISTEN=127.0.0.1:0", "INTENTQ_NTFY_URL=" + ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone",
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_UI_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_INGEST_LISTEN=127.0.0.1:%d", testenv.FreePort(t)),
	}
	alerts := func() []fakentfy.Message {
		var out []fakentfy.Message
		for _, m := range ntfy.Messages() {
			if strings.HasPrefix(m.Title, "intentq: ") {
				out = append(out, m)
			}
		}
		return out
	}
	worker, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	// A fresh install: no pane and no hooks yet are warnings, exit 0, no push.
	if out := starterRun(t, env, 0, "doctor", "--notify"); !strings.Contains(out, "WARN") {
		t.Errorf("fresh install:\n%s", out)
	}
	if n := len(alerts()); n != 0 {
		t.Fatalf("%d pushes with everything running", n)
	}
	_ = worker.Process.Kill()
	_ = worker.Wait()
	starterRun(t, env, 1, "doctor", "--notify")
	if a := alerts(); len(a) != 1 || !strings.Contains(a[0].Title, "failing") || !strings.Contains(a[0].Message, "temporal") {
		t.Fatalf("after kill -9: %+v", a)
	}
	starterRun(t, env, 1, "doctor", "--notify")
	starterRun(t, env, 1, "doctor", "--notify")
	if n := len(alerts()); n != 1 {
		t.Fatalf("%d pushes after three runs with the worker down, want 1", n)
	}
	_, lines = startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	starterRun(t, env, 0, "doctor", "--notify")
	if a := alerts(); len(a) != 2 || a[1].Title != "intentq: recovered" {
		t.Fatalf("after the restart: %+v", a)
	}
	starterRun(t, env, 0, "doctor", "--notify")
	if n := len(alerts()); n != 2 {
		t.Errorf("%d pushes, want still 2", n)
	}
}

// The MCP server, driven by the official SDK's client over stdio: tools listed with schemas;
// reply sends once (a repeated call answers with the same message IDs) and closes the intent;
// a long answer is split at 4096; bad arguments, an unknown or closed intent and a Telegram 400
// are tool errors, never a crashed server. One that cannot tell its session reads and closes
// nothing (issue 61): all four messages are still pending after it tried.
func TestMCPServerOverStdio(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker binary")
	}
	bin := binaries(t)
	bot := fakebot.New("123:mcp")
	t.Cleanup(bot.Close)
	home := t.TempDir()
	ingest := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMUX_TMPDIR=" + t.TempDir(),
		"INTENTQ_METRICS_LISTEN=127.0.0.1:0", "INTENTQ_INGEST_LISTEN=" + ingest, "INTENTQ_INGEST_TOKEN=tok",
		"INTENTQ_TELEGRAM_TOKEN=123:mcp", "INTENTQ_TELEGRAM_API_ENDPOINT=" + bot.Endpoint(), "INTENTQ_TELEGRAM_ALLOWED_CHAT_IDS=42",
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_UI_PORT=%d", testenv.FreePort(t)),
	}
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	for _, id := range []string{"7", "8", "9", "10"} {
		starterRun(t, env, 0, "record", "--chat", "42", "--msg", id, "--text", "question "+id)
	}

	cmd := exec.Command(filepath.Join(bin, "starter"), "mcp", "--session", "secretary")
	cmd.Env = env
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	session, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == "reply" {
			schema, _ := json.Marshal(tool.InputSchema)
			for _, arg := range []string{"chat_id", "text", "reply_to", "intent"} {
				if !strings.Contains(string(schema), `"`+arg+`"`) {
					t.Errorf("reply schema lacks %s: %s", arg, schema)
				}
			}
		}
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "close ignore inbox_read inbox_send link pending react reply" {
		t.Errorf("tools = %s", got)
	}
	call := func(name string, args map[string]any) (*sdk.CallToolResult, map[string]any) {
		t.Helper()
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: protocol error %v", name, err)
		}
		var out map[string]any
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			_ = json.Unmarshal(b, &out)
		}
		return res, out
	}
	text := func(res *sdk.CallToolResult) string {
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, " ")
	}

	// Issue 61: a server that cannot tell its session (no --session, no agent, outside tmux: the
	// person's agent in another project) reads and closes nothing, and its tools say why.
	other := exec.Command(filepath.Join(bin, "starter"), "mcp")
	other.Env = env
	stranger, err := sdk.NewClient(&sdk.Implementation{Name: "another agent", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: other}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"pending", map[string]any{}}, {"close", map[string]any{"intent": "42/10"}}} {
		res, err := stranger.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: protocol error %v", c.tool, err)
		}
		if got := text(res); !res.IsError || !strings.Contains(got, "cannot tell which intentq session") || !strings.Contains(got, "outside tmux") ||
			!strings.Contains(got, "--session") || strings.Contains(got, "question") {
			t.Errorf("%s from a server with no session: error=%v %q", c.tool, res.IsError, got)
		}
	}
	stranger.Close()

	// The list is read from visibility, which is eventually consistent: all four show soon.
	res, pending := call("pending", map[string]any{})
	for deadline := time.Now().Add(30 * time.Second); !res.IsError && len(pending["intents"].([]any)) < 4 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		res, pending = call("pending", map[string]any{})
	}
	if res.IsError || len(pending["intents"].([]any)) != 4 || !strings.Contains(text(res), "question 7") {
		t.Fatalf("pending = %s", text(res))
	}
	res, out := call("reply", map[string]any{"chat_id": "42", "text": "the answer", "reply_to": "7"})
	if res.IsError || out["closed"] != true || len(out["message_ids"].([]any)) != 1 {
		t.Fatalf("reply = %s", text(res))
	}
	res, again := call("reply", map[string]any{"chat_id": "42", "text": "the answer", "reply_to": "7"})
	if res.IsError || fmt.Sprint(again["message_ids"]) != fmt.Sprint(out["message_ids"]) {
		t.Fatalf("repeated reply = %s", text(res))
	}
	if sent := bot.Sent(); len(sent) != 1 || sent[0].ReplyTo != 7 || sent[0].ChatID != 42 || sent[0].Text != "the answer" {
		t.Fatalf("sent = %+v, want one reply to 7", sent)
	}
	// The answer goes out before the intent records itself closed: waited for.
	waitIntentClosed(t, env, "42/7", 30*time.Second)
	long := strings.Repeat("x", 5000)
	if res, out := call("reply", map[string]any{"chat_id": "42", "text": long, "reply_to": "8"}); res.IsError || len(out["message_ids"].([]any)) != 2 {
		t.Errorf("long reply = %s", text(res))
	}
	for name, c := range map[string]struct {
		args map[string]any
		want string
	}{
		"no text":  {map[string]any{"chat_id": "42", "reply_to": "9"}, "text"},
		"unknown":  {map[string]any{"chat_id": "42", "text": "x", "reply_to": "999"}, "no such intent"},
		"closed":   {map[string]any{"chat_id": "42", "text": "another answer", "reply_to": "7"}, "already closed"},
		"bad type": {map[string]any{"chat_id": 42, "text": "x"}, "chat_id"},
	} {
		if res, _ := call("reply", c.args); !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s: %v %q, want a tool error with %q", name, res.IsError, text(res), c.want)
		}
	}
	bot.FailNextMethod("sendMessage", 400, 1)
	if res, _ := call("reply", map[string]any{"chat_id": "42", "text": "refused", "reply_to": "9"}); !res.IsError || !strings.Contains(text(res), "400") {
		t.Errorf("Telegram 400: %q", text(res))
	}
	if res, _ := call("react", map[string]any{"chat_id": "42", "message_id": "10", "emoji": "👍"}); res.IsError {
		t.Errorf("react: %s", text(res))
	}
	if r := bot.Reactions(); len(r) == 0 || r[len(r)-1].Emoji != "👍" || r[len(r)-1].MessageID != 10 {
		t.Errorf("reactions = %+v", r)
	}
	if res, _ := call("ignore", map[string]any{"intent": "42/10", "reason": "spam"}); res.IsError {
		t.Errorf("ignore: %s", text(res))
	}
}

// `starter run-agent` starts the agent so its hooks work: Claude Code with --settings (the
// file `starter setup` writes the hooks into) and the agent's id in its environment and in the
// pane's @agent_id option.
func TestRunAgentLaunch(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the starter binary")
	}
	peers.Tmux(t)
	home := t.TempDir()
	fakeBin := t.TempDir()
	record := filepath.Join(t.TempDir(), "launch.txt")
	script := "#!/bin/sh\necho \"$INTENTQ_AGENT_ID $*\" > '" + record + "'\nexec sleep 600\n"
	if err := os.WriteFile(filepath.Join(fakeBin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + fakeBin + ":" + os.Getenv("PATH"), "TMUX_TMPDIR=" + t.TempDir()}
	t.Cleanup(func() {
		k := exec.Command("tmux", "kill-server")
		k.Env = env
		_ = k.Run()
	})
	starterRun(t, env, 0, "run-agent")
	deadline := time.Now().Add(10 * time.Second)
	var got []byte
	for len(got) == 0 && time.Now().Before(deadline) {
		got, _ = os.ReadFile(record)
		time.Sleep(50 * time.Millisecond)
	}
	want := "secretary --settings " + filepath.Join(home, ".claude", "secretary", "settings.json") + "\n"
	if string(got) != want {
		t.Errorf("claude started as %q, want %q", got, want)
	}
	opt := exec.Command("tmux", "show-options", "-pqv", "-t", "=secretary:", "@agent_id")
	opt.Env = env
	if out, err := opt.Output(); err != nil || strings.TrimSpace(string(out)) != "secretary" {
		t.Errorf("@agent_id = %q, %v", out, err)
	}
	if out := starterRun(t, env, 0, "run-agent"); !strings.Contains(out, "already runs") {
		t.Errorf("a second run-agent: %s", out)
	}
}
