package agentcli_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/agentcli"
	"github.com/intentq/intentq/workflows"
)

// Bottom lines of the real Codex 0.169.0 TUI in tmux (200x50), as capture-pane -p shows them
// (delivery.busy_lines: 8).
var codexScreens = map[string]string{
	// Idle, the input line empty: its dim placeholder shows.
	"idle": `
• Noted.

  Worked for 10s • 16:53


› Ask Codex to do anything

  gpt-5.1-codex default · /tmp/cx/work · Test thread
  ← for agents · ? for shortcuts`,
	// A person's draft.
	"draft": `
• Noted.



› my half-typed question

  gpt-5.1-codex default · /tmp/cx/work · Test thread
  ← for agents · ? for shortcuts`,
	// A tool runs.
	"working": `
• Ran sleep 1
  └ (no output)

• Working (3s • esc to interrupt) · 1 background terminal running · /ps to view · /stop to close


› Ask Codex to do anything

  gpt-5.1-codex default · /tmp/cx/work · Test thread`,
	// The approval prompt: a digit, y or p answers it at once.
	"approval": `  $ touch /tmp/cx-approved.txt


› 1. Yes, proceed (y)
  2. Yes, and don't ask again for commands that start with ` + "`touch /tmp/cx-approved.txt`" + ` (p)
  3. No, and tell Codex what to do differently (esc)

  Press enter to confirm or esc to cancel`,
	// Esc Esc on the idle input: the transcript browser (Enter rewinds).
	"transcript": `■ Conversation interrupted - use /feedback if something went wrong


› Ask Codex to do anything

  gpt-5.1-codex default · /tmp/cx/work · Test thread
  Browsing transcript · ↑↓/jk scroll · ←→/hl prompts · ^t details · ↵ rewind · esc back`,
	// New or changed hooks at start.
	"hooks review": `  Hooks need review
  6 hooks are new or changed.
  Hooks can run outside the sandbox after you trust them.
› 1. Review hooks
  2. Trust all and continue
  3. Continue without trusting (hooks won't run)
  enter confirm · esc skip`,
	// F2: the warnings panel.
	"warnings": `  Warnings · 1 of 1 · Startup

  Model metadata for ` + "`gpt-5.1-codex`" + ` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.



  k keep & next · esc dismiss & close · ^o copy · ←/→ warning`,
}

// Issue 25: the Codex entry of the adapter table reads the real 0.169.0 screens right: idle with
// its placeholder is typable; a draft, a running tool, the approval prompt, the transcript
// browser, the hooks review and the warnings panel are not.
func TestCodexScreens(t *testing.T) {
	codex := agentcli.Builtin()["codex"]
	want := map[string]string{
		"idle": "", "draft": "a draft", "working": "esc to interrupt", "approval": "dialog",
		"transcript": "dialog", "hooks review": "dialog", "warnings": "dialog",
	}
	for name, pane := range codexScreens {
		got, busy := workflows.Busy(pane, codex.BusyPatterns)
		if !busy {
			got, busy = workflows.Blocked(pane, codex.DialogPatterns, codex.InputPrompt, codex.InputPlaceholders...)
		}
		if w := want[name]; (w == "") == busy || !strings.Contains(got, w) {
			t.Errorf("%s: busy %v (%q), want %q", name, busy, got, w)
		}
	}
	// Without the placeholders the idle screen would pass for a draft.
	if _, blocked := workflows.Blocked(codexScreens["idle"], codex.DialogPatterns, codex.InputPrompt); !blocked {
		t.Error("the idle placeholder reads as empty without InputPlaceholders: the test proves nothing")
	}
	// The input line is where the prompt is: 4th from the bottom.
	lines := strings.Split(codexScreens["idle"], "\n")
	if bottom := strings.Join(lines[len(lines)-codex.Lines():], "\n"); !strings.HasPrefix(bottom, "› ") {
		t.Errorf("the bottom %d lines do not begin with the input line:\n%s", codex.Lines(), bottom)
	}
}

// Issue 25: escalation never quits Codex nor opens its transcript browser (C-c on an empty idle
// input quits it, Escape twice opens the browser): phase 2 only clears the input line.
func TestCodexKeysNeverQuit(t *testing.T) {
	codex := agentcli.Builtin()["codex"]
	keys := strings.Fields(codex.InterruptKeys)
	if len(keys) == 0 {
		t.Fatal("no interrupt keys: the escalation would press the default Escape Escape C-c")
	}
	for _, k := range keys {
		if k == "C-c" || k == "Escape" || k == "Enter" {
			t.Errorf("interrupt key %s", k)
		}
	}
	if codex.Reset != "/new" || codex.Relaunch || !codex.SessionStartAtPrompt {
		t.Errorf("reset %q relaunch %v session start at prompt %v, want /new typed, confirmed by the next prompt's SessionStart", codex.Reset, codex.Relaunch, codex.SessionStartAtPrompt)
	}
	if !slices.Contains(codex.Processes(), "node") || !slices.Contains(codex.Processes(), "codex") {
		t.Errorf("process names %q: tmux shows node (npm) or codex (native)", codex.Processes())
	}
	if !slices.Contains(codex.Launch(), "--no-daemon") {
		t.Errorf("launch %q: without --no-daemon a second TUI's hooks run with the first one's environment", codex.Launch())
	}
}
