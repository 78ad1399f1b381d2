package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/testkit/argvscan"
	"github.com/intentq/intentq/internal/testkit/fakeanthropic"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/toolpolicy"
)

// fsmonitorMarker is what the planted fsmonitor prints when git runs it: the arithmetic is
// evaluated by the shell git would start, so the text of the plant itself never matches.
const fsmonitorMarker = "FSMON42"

// plantScript plays the model of issue 33's first attack: a web run plants a repository's HEAD
// and config (core.fsmonitor = a command) in the session's work folder with the allowed Write
// and mkdir, then runs the allowed git status; a later telegram run runs a plain git status.
func plantScript(project string) fakeanthropic.Script {
	config := "[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = echo FSMON$((40+2)) >&2; touch " +
		filepath.Join(project, "PWNED") + "; echo\n"
	web := []fakeanthropic.Turn{
		{ToolName: "Write", ToolInput: map[string]any{"file_path": filepath.Join(project, "HEAD"), "content": "ref: refs/heads/main\n"}},
		{ToolName: "Write", ToolInput: map[string]any{"file_path": filepath.Join(project, "config"), "content": config}},
		{ToolName: "Bash", ToolInput: map[string]any{"command": "mkdir objects refs", "description": "make the repository's folders"}},
		{ToolName: "Bash", ToolInput: map[string]any{"command": "git status", "description": "status"}},
	}
	telegram := []fakeanthropic.Turn{{ToolName: "Bash", ToolInput: map[string]any{"command": "git status", "description": "status"}}}
	probe := func(prompt string) []fakeanthropic.Turn {
		// The prompt names the paths to try: PROBE_DATA=... PROBE_PERSON=... PROBE_TMUX=...
		var pairs []string
		for _, f := range strings.Fields(prompt) {
			if k, v, ok := strings.Cut(f, "="); ok && strings.HasPrefix(k, "PROBE_") {
				pairs = append(pairs, "$"+k, v)
			}
		}
		return []fakeanthropic.Turn{
			{ToolName: "Write", ToolInput: map[string]any{"file_path": filepath.Join(project, "probe.sh"), "content": strings.NewReplacer(pairs...).Replace(confinementProbe)}},
			{ToolName: "Bash", ToolInput: map[string]any{"command": "sh probe.sh", "description": "probe"}},
		}
	}
	return func(r fakeanthropic.Request) fakeanthropic.Turn {
		if len(r.Messages) == 0 {
			return fakeanthropic.Turn{Text: "OK."}
		}
		var steps []fakeanthropic.Turn
		switch first := r.Messages[0].Text(); {
		case strings.Contains(first, "plant the repository"):
			steps = web
		case strings.Contains(first, "check the repository"):
			steps = telegram
		case strings.Contains(first, "probe the confinement"):
			steps = probe(first)
		default:
			return fakeanthropic.Turn{Text: "OK."}
		}
		step := 0
		for _, m := range r.Messages {
			if m.Role == "assistant" {
				step++
			}
		}
		if step < len(steps) {
			return steps[step]
		}
		return fakeanthropic.Turn{Text: "done"}
	}
}

// confinementProbe is what a run of the cli channel (every tool allowed) runs as a script, so
// that the guard cannot see it and only the kernel stands in its way: its capabilities, an unmount
// of the tmpfs over data_dir and a remount of /, then every secret of the person's it can name
// ($PROBE_DATA, $PROBE_PERSON and $PROBE_TMUX are replaced by the paths the prompt names).
const confinementProbe = `grep -E '^(CapEff|CapBnd):' /proc/self/status
for d in "$PROBE_DATA" /tmp /; do umount -l "$d" 2>/dev/null && echo "UNMOUNTED $d"; done
mount -o remount,rw / 2>/dev/null && echo REMOUNTED
cat "$PROBE_DATA/access.token" "$PROBE_PERSON/.bash_history" "$PROBE_PERSON/.claude.json" 2>/dev/null
for f in "$PROBE_TMUX"/tmux-*/*; do [ -e "$f" ] && echo "TMUX-SEEN:$f"; done
echo PROBE-DONE
`

