package agentcli

import (
	"reflect"
	"testing"
)

// SPEC N4: every built-in kind has a launch command; Claude Code resets with /clear, Codex and
// Copilot with /new (Copilot 1.0.102: C-c on an empty input asks for a second C-c, which quits).
func TestN4BuiltinTable(t *testing.T) {
	b := Builtin()
	for _, kind := range []string{"claude", "codex", "copilot", "gemini", "kimi"} {
		if b[kind].Command != kind {
			t.Errorf("%s: command %q", kind, b[kind].Command)
		}
	}
	if b["claude"].Reset != "/clear" || b["codex"].Reset != "/new" || b["copilot"].Reset != "/new" || b["copilot"].Relaunch {
		t.Errorf("reset steps: claude %q codex %q copilot %q relaunch %v", b["claude"].Reset, b["codex"].Reset, b["copilot"].Reset, b["copilot"].Relaunch)
	}
	if b["claude"].Lines() != 4 || b["codex"].Lines() != 4 {
		t.Errorf("input lines: claude %d codex %d", b["claude"].Lines(), b["codex"].Lines())
	}
}

func TestLaunchCarriesTheModel(t *testing.T) {
	c := CLI{Command: "copilot"}
	if got := c.Launch(); !reflect.DeepEqual(got, []string{"copilot"}) {
		t.Errorf("no model: %q", got)
	}
	c.Model, c.HeadlessArgs = "gpt-5", []string{"-p"}
	if got := c.LaunchLine(); got != "copilot --model gpt-5" {
		t.Errorf("LaunchLine = %q", got)
	}
	if got := c.HeadlessBaseArgs(); !reflect.DeepEqual(got, []string{"-p", "--model", "gpt-5"}) {
		t.Errorf("HeadlessBaseArgs = %q", got)
	}
	if c.HeadlessArgs[0] != "-p" || len(c.HeadlessArgs) != 1 {
		t.Errorf("HeadlessBaseArgs changed the table: %q", c.HeadlessArgs)
	}
}

// Claude Code reads no settings file but its own unless told: the launch names the file with
// intentq's hooks, and the Telegram plugin's channel when the plugin is the door.
func TestLaunchWithSettingsAndChannels(t *testing.T) {
	claude := Builtin()["claude"]
	claude.Model = "opus"
	got := claude.LaunchWith(LaunchOptions{Settings: "/h/.claude/secretary/settings.json", Channels: []string{"plugin:telegram@claude-plugins-official"}})
	want := []string{"claude", "--model", "opus", "--settings", "/h/.claude/secretary/settings.json", "--channels", "plugin:telegram@claude-plugins-official"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LaunchWith = %q, want %q", got, want)
	}
	if got := Builtin()["codex"].LaunchWith(LaunchOptions{Settings: "/x", Channels: []string{"c"}}); !reflect.DeepEqual(got, []string{"codex", "--no-daemon"}) {
		t.Errorf("codex takes neither, and runs its own app server: %q", got)
	}
}
