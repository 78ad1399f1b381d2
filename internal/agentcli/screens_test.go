package agentcli_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/agentcli"
	"github.com/intentq/intentq/workflows"
)

// Bottom lines of the real Copilot CLI 1.0.102 TUI in tmux (200x50), offline against a Responses
// API stand-in (BYOK), as capture-pane -p shows them (trailing blanks and long rules cut).
var copilotScreens = map[string]string{
	"idle": ` ● MCP Servers reloaded: 0 servers connected
 ❯ Say hi again
 ● Answer number 2 from the stand-in.
 /tmp/cliexp/cpwork [⎇ master]
──────────────────────────────────────────────────
❯
──────────────────────────────────────────────────
 ← open sidebar · Interactive · Manual Approval · / commands · ? help · tab next tab`,
	"draft": ` ● MCP Servers reloaded: 0 servers connected
 /tmp/cliexp/cpwork [⎇ master]
──────────────────────────────────────────────────
❯ Say hello
──────────────────────────────────────────────────
 Interactive · Manual Approval · @ files · # issues`,
	"working": ` ● MCP Servers reloaded: 0 servers connected
 ❯ Say hello
 /tmp/cliexp/cpwork [⎇ master]
──────────────────────────────────────────────────
❯
──────────────────────────────────────────────────
 ◎ Working esc esc edit prompt`,
	// A digit selects an answer, Enter gives it.
	"approval": `│ Do you want to run this command?
│
│ ❯ 1. Yes
│   2. Yes, and don't ask again for ` + "`sleep`" + ` in this repo (/tmp/cliexp/cpwork)
│   3. No, and tell Copilot what to do differently (Esc to stop)
│
│ ↑/↓ to navigate · enter to select · esc to cancel
╰─────────────────────────────────────────────────`,
	// At start in a folder not trusted yet: Esc declines and Copilot exits.
	"trust": `│ Do you trust the files in this folder?
│
│ ❯ 1. Yes
│   2. Yes, and remember this folder for future sessions
│   3. No (Esc)
│
│ ↑/↓ to navigate · enter to select · esc to cancel
╰─────────────────────────────────────────────────`,
	// The first C-c on an empty input: a second quits.
	"ctrl-c": ` /tmp/cliexp/cpwork [⎇ master]
──────────────────────────────────────────────────
❯
──────────────────────────────────────────────────
 ctrl+c again to exit`,
}

// Bottom lines of the real Gemini CLI 0.61.0 TUI in tmux (200x50), offline against a Gemini API
// stand-in.
var geminiScreens = map[string]string{
	"idle": ` > Say hello
✦ Answer number 6 from the stand-in.
─────────────────────────────────────────────────────
 Shift+Tab to accept edits
 >   Type your message or @path/to/file
 workspace (/directory)                                                                                sandbox
 /tmp/cliexp/gwork                                                                                     no sandbox`,
	"draft": `4. Be specific for the best results
─────────────────────────────────────────────────────
 Shift+Tab to accept edits
 > Say hello
 workspace (/directory)                                                                                sandbox
 /tmp/cliexp/gwork                                                                                     no sandbox`,
	// A typed message whose Enter was lost under load (make test, 250x50): two blank lines under
	// the input line, which is 5th from the bottom.
	"draft-padded": `─────────────────────────────────────────────────────
 Shift+Tab to accept edits                                                                       1 MCP server

 > 【新着メッセージ】msg_id=201 chat=42 from=42 @user42: idle message 1 of the run


 workspace (/directory)                                                                                sandbox
 ~/work                                                                                                no sandbox`,
	"working": ` > RUNCMD please
 ⠼ Thinking... (esc to cancel, 9s)
─────────────────────────────────────────────────────
 Shift+Tab to accept edits
 >   Type your message or @path/to/file
 workspace (/directory)                                                                                sandbox
 /tmp/cliexp/gwork                                                                                     no sandbox`,
	"hooks": ` > Say hello
 ⠹ Executing Hooks: /tmp/cliexp/gdump.sh BeforeAgent, /tmp/cliexp/gdump.sh BeforeModel (esc to cancel, 0s)
─────────────────────────────────────────────────────
 Shift+Tab to accept edits
 >   Type your message or @path/to/file`,
	// A digit answers it at once.
	"approval": `│ │ sleep 8; echo done > /tmp/cliexp/gran.txt
│ ╰───────────────────────────────────────────────────
│ Allow execution of [Shell]?
│ Redirection detected. To auto-accept, press Shift+Tab
│
│ ● 1. Allow once
│   2. Allow for this session
│   3. No, suggest changes (esc)
╰────────────────────────────────────────────────────`,
	// Escape twice on an idle input.
	"rewind": `│   No files have been changed
│
│ ● Stay at current position
│   Cancel rewind and stay here
│
│
│ (Use Enter to select a message, Esc to close, Right/Left to expand/collapse)
╰────────────────────────────────────────────────────`,
	"trust": ` │ Do you trust the files in this folder?
 │
 │ ● 1. Trust folder (gwork)
 │   2. Trust parent folder (cliexp)
 │   3. Don't trust
 │
 ╰────────────────────────────────────────────────────`,
}

// Issue 25: the Copilot (1.0.102) and Gemini CLI (0.61.0) entries of the adapter table read the
// real screens right: idle is typable; a draft, a turn at work, an approval prompt (a digit
// answers it), the folder trust dialog, the rewind menu and a pending C-c are not. Escalation
// never presses C-c or Escape for them (C-c twice quits both; Escape twice opens a rewind).
func TestCopilotAndGeminiScreens(t *testing.T) {
	for kind, screens := range map[string]map[string]string{"copilot": copilotScreens, "gemini": geminiScreens} {
		cli := agentcli.Builtin()[kind]
		for name, pane := range screens {
			got, busy := workflows.Busy(pane, cli.BusyPatterns)
			if !busy {
				got, busy = workflows.Blocked(pane, cli.DialogPatterns, cli.InputPrompt, cli.InputPlaceholders...)
			}
			if (name == "idle") == busy {
				t.Errorf("%s %s: busy or blocked %v (%q)", kind, name, busy, got)
			}
		}
		// A draft on the input line is within the lines read after Enter (InputLines): a text
		// left there is seen, cleared and typed again, never counted as sent.
		for name, pane := range screens {
			if !strings.HasPrefix(name, "draft") {
				continue
			}
			lines := strings.Split(strings.TrimRight(pane, "\n"), "\n")
			bottom := strings.Join(lines[max(0, len(lines)-cli.Lines()):], "\n")
			if line, ok := workflows.InputLine(bottom, cli.InputPrompt); !ok || slices.Contains(cli.InputPlaceholders, line) {
				t.Errorf("%s %s: the input line is not within the bottom %d lines:\n%s", kind, name, cli.Lines(), bottom)
			}
		}
		for _, k := range strings.Fields(cli.InterruptKeys) {
			if k == "C-c" || k == "Escape" || k == "Enter" {
				t.Errorf("%s: interrupt key %s", kind, k)
			}
		}
		if cli.InterruptKeys == "" || cli.Relaunch || strings.HasPrefix(cli.Reset, "C-") {
			t.Errorf("%s: interrupt %q, reset %q, relaunch %v", kind, cli.InterruptKeys, cli.Reset, cli.Relaunch)
		}
		if !slices.Contains(cli.Processes(), "node") {
			t.Errorf("%s: process names %q: through npm tmux shows node", kind, cli.Processes())
		}
	}
}
