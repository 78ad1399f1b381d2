// Package agentcli is the adapter table of the agent CLIs intentq drives (Claude Code, Codex,
// Copilot, Gemini CLI, Kimi; SPEC N4): how each is launched, reset, recognised as busy, and run headless.
package agentcli

import (
	"path/filepath"
	"strings"
)

// CLI describes how to drive one agent CLI kind (SPEC N4).
type CLI struct {
	Command      string   `mapstructure:"command"`
	Model        string   `mapstructure:"model"`
	Reset        string   `mapstructure:"reset"`
	BusyPatterns []string `mapstructure:"busy_patterns"`
	NewlineKey   string   `mapstructure:"newline_key"`
	// Relaunch: after a key-style reset (e.g. C-c), type the launch command again.
	Relaunch bool `mapstructure:"relaunch"`
	// InputLines is how many lines at the bottom of the pane hold the CLI's input line; when
	// above 0, a delivery is confirmed by reading them after Enter (0: not confirmed; unset:
	// the built-in value of the kind).
	InputLines *int `mapstructure:"input_lines"`
	// ClearKeys empty the input line before a delivery is typed again (default C-u).
	ClearKeys string `mapstructure:"clear_keys"`
	// HeadlessArgs run the CLI once per prompt, prompt on stdin, JSON result on stdout
	// (claude: -p --output-format json); needed for sessions in mode headless.
	HeadlessArgs []string `mapstructure:"headless_args"`
	// SettingsFlag passes the CLI the settings file that holds intentq's hooks (claude:
	// --settings; Claude Code reads no other file by itself); empty: the kind has none.
	SettingsFlag string `mapstructure:"settings_flag"`
	// ChannelsFlag names the plugin channels the CLI listens to (claude: --channels), for the
	// Telegram plugin when it is the door; empty: the kind has none.
	ChannelsFlag string `mapstructure:"channels_flag"`
	// DialogPatterns show a dialog or menu on the bottom lines (a permission prompt, Claude
	// Code's Rewind menu): nothing is typed then, a keystroke could answer it.
	DialogPatterns []string `mapstructure:"dialog_patterns"`
	// InputPrompt starts the CLI's input line (claude: ❯); text after it on the last such line
	// is a person's draft, which is never typed into. Empty: not checked.
	InputPrompt string `mapstructure:"input_prompt"`
	// InterruptKeys are the escalation's phase-2 keys (default Escape Escape C-c; Claude Code
	// clears the input with C-u instead: Escape twice opens its Rewind menu).
	InterruptKeys string `mapstructure:"interrupt_keys"`
	// StopKeys interrupt the agent's running turn (the phone's /stop): one Escape for Claude
	// Code and Codex (never two: on an idle input that opens a menu). Empty: the phone cannot
	// stop this CLI.
	StopKeys string `mapstructure:"stop_keys"`
	// LaunchArgs are added to every interactive launch of the CLI (codex: --no-daemon).
	LaunchArgs []string `mapstructure:"launch_args"`
	// InputPlaceholders are what the CLI shows on an EMPTY input line (Codex: "Ask Codex to do
	// anything"): text after InputPrompt that is one of them is no draft.
	InputPlaceholders []string `mapstructure:"input_placeholders"`
	// ProcessNames are the names tmux shows as the pane's foreground program
	// (#{pane_current_command}) while this CLI runs. Nothing is typed into a pane whose
	// foreground program is not one of them: when the CLI has exited the pane shows a shell, and
	// a message typed there would run as a command. Empty: the base name of Command.
	ProcessNames []string `mapstructure:"process_names"`
	// StopReasonTwice: the CLI puts a Stop hook's block reason into the model's next request
	// twice (Claude Code 2.1.330: a user message and a system message), so its stop hook hands
	// no message over (it would reach the model twice); the session types what waits once the
	// agent has stopped. Codex 0.169.0 gives the reason once.
	StopReasonTwice bool `mapstructure:"stop_reason_twice"`
	// SessionStartAtPrompt: the CLI's reset command fires no hook; the SessionStart of the new
	// context comes with the next prompt (Codex 0.169.0 after /new), so a reset is confirmed by
	// the SessionStart of the prompt typed after it, not awaited after the command.
	SessionStartAtPrompt bool `mapstructure:"session_start_at_prompt"`
}

