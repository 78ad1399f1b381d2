package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/toolpolicy"
)

// Issue 23: a run names a session; the worker runs only what its config says for it. A request
// scheduled with a program and arguments (by an attacker, or by older workflow code) runs
// nothing of them: an unknown session fails without retry and alerts, once an hour per name.
func TestAgentRunOnlyConfiguredSessions(t *testing.T) {
	pwned := filepath.Join(t.TempDir(), "pwned")
	var mu sync.Mutex
	var alerts []string
	r := fakeRunner(fakeSpec(t, 10*time.Second))
	r.Alert = func(_ context.Context, title, message string) {
		mu.Lock()
		defer mu.Unlock()
		alerts = append(alerts, title+": "+message)
	}
	for _, input := range []string{
		`{"session":"evil","command":"/bin/sh","args":["-c","touch ` + pwned + `"],"prompt":"hi","timeout":60000000000}`,
		`{"session":"evil","command":"/bin/sh","args":["-c","touch ` + pwned + `"],"prompt":"again"}`,
		`{"command":"/bin/sh","args":["-c","touch ` + pwned + `"],"prompt":"from older code"}`,
	} {
		var req RunRequest
		if err := json.Unmarshal([]byte(input), &req); err != nil {
			t.Fatal(err)
		}
		_, err := r.Run(context.Background(), req)
		if typ, nonRetryable := errType(err); typ != ErrTypeUnknownHeadless || !nonRetryable {
			t.Fatalf("%s: err = %v, want a non-retryable %s", input, err, ErrTypeUnknownHeadless)
		}
		if !strings.Contains(err.Error(), "nothing was run") {
			t.Errorf("error %q does not say nothing ran", err)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the request's program ran")
	}
	if len(alerts) != 2 || !strings.Contains(alerts[0], `"evil"`) || !strings.Contains(alerts[1], `""`) {
		t.Errorf("alerts = %q, want one for evil and one for the nameless request", alerts)
	}
	// The configured session runs the configured program, in its folder.
	spec := fakeSpec(t, 10*time.Second)
	res, err := fakeRunner(spec).Run(context.Background(), RunRequest{Session: "batch", Prompt: "pwd"})
	want, _ := filepath.EvalSymlinks(spec.Dir)
	if err != nil || res.Result != want {
		t.Errorf("ran in %q (%v), want the session's folder %s", res.Result, err, want)
	}
	// A folder that is gone fails without retry.
	spec.Dir = filepath.Join(spec.Dir, "missing")
	if _, err := fakeRunner(spec).Run(context.Background(), RunRequest{Session: "batch", Prompt: "ok"}); !strings.Contains(fmt.Sprint(err), "work folder") {
		t.Errorf("missing folder: %v", err)
	}
	// No resolver: nothing runs.
	if _, err := (&AgentRunner{}).Run(context.Background(), RunRequest{Session: "batch", Prompt: "ok"}); err == nil {
		t.Error("a runner without config ran")
	}
}

// The run gets the environment the worker resolved, never the worker's own.
func TestAgentRunEnvironmentIsTheSpecs(t *testing.T) {
	t.Setenv("INTENTQ_TELEGRAM_TOKEN", "123:secret")
	spec := fakeSpec(t, 10*time.Second)
	spec.Env = append(spec.Env, "ANTHROPIC_API_KEY=sk-test")
	res, err := fakeRunner(spec).Run(context.Background(), RunRequest{Session: "batch", Prompt: "env"})
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Fields(res.Result)
	if slices.Contains(names, "INTENTQ_TELEGRAM_TOKEN") || !slices.Contains(names, "ANTHROPIC_API_KEY") || !slices.Contains(names, "PATH") {
		t.Errorf("the run saw %v", names)
	}
}

// The resume id is used only when it is a UUID, and then as one argument after --resume.
func TestAgentRunResumeID(t *testing.T) {
	id := "3f2b8c1e-9d4a-4b7e-8f00-1a2b3c4d5e6f"
	for _, c := range []struct {
		resume, want string
	}{
		{id, "-p --output-format json --resume " + id + " --allowedTools Read"},
		{"sess-42", "-p --output-format json --allowedTools Read"},
		{id + " --dangerously-skip-permissions", "-p --output-format json --allowedTools Read"},
		{"--settings=/tmp/evil.json", "-p --output-format json --allowedTools Read"},
	} {
		spec := fakeSpec(t, 10*time.Second)
		spec.ToolFlags = []string{"--allowedTools", "Read"}
		res, err := fakeRunner(spec).Run(context.Background(), RunRequest{Session: "batch", Prompt: "args", ResumeID: c.resume})
		if err != nil || res.Result != c.want {
			t.Errorf("resume %q: args %q (%v), want %q", c.resume, res.Result, err, c.want)
		}
	}
	// A conversation the run's state does not hold (another channel's) is not resumed.
	spec := fakeSpec(t, 10*time.Second)
	spec.Knows = func(string) bool { return false }
	if res, err := fakeRunner(spec).Run(context.Background(), RunRequest{Session: "batch", Prompt: "args", ResumeID: id}); err != nil || res.Result != "-p --output-format json" {
		t.Errorf("unknown conversation: args %q (%v), want no --resume", res.Result, err)
	}
	if !ValidResumeID(id) || ValidResumeID("") || ValidResumeID(id+"\n") || ValidResumeID("../"+id[3:]) {
		t.Error("ValidResumeID")
	}
}

// helperArg marks this test binary run as the helper CLI or the helper hook.
const helperArg = "intentq-helper"

// TestHelperProcess is not a test: run with the arguments `-- intentq-helper cli ...` it plays
// Claude Code (it runs the PreToolUse hook of its --settings file on the tool call in the
// prompt and answers with what the hook said), with `-- intentq-helper hook --guard F` it is
// `starter hook policy`.
func TestHelperProcess(t *testing.T) {
	args := os.Args
	i := slices.Index(args, helperArg)
	if i < 0 {
		t.Skip("a helper process for other tests")
	}
	switch args[i+1] {
	case "hook":
		if err := toolpolicy.PreToolUse(args[i+3], os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
	case "cli":
		answer, err := helperCLI(args[i+2:])
		if err != nil {
			answer = "helper: " + err.Error()
		}
		out, _ := json.Marshal(map[string]any{"type": "result", "result": answer, "session_id": "s"})
		fmt.Println(string(out))
	}
	os.Exit(0)
}

func helperCLI(args []string) (string, error) {
	i := slices.Index(args, "--settings")
	if i < 0 {
		return "no settings", nil
	}
	data, err := os.ReadFile(args[i+1])
	if err != nil {
		return "", err
	}
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Command string
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		return "", err
	}
	pre := settings.Hooks["PreToolUse"]
	if len(pre) != 1 || pre[0].Matcher != "*" || len(pre[0].Hooks) != 1 || pre[0].Hooks[0].Type != "command" {
		return "", fmt.Errorf("settings %s", data)
	}
	var call map[string]any
	var stdin bytes.Buffer
	_, _ = stdin.ReadFrom(os.Stdin)
	prompt := stdin.Bytes()
	if err := json.Unmarshal(prompt, &call); err != nil {
		return "", err
	}
	wd, _ := os.Getwd()
	call["hook_event_name"], call["cwd"] = "PreToolUse", wd
	in, _ := json.Marshal(call)
	cmd := exec.Command("/bin/sh", "-c", pre[0].Hooks[0].Command)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	switch {
	case cmd.ProcessState.ExitCode() == 2: // Claude Code: a blocking error
		return "blocked: " + strings.TrimSpace(stderr.String()), nil
	case err != nil:
		return "", fmt.Errorf("hook: %v: %s", err, stderr.String())
	case stdout.Len() == 0:
		return "allowed", nil
	}
	var out struct {
		HookSpecificOutput struct {
			PermissionDecision, PermissionDecisionReason string
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return "", err
	}
	return out.HookSpecificOutput.PermissionDecision + ": " + out.HookSpecificOutput.PermissionDecisionReason, nil
}

// Issue 23: a run of a CLI that takes a settings file gets a PreToolUse hook that checks every
// tool call against the guard: a read-only run's `cat` of the SSH key and Read of /etc/passwd
// are denied, a read inside the folder goes on; a hook that cannot run blocks the call.
func TestAgentRunPolicyHook(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "app")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	eff, err := toolpolicy.Policy{}.Resolve(toolpolicy.ChannelTelegram, "batch")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := filepath.Abs(os.Args[0])
	spec := RunSpec{
		Command: self, Args: []string{"-test.run=^TestHelperProcess$", "--", helperArg, "cli"},
		Dir: dir, Timeout: 30 * time.Second, Env: []string{"PATH=" + os.Getenv("PATH")},
		SettingsFlag: "--settings",
		Hook:         []string{self, "-test.run=^TestHelperProcess$", "--", helperArg, "hook"},
		Guard:        &toolpolicy.Guard{Policy: eff, Dir: dir, Home: home, Private: []string{filepath.Join(home, ".ssh")}},
	}
	run := func(spec RunSpec, call string) string {
		t.Helper()
		res, err := fakeRunner(spec).Run(context.Background(), RunRequest{Session: "batch", Channel: "telegram", Prompt: call})
		if err != nil {
			t.Fatalf("%s: %v", call, err)
		}
		return res.Result
	}
	for call, want := range map[string]string{
		`{"tool_name":"Bash","tool_input":{"command":"cat ~/.ssh/id_ed25519"}}`: "deny: intentq: Bash(cat ~/.ssh/id_ed25519) touches",
		`{"tool_name":"Read","tool_input":{"file_path":"/etc/passwd"}}`:         "deny: intentq: Read touches /etc/passwd, outside the session's work folder",
		`{"tool_name":"Bash","tool_input":{"command":"git push origin main"}}`:  "deny: intentq: tool \"Bash(git push origin main)\" denied",
		`{"tool_name":"Bash","tool_input":{"command":"cat README.md"}}`:         "allowed",
		`{"tool_name":"Read","tool_input":{"file_path":"README.md"}}`:           "allowed",
	} {
		if got := run(spec, call); !strings.HasPrefix(got, want) {
			t.Errorf("%s: the hook answered %q, want %q", call, got, want)
		}
	}
	// The settings and the guard are gone after the run.
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "intentq-run-*")); len(left) > 0 {
		for _, l := range left {
			if fi, err := os.Stat(l); err == nil && time.Since(fi.ModTime()) < time.Minute {
				t.Errorf("left behind: %s", l)
			}
		}
	}
	broken := spec
	broken.Hook = []string{filepath.Join(t.TempDir(), "no-starter"), "hook", "policy"}
	if got := run(broken, `{"tool_name":"Read","tool_input":{"file_path":"README.md"}}`); !strings.HasPrefix(got, "blocked: ") || !strings.Contains(got, "intentq: the tool policy hook failed: call refused") {
		t.Errorf("with a hook that cannot run: %q", got)
	}
	noHook := spec
	noHook.Hook = nil
	if _, err := fakeRunner(noHook).Run(context.Background(), RunRequest{Session: "batch", Prompt: "{}"}); err == nil {
		t.Error("a run that needs the hook ran without one")
	}
}
