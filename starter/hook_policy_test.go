package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/toolpolicy"
)

// `starter hook policy --guard FILE` is the headless runs' PreToolUse hook: reached through
// `starter hook`, it denies a read of the SSH key (also through issue 33's attacks on the shell
// parser) and lets a read inside the folder, and a read-only pipeline, go on.
func TestHookPolicyCommand(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	eff, err := toolpolicy.Policy{}.Resolve(toolpolicy.ChannelTelegram, "batch")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(toolpolicy.Guard{Policy: eff, Dir: dir, Home: home})
	guard := filepath.Join(t.TempDir(), "guard.json")
	if err := os.WriteFile(guard, data, 0o400); err != nil {
		t.Fatal(err)
	}
	run := func(call string) string {
		cmd := newHook()
		var out bytes.Buffer
		cmd.SetArgs([]string{"policy", "--guard", guard})
		cmd.SetIn(strings.NewReader(call))
		cmd.SetOut(&out)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	bash := func(command string) string {
		call, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]string{"command": command}, "cwd": dir})
		return run(string(call))
	}
	// The SSH key, and two of issue 33's attacks: a command hidden from the allow list by
	// $'\'', the key read through a brace expansion.
	for _, command := range []string{"cat ~/.ssh/id_ed25519", `cat $'\'' ; id #'`, "cat {~/.ssh/id_ed25519,a.go}"} {
		if out := bash(command); !strings.Contains(out, `"permissionDecision":"deny"`) {
			t.Errorf("%s: %q", command, out)
		}
	}
	if out := bash("git status && ls | wc -l"); out != "" {
		t.Errorf("git status && ls | wc -l: %q", out)
	}
	if out := run(`{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"` + filepath.Join(dir, "a.go") + `"},"cwd":"` + dir + `"}`); out != "" {
		t.Errorf("read inside the folder: %q", out)
	}
}