// Processes is ProcessNames, or the base name of Command when none are set.
func (c CLI) Processes() []string {
	if len(c.ProcessNames) > 0 {
		return c.ProcessNames
	}
	if c.Command == "" {
		return nil
	}
	return []string{filepath.Base(strings.Fields(c.Command)[0])}
}

// Shells are the foreground programs of a pane whose CLI has exited: the only programs a
// relaunch types into (and only the CLI's launch line).
var Shells = []string{"bash", "zsh", "sh", "dash", "fish", "ksh", "mksh", "tcsh", "csh"}

// LaunchOptions are what a launch adds to the command and the model.
type LaunchOptions struct {
	// Settings is the settings file with intentq's hooks (used with SettingsFlag).
	Settings string
	// Channels are plugin channels, e.g. plugin:telegram@claude-plugins-official (ChannelsFlag).
	Channels []string
}

// LaunchWith is Launch plus the settings file and the channels, for the kinds that take them.
func (c CLI) LaunchWith(o LaunchOptions) []string {
	argv := c.Launch()
	if c.SettingsFlag != "" && o.Settings != "" {
		argv = append(argv, c.SettingsFlag, o.Settings)
	}
	if c.ChannelsFlag != "" && len(o.Channels) > 0 {
		argv = append(argv, c.ChannelsFlag, strings.Join(o.Channels, ","))
	}
	return argv
}

// Lines is InputLines with unset as 0.
func (c CLI) Lines() int {
	if c.InputLines == nil {
		return 0
	}
	return *c.InputLines
}

// Launch is the command line that starts the CLI interactively: the command, its launch
// arguments and the model.
func (c CLI) Launch() []string {
	return append(append([]string{c.Command}, c.LaunchArgs...), c.modelArgs()...)
}

// LaunchLine is Launch as one line to type into a shell.
func (c CLI) LaunchLine() string { return strings.Join(c.Launch(), " ") }

// HeadlessBaseArgs are the arguments of a headless run before the tool policy's flags: the
// kind's headless arguments and the model.
func (c CLI) HeadlessBaseArgs() []string {
	return append(append([]string{}, c.HeadlessArgs...), c.modelArgs()...)
}

func (c CLI) modelArgs() []string {
	if c.Model == "" {
		return nil
	}
	return []string{"--model", c.Model}
}

