package doctor_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/platform/doctor"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/internal/testkit/testenv"
)

func find(r doctor.Report, name string) doctor.Result {
	for _, res := range r {
		if res.Name == name {
			return res
		}
	}
	return doctor.Result{Name: name, Detail: "not checked"}
}

// I10: tmux panes of every session, ntfy reachable without a message, the bot token, the hooks.
func TestI10LocalChecks(t *testing.T) {
	cfg := testenv.Config(t)
	ntfy := fakentfy.New()
	defer ntfy.Close()
	bot := fakebot.New("77:good")
	defer bot.Close()
	cfg.Ntfy.URL, cfg.Ntfy.Topic = ntfy.URL(), "t"
	cfg.Telegram.Token, cfg.Telegram.APIEndpoint, cfg.Telegram.AllowedChatIDs = "77:good", bot.Endpoint(), []int64{1}
	cfg.Sessions["headless"] = config.Session{CLI: "claude", Mode: config.ModeHeadless}

	r := doctor.Local(context.Background(), cfg)
	// A fresh install reads as "almost there": no pane yet and no hooks yet are warnings.
	if res := find(r, "tmux secretary"); res.OK || res.Level() != doctor.StatusWarn || !strings.Contains(res.Hint, "tmux") {
		t.Errorf("no tmux session: %+v", res)
	}
	if res := find(r, "tmux headless"); res.Detail != "not checked" {
		t.Errorf("a headless session has no pane to check: %+v", res)
	}
	if res := find(r, "hooks"); res.OK || res.Level() != doctor.StatusWarn || !strings.Contains(res.Detail, "does not exist") {
		t.Errorf("no settings.json: %+v", res)
	}
	if !r.OK() {
		t.Errorf("warnings alone made the report fail: %+v", r.Failing())
	}
	if res := find(r, "ntfy"); !res.OK {
		t.Errorf("ntfy: %+v", res)
	}
	// Issue 33: the headless session's runs are confined by bubblewrap (installed here);
	// with the sandbox off the doctor warns.
	if res := find(r, "headless sandbox"); !res.OK {
		t.Errorf("headless sandbox: %+v", res)
	}
	off := *cfg
	off.Scheduler.Sandbox = "off"
	if res := doctor.Sandbox(&off); res.Level() != doctor.StatusWarn || !strings.Contains(res.Hint, "bubblewrap") {
		t.Errorf("sandbox off: %+v", res)
	}
	if len(ntfy.Messages()) != 0 {
		t.Error("the doctor published to ntfy")
	}
	if res := find(r, "telegram"); !res.OK {
		t.Errorf("telegram: %+v", res)
	}

	testenv.Agent(t, os.Environ(), "secretary:0", cfg.Claude.Settings)
	cfg.Telegram.Token = "77:bad"
	ntfy.Down()
	r = doctor.Local(context.Background(), cfg)
	for _, name := range []string{"tmux secretary", "hooks"} {
		if res := find(r, name); !res.OK {
			t.Errorf("%s: %+v", name, res)
		}
	}
	if res := find(r, "telegram"); res.OK || strings.Contains(res.Detail, "77:bad") {
		t.Errorf("bad token: %+v (the token must not be printed)", res)
	}
	if res := find(r, "ntfy"); res.OK {
		t.Errorf("ntfy down: %+v", res)
	}

	if err := os.WriteFile(cfg.Claude.Settings, []byte(`{"hooks":{"Stop":[{"hooks":[{"command":"starter hook stop"}]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := doctor.Hooks(cfg.Claude.Settings); res.OK || res.Detail != "not installed yet: "+filepath.Clean(cfg.Claude.Settings)+" lacks Notification, PermissionRequest, PostToolUse, PreToolUse, SessionEnd, SessionStart, UserPromptSubmit" {
		t.Errorf("partial hooks: %+v", res)
	}
}

// Issue 23: a pane whose agent has exited shows a shell; intentq types nothing there, and the
// doctor says so as a failure.
func TestLocalFailsForAPaneWithoutItsAgent(t *testing.T) {
	cfg := testenv.Config(t)
	peersTmuxSession(t, "secretary", "exec bash --norc --noprofile")
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := find(doctor.Local(context.Background(), cfg), "tmux secretary")
		if res.Level() == doctor.StatusFail && strings.Contains(res.Detail, `"bash"`) && strings.Contains(res.Hint, "run-agent") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a bash pane: %+v", res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// peersTmuxSession starts a tmux session running shell on the test's private tmux server.
func peersTmuxSession(t *testing.T, name, shell string) {
	t.Helper()
	cmd := exec.Command("tmux", "new-session", "-d", "-s", name, shell)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-server").Run() })
}

// A worker identity names its machine (intentq@<machine>/<pid>); another program's identity
// is its own machine.
func TestMachineOfAWorkerIdentity(t *testing.T) {
	for identity, want := range map[string]string{
		"intentq@laptop/4242":     "laptop",
		"intentq@build.example/1": "build.example",
		"1234@other-sdk-worker":   "1234@other-sdk-worker",
		"intentq@no-pid-at-all":   "no-pid-at-all",
	} {
		if got := doctor.Machine(identity); got != want {
			t.Errorf("Machine(%q) = %q, want %q", identity, got, want)
		}
	}
}

// Issue 35: a session whose pane is gone after its agent ran there (tmux closed the pane with
// it: its history file has entries) is a failure naming the fix; one that never had a pane is
// a setup step still to do (a warning).
func TestLocalFailsForAPaneGoneAfterUse(t *testing.T) {
	cfg := testenv.Config(t)
	cfg.Sessions["secretary"] = config.Session{TmuxTarget: "nowhere:0", CLI: "claude", Mode: config.ModeTmux}
	if res := find(doctor.Local(context.Background(), cfg), "tmux secretary"); res.Level() != doctor.StatusWarn || !strings.Contains(res.Detail, "no tmux pane yet") {
		t.Errorf("never set up: %+v", res)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.HistoryPath("secretary")), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.HistoryPath("secretary"), []byte(`{"seq":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := find(doctor.Local(context.Background(), cfg), "tmux secretary")
	if res.Level() != doctor.StatusFail || !strings.Contains(res.Detail, "no agent: the pane nowhere:0 is gone") || res.Hint != "start it again: starter run-agent secretary" {
		t.Errorf("gone after use: %+v", res)
	}
}

// Issue 38: a hook whose program is gone fails at every prompt and tool call while the CLI goes
// on without intentq: doctor names the program and the events (setup's quoting read back), and
// intentq-hook needs the starter beside it, to which it hands what it does not answer.
func TestHooksWhoseProgramCannotRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's bin")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(t.TempDir(), "settings.json")
	install := func(program string) {
		t.Helper()
		quoted := "'" + strings.ReplaceAll(program, "'", `'\''`) + "'"
		byEvent := map[string]any{}
		for _, e := range hooks.ClaudeEvents {
			byEvent[e.Name] = []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": quoted + " hook " + e.Arg}}}}
		}
		b, _ := json.Marshal(map[string]any{"hooks": byEvent})
		if err := os.WriteFile(settings, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hookBin := filepath.Join(dir, "intentq-hook")
	install(hookBin)
	if res := doctor.Hooks(settings); res.Level() != doctor.StatusFail || !strings.Contains(res.Detail, hookBin+" does not exist (SessionStart, UserPromptSubmit") {
		t.Errorf("a program that is gone: %+v", res)
	}
	if err := os.WriteFile(hookBin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if res := doctor.Hooks(settings); res.Level() != doctor.StatusFail || !strings.Contains(res.Detail, "no starter beside "+hookBin) {
		t.Errorf("intentq-hook alone: %+v", res)
	}
	if err := os.WriteFile(filepath.Join(dir, "starter"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if res := doctor.Hooks(settings); !res.OK {
		t.Errorf("intentq-hook beside its starter: %+v", res)
	}
	if err := os.Chmod(hookBin, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := doctor.Hooks(settings); res.Level() != doctor.StatusFail || !strings.Contains(res.Detail, "not an executable file") {
		t.Errorf("a program that cannot be run: %+v", res)
	}
}