// headlessEnv configures the security worker's headless session "batch": the real Claude Code
// against the stand-in api, in a work folder the person set (shared by the channels, the harder
// case: each channel's default folder is its own).
func headlessEnv(t *testing.T, api *fakeanthropic.Server, claude, project string) []string {
	t.Helper()
	return []string{
		"INTENTQ_SESSIONS_BATCH_MODE=headless", "INTENTQ_SESSIONS_BATCH_CLI=claude",
		"INTENTQ_CLIS_CLAUDE_COMMAND=" + claude, "INTENTQ_POLICIES_SESSIONS_BATCH_DIR=" + project,
		// The cli channel pre-approves Write and any shell command (Claude Code's print mode
		// refuses a tool no rule names): the confinement probe runs a script the guard cannot read.
		"INTENTQ_POLICIES_CHANNELS_CLI_ALLOW=Write,Bash", "INTENTQ_POLICIES_CHANNELS_CLI_DENY=*",
		"ANTHROPIC_BASE_URL=" + api.URL(), "ANTHROPIC_API_KEY=sk-ant-security-0123456789abcdefghij",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
}

// playFsmonitorPlant runs the web run that tries to plant a repository and the telegram run that
// follows, through the real worker (its sandbox, its policy hook, its sweep after the run) and the
// real Claude Code: the repository's HEAD never stays in the folder (issue 61: before, it did, and
// the person's own git status there ran the planted fsmonitor, outside any sandbox), and git runs
// nothing the plant names, in either run or in the person's hands.
func (w *securityWorker) playFsmonitorPlant(t *testing.T) {
	t.Helper()
	// The run may end refused (the guard denies the write of HEAD): what counts is what it left.
	out, _ := run(t, filepath.Join(w.bin, "starter"), w.env, "plant the repository", "prompt", "--session", "batch", "--channel", "web", "--wait", "-")
	// The attack was played: the model asked to write the repository's HEAD.
	tried := false
	for _, r := range w.api.Requests() {
		if strings.Contains(r.SinceAssistant(), "tool_result") && strings.Contains(r.SinceAssistant(), "HEAD") {
			tried = true
		}
	}
	if !tried {
		t.Fatalf("the web run never tried to write HEAD: the attack was not played\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(w.project, "HEAD")); err == nil {
		t.Fatalf("the web run left a repository's HEAD in the person's folder\n%s", out)
	}
	// The person's own git, without the runs' hardening, in the folder the run wrote.
	cmd := exec.Command("git", "status")
	cmd.Dir = w.project
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(w.project)}
	personal, _ := cmd.CombinedOutput()
	if strings.Contains(string(personal), fsmonitorMarker) {
		t.Fatalf("the person's git status ran the planted fsmonitor: %s", personal)
	}
	out, code := run(t, filepath.Join(w.bin, "starter"), w.env, "check the repository", "prompt", "--session", "batch", "--channel", "telegram", "--wait", "-")
	if code != 0 {
		t.Fatalf("the telegram run: exit %d\n%s", code, out)
	}
	for _, r := range w.api.Requests() {
		if said := r.SinceAssistant(); strings.Contains(said, fsmonitorMarker) {
			t.Fatalf("git ran the planted fsmonitor: %s", said)
		}
	}
	if _, err := os.Stat(filepath.Join(w.project, "PWNED")); err == nil {
		t.Fatal("the planted fsmonitor ran")
	}
}

// playRootConfinement (issue 61, findings 1 and 5): a headless run of the cli channel (Write and
// every shell command allowed: it runs a script the guard cannot read, so only the kernel
// confines it) of the worker the tests run as root: no
// capability, no unmount or remount, and none of the person's secrets: the access token under
// data_dir, the shell history and Claude Code's own file in the home, the tmux server's sockets.
// Before, as root, the run unmounted the tmpfs over data_dir and read the token.
func (w *securityWorker) playRootConfinement(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatal("this attack is about a worker that runs as root: run the tests as root (CI does)")
	}
	var tmux string
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "TMUX_TMPDIR="); ok {
			tmux = v
		}
	}
	if tmux == "" {
		t.Fatal("the worker's environment names no TMUX_TMPDIR: the test would prove nothing about its sockets")
	}
	if socks, _ := filepath.Glob(filepath.Join(tmux, "tmux-*", "*")); len(socks) == 0 {
		t.Fatalf("no tmux socket under %s on the host: the test would prove nothing about them", tmux)
	}
	const history = "HISTORY-SECRET-61"
	if err := os.WriteFile(filepath.Join(w.home, ".bash_history"), []byte(history+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, ".claude.json"), []byte(`{"primaryApiKey":"CLAUDE-JSON-SECRET"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The paths to try ride in the prompt (the stand-in model writes them into the script).
	prompt := fmt.Sprintf("probe the confinement PROBE_DATA=%s PROBE_PERSON=%s PROBE_TMUX=%s", filepath.Join(w.home, ".intentq"), w.home, tmux)
	out, code := run(t, filepath.Join(w.bin, "starter"), w.env, prompt, "prompt", "--session", "batch", "--channel", "cli", "--wait", "-")
	if code != 0 {
		var said []string
		for _, r := range w.api.Requests() {
			if len(r.Messages) > 0 && strings.Contains(r.Messages[0].Text(), "probe the confinement") {
				said = append(said, r.SinceAssistant())
			}
		}
		t.Fatalf("the cli run: exit %d\n%s\nthe model was told:\n%s", code, out, strings.Join(said, "\n---\n"))
	}
	var result string
	for _, r := range w.api.Requests() {
		if said := r.SinceAssistant(); strings.Contains(said, "PROBE-DONE") {
			result = said
		}
	}
	if result == "" {
		t.Fatalf("the probe never ran: the attack was not played\n%s", out)
	}
	// The tool result is JSON: a tab is written \t.
	for _, want := range []string{`CapEff:\t0000000000000000`, `CapBnd:\t0000000000000000`} {
		if !strings.Contains(result, want) {
			t.Errorf("the run keeps capabilities (want %q):\n%s", want, result)
		}
	}
	for _, bad := range []string{"UNMOUNTED", "REMOUNTED", w.token, history, "CLAUDE-JSON-SECRET", "TMUX-SEEN:"} {
		if strings.Contains(result, bad) {
			t.Errorf("the run got %q:\n%s", bad, result)
		}
	}
}

// playArgvAttack: another local user (uid 65534) reads every process's command line during a
// Telegram burst into an idle agent (typed and handed over by its hooks) and a `starter ui
// --open`: no message text, no access token.
func playArgvAttack(t *testing.T) {
	bin := binaries(t)
	bot := fakebot.New("33:argv")
	t.Cleanup(bot.Close)
	scan := argvscan.Start(t, 65534)
	scan.Canary(t, 20*time.Second)
	env, home, pane := standInSecretary(t, bin, "33:argv", bot)
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 90*time.Second)
	const secret = "my bank PIN is 4321"
	const n = 20
	for i := 1; i <= n; i++ {
		bot.AddMessage(42, 42, i, fmt.Sprintf("%s, message %d of the burst", secret, i))
	}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		got, _ := os.ReadFile(pane)
		missing := 0
		for i := 1; i <= n; i++ {
			if !strings.Contains(string(got), fmt.Sprintf("message %d of the burst", i)) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages did not reach the agent:\n%s", missing, n, got)
		}
	}

	// starter ui --open, with an opener that lingers long enough to be read.
	opener := t.TempDir()
	if err := os.WriteFile(filepath.Join(opener, "xdg-open"), []byte("#!/bin/sh\nsleep 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	uiEnv := append(append([]string{}, env...), "PATH="+opener+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, code := run(t, filepath.Join(bin, "starter"), uiEnv, "", "ui", "--open")
	if code != 0 {
		t.Fatalf("starter ui --open: exit %d\n%s", code, out)
	}
	for deadline := time.Now().Add(20 * time.Second); !scan.Saw("xdg-open"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other user never saw the opener run: the scan proves nothing about it")
		}
	}
	tok, err := trust.ReadToken(trust.TokenPath(filepath.Join(home, ".intentq")))
	if err != nil {
		t.Fatal(err)
	}
	scan.Stop()
	t.Logf("the other user read %d distinct command lines during the burst of %d and the ui --open", len(scan.Lines("")), n)
	// What the scan proves is in the canary and the opener above; typings (tmux load-buffer and
	// paste-buffer, a few milliseconds each) are caught when the machine is quiet enough.
	t.Logf("typings seen: %d load-buffer, %d paste-buffer", len(scan.Lines("load-buffer")), len(scan.Lines("paste-buffer")))
	if lines := scan.Lines(secret); len(lines) > 0 {
		t.Errorf("another user read message text from command lines:\n%s", strings.Join(lines, "\n"))
	}
	if lines := scan.Lines(tok); len(lines) > 0 {
		t.Errorf("another user read the access token from command lines:\n%s", strings.Join(lines, "\n"))
	}
}

// guardCase is a case of internal/toolpolicy/testdata/guard_{attacks,passes}.json (its
// guard_attacks_test.go documents the layout the commands assume).
type guardCase struct {
	Name    string           `json:"name"`
	Channel string           `json:"channel"`
	Session *toolpolicy.Rule `json:"session,omitempty"`
	Workdir string           `json:"workdir,omitempty"`
	Command string           `json:"command"`
	Expect  string           `json:"expect"`
}

// playGuardMatrix plays the guard's matrix against the real `starter hook policy`, as Claude
// Code runs it: every attack is denied, every command of the person's passes.
func playGuardMatrix(t *testing.T, starter string) {
	for _, file := range []string{"guard_attacks.json", "guard_passes.json"} {
		data, err := os.ReadFile(filepath.Join("..", "internal", "toolpolicy", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		var cases []guardCase
		if err := json.Unmarshal(data, &cases); err != nil || len(cases) == 0 {
			t.Fatalf("%s: %d cases, %v", file, len(cases), err)
		}
		for _, c := range cases {
			root := t.TempDir()
			home, dataDir := filepath.Join(root, "home"), filepath.Join(root, "data")
			work := filepath.Join(dataDir, "headless", "batch", c.Channel, "work")
			if c.Workdir == "home" {
				work = home
			}
			for p, s := range map[string]string{
				filepath.Join(home, ".ssh", "id_ed25519"): "FAKE-SSH-KEY\n", filepath.Join(dataDir, "access.token"): "FAKE-ACCESS-TOKEN\n",
				filepath.Join(work, "README.md"): "hello\n", filepath.Join(work, "docs", "a.md"): "a\n",
			} {
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p := toolpolicy.Policy{}
			if c.Session != nil {
				p.Sessions = map[string]toolpolicy.Rule{"batch": *c.Session}
			}
			eff, err := p.Resolve(c.Channel, "batch")
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(toolpolicy.Guard{Policy: eff, Dir: work, Home: home, Private: []string{dataDir, filepath.Join(home, ".ssh")}})
			guardFile := filepath.Join(root, "guard.json")
			if err := os.WriteFile(guardFile, g, 0o400); err != nil {
				t.Fatal(err)
			}
			call, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash",
				"tool_input": map[string]any{"command": c.Command}, "cwd": work})
			out, code := run(t, starter, []string{"PATH=/usr/bin:/bin", "HOME=" + home}, string(call), "hook", "policy", "--guard", guardFile)
			denied := strings.Contains(out, `"permissionDecision":"deny"`)
			switch {
			case code != 0:
				t.Errorf("%s %q: starter hook policy exited %d:\n%s", file, c.Name, code, out)
			case c.Expect == "deny" && !denied:
				t.Errorf("%s %q: %q let through:\n%s", file, c.Name, c.Command, out)
			case c.Expect == "allow" && denied:
				t.Errorf("%s %q: %q refused:\n%s", file, c.Name, c.Command, out)
			}
		}
	}
}