// Builtin is the adapter table of the agent CLIs intentq knows (SPEC N4). A user's entry for one
// of these kinds (clis.<kind>) overrides it field by field; other kinds may be added in the file.
func Builtin() map[string]CLI {
	return map[string]CLI{
		"claude": {
			Command:      "claude",
			Reset:        "/clear",
			BusyPatterns: []string{"Working", "Thinking", "Planning", "Sending", "esc to interrupt"},
			// The input box (three lines) and the hint line under it.
			InputLines: ptr(4),
			// Headless: the person's own settings only (--setting-sources user), never the work
			// folder's .claude/settings.json, whose hooks would run outside the tool policy.
			HeadlessArgs: []string{"-p", "--output-format", "json", "--setting-sources", "user"},
			SettingsFlag: "--settings",
			ChannelsFlag: "--channels",
			// Claude Code 2.1.330's permission dialog, edit/create confirmations and Rewind menu.
			DialogPatterns: []string{"Do you want to proceed?", "Do you want to make this edit", "Do you want to create", "❯ 1. Yes", "Rewind"},
			InputPrompt:    "❯",
			InterruptKeys:  "C-u",
			StopKeys:       "Escape",
			// 2.1.330 is a native binary: tmux shows "claude".
			ProcessNames:    []string{"claude"},
			StopReasonTwice: true,
		},
		// Codex 0.169.0, observed in tmux (200x50) against a Responses API stand-in
		// (internal/testkit/fakeopenai; ../shared/FACTS.md "The real Codex CLI, offline").
		"codex": {
			Command: "codex",
			// Each TUI keeps its app server (threads, tools, hooks, MCP servers) in its own process:
			// by default the first TUI starts a shared daemon that runs every later TUI's hooks with
			// the FIRST TUI's environment (its TMUX_PANE and INTENTQ_AGENT_ID).
			LaunchArgs: []string{"--no-daemon"},
			// /new starts a new thread; no hook fires at the command, the next prompt's SessionStart
			// (source startup) tells it. /clear does the same and also clears the screen.
			Reset:                "/new",
			SessionStartAtPrompt: true,
			// "• Working (3s • esc to interrupt)", a few lines above the input line while a turn runs
			// a tool or waits for the model. NOT shown while an answer streams: the pane then looks
			// idle, and only the hooks (UserPromptSubmit ... Stop) say the agent works.
			BusyPatterns: []string{"esc to interrupt"},
			// The input line is 4th from the bottom: "› " + text, a blank line, the model line, the
			// hints line.
			InputLines:  ptr(4),
			InputPrompt: "›",
			// An empty input line shows a dim placeholder (capture-pane drops the dimness): it is no
			// draft.
			InputPlaceholders: []string{"Ask Codex to do anything", "Ask a follow-up question"},
			// What the bottom lines show while a keystroke would answer something: the approval
			// prompts ("Would you like to run the following command?" / "make the following edits?" /
			// "grant these permissions?", "› 1. Yes, proceed (y) / 2. Yes, and don't ask again ... (p)
			// / 3. No ... (esc)", "Press enter to confirm or esc to cancel": a digit, y or p answers
			// at once), the hooks review at start ("Hooks need review", "enter confirm · esc skip"),
			// the transcript browser that Esc Esc opens ("Browsing transcript · ... ↵ rewind · esc
			// back": Enter rewinds the conversation), the warnings panel (F2: "k keep & next · esc
			// dismiss & close"), an MCP server's request ("Allow this request ...").
			// Only the bottom delivery.busy_lines (8) are read: the prompts' titles are further up
			// than their footers when the command is long.
			DialogPatterns: []string{"Would you like to run the following command?", "Would you like to make the following edits?",
				"Would you like to grant these permissions?", "Would you like to send input to the existing terminal?",
				"Press enter to confirm or esc to cancel", "Yes, proceed (y)", "Hooks need review", "enter confirm · esc skip",
				"Browsing transcript", "↵ rewind", "esc dismiss & close", "Allow this request"},
			// Escalation's phase 2 clears the input line only: C-c on an EMPTY idle input quits Codex
			// at once (the pane becomes a shell), and Escape twice opens the transcript browser.
			InterruptKeys: "C-u",
			StopKeys:      "Escape",
			// Through npm (@openai/codex) tmux shows "node" (the launcher, whose child is the native
			// binary); the native binary run directly shows "codex".
			ProcessNames: []string{"node", "codex"},
		},
		// Copilot CLI 1.0.102 (npm @github/copilot), observed by hand in tmux (200x50), offline,
		// without a GitHub login, against a Responses API stand-in (internal/testkit/fakeopenai)
		// through its BYOK settings: COPILOT_OFFLINE=true, COPILOT_PROVIDER_BASE_URL=<stand-in>/v1,
		// COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_WIRE_API=responses, COPILOT_MODEL (-p and the
		// TUI both answered). Screen-only: intentq installs no hooks for it (1.0.102 reads hooks from
		// settings.json "hooks" and .github/hooks/*.json; not tried) and no end-to-end test drives it.
		"copilot": {
			Command: "copilot",
			// "/new" starts a new conversation (observed). C-c on an empty idle input only shows
			// "ctrl+c again to exit"; a second C-c quits Copilot: no C-c reset, no relaunch.
			Reset: "/new",
			// "◎ Working esc esc edit prompt" on the bottom line while a turn runs.
			BusyPatterns: []string{"Thinking", "Esc to cancel", "Working", "esc esc edit prompt"},
			// The input line "❯ <text>" between two rules, 3rd from the bottom (the hints line under
			// it); an empty one shows no placeholder. A delivery is confirmed by the
			// UserPromptSubmit hook's receipt, else by reading these lines: a loaded Copilot drops an
			// Enter pressed while it starts or right after /new (its MCP servers reloading), and
			// the text stays on the input line, to be cleared and typed again.
			InputLines:  ptr(4),
			InputPrompt: "❯",
			// The approval prompt ("Do you want to run this command?" ❯ 1. Yes / 2. Yes, and don't ask
			// again for `<cmd>` in this repo / 3. No, and tell Copilot what to do differently (Esc to
			// stop); typed "msg_id=3 hello" selected 3 and put " hello" into its text field, so a
			// digit then Enter answers it), the folder trust dialog at start ("Do you trust the files
			// in this folder?"; Esc declines and Copilot exits), their footer, and the first C-c's
			// "ctrl+c again to exit".
			DialogPatterns: []string{"Do you want to run this command?", "Do you trust the files in this folder?",
				"enter to select · esc to cancel", "ctrl+c again to exit"},
			// Its SessionStart hook runs with the first prompt, and its context goes with that
			// prompt (observed 1.0.102, 2026-11-27): a message typed into a fresh TUI is
			// confirmed by its receipt, so that hook names it only (never its text twice).
			SessionStartAtPrompt: true,
			// C-u clears the input line; Escape twice on an idle input opens the rewind (observed:
			// "Nothing to rewind yet" without a conversation); C-c twice quits.
			InterruptKeys: "C-u",
			// A running turn shows "esc esc interrupt": one Escape does nothing, two interrupt it
			// (observed 1.0.102, 2026-11-27); /stop presses them only while its hooks say it works.
			StopKeys: "Escape Escape",
			// Through npm tmux shows "node" (npm-loader.js starts the native binary).
			ProcessNames: []string{"node", "copilot"},
		},
		// Gemini CLI 0.61.0 (npm @google/gemini-cli), observed in tmux (200x50), offline, against a
		// Gemini API stand-in (internal/testkit/fakegemini): GEMINI_API_KEY,
		// GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:P, settings.json security.auth.selectedType
		// "gemini-api-key" (POST /v1beta/models/<m>:streamGenerateContent?alt=sse for turns,
		// :generateContent with JSON output for its router). Its hooks (settings.json "hooks":
		// SessionStart, BeforeAgent, BeforeModel/AfterModel, BeforeTool/AfterTool, AfterAgent,
		// Notification {notification_type ToolPermission}, each with session_id, run in the TUI's
		// process with its environment; timeouts in milliseconds; no tool_use_id or prompt_id) take
		// Claude Code's output: BeforeAgent and AfterTool additionalContext reach the model once (as
		// <hook_context>...</hook_context>, < and > escaped, after the prompt / in the tool's
		// functionResponse), an AfterAgent {"decision":"block","reason":R} continues the agent with R
		// once as a user message (so the stop hook hands messages over). `starter setup --cli gemini`
		// installs them (hooks.GeminiEvents) and the MCP server, whose tools Gemini names
		// mcp_intentq_<tool>; worker/gemini_test.go drives it end to end.
		"gemini": {
			Command: "gemini",
			// No reset by default (/clear was not tried): set clis.gemini.reset to enable phase 3.
			// "⠼ Thinking... (esc to cancel, 9s)" above the input while the model or a tool works,
			// "Executing Hooks: ... (esc to cancel, 0s)" while hooks run.
			BusyPatterns: []string{"esc to cancel"},
			// The input line " > <text>", 3rd to 5th from the bottom (the two workspace lines under
			// it, and up to two blank lines between: a typed message whose Enter was lost under load
			// sat 5th, outside the 4 lines read before, and counted as sent); empty it shows a
			// placeholder. A delivery is confirmed by the BeforeAgent hook's receipt, else by
			// reading these lines.
			InputLines:        ptr(6),
			InputPrompt:       ">",
			InputPlaceholders: []string{"Type your message or @path/to/file"},
			// The approval prompt ("Allow execution of [Shell]?" ● 1. Allow once / 2. Allow for this
			// session / 3. No, suggest changes (esc)): a digit answers it AT ONCE (typed "msg_id=3 hi"
			// cancelled the command); the folder trust dialog at start; the rewind menu that Escape
			// twice opens on an idle input.
			DialogPatterns: []string{"Allow execution of", "Allow once", "Allow for this session", "No, suggest changes",
				"Do you trust the files in this folder?", "Use Enter to select", "Cancel rewind", "Press Ctrl+C again"},
			// C-u clears the input line; C-c twice within a second on an empty idle input quits.
			InterruptKeys: "C-u",
			StopKeys:      "Escape",
			// Through npm tmux shows "node".
			ProcessNames: []string{"node", "gemini"},
		},
		// Kimi CLI is a Python package, not reachable from the machines intentq is tested on: this
		// entry has never been checked against the real program.
		"kimi": {
			// No reset by default: set clis.kimi.reset to enable phase 3 for Kimi.
			Command:      "kimi",
			BusyPatterns: []string{"Thinking", "Working"},
		},
	}
}

func ptr[T any](v T) *T { return &v }
