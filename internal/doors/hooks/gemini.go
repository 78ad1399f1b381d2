package hooks

// Gemini CLI's hooks (issue 25). Gemini CLI 0.61.0 reads hooks from its settings.json ("hooks",
// in Claude Code's shape: event -> groups -> {type: command, command, timeout in MILLISECONDS}),
// runs them in the TUI's own process with its environment (TMUX_PANE, INTENTQ_AGENT_ID), and takes
// Claude Code's hook output: hookSpecificOutput.additionalContext (BeforeAgent after the prompt,
// AfterTool inside the tool's functionResponse, SessionStart as a user turn in the history; each
// wrapped in <hook_context>, with < and > escaped) and {"decision":"block","reason":R} (AfterAgent:
// the agent goes on with R as a user message, once). Its events have other names, and its input
// lacks what intentq keys a hook run by (tool_use_id, prompt_id); GeminiInput fills them in.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GeminiEvents are the hooks intentq installs into Gemini CLI's settings.json (setup --cli
// gemini): Gemini's event names with the starter's argument for each. BeforeAgent is the
// submitted prompt (UserPromptSubmit), AfterAgent the turn's end (Stop: a block continues the
// turn), Notification fires with notification_type ToolPermission when an approval prompt opens.
var GeminiEvents = []ClaudeEvent{
	{"SessionStart", EventSessionStart},
	{"BeforeAgent", EventUserPromptSubmit},
	{"BeforeTool", EventPreToolUse},
	{"AfterTool", EventPostToolUse},
	{"AfterAgent", EventStop},
	{"Notification", EventNotification},
}

// GeminiFlag is what a Gemini CLI hook command adds after `hook <event>`.
const GeminiFlag = "--cli gemini"

// GeminiTimeout is the time Gemini CLI gives intentq's hooks, in milliseconds (its unit):
// MaxTimeout.
const GeminiTimeout = int(MaxTimeout / 1e6)

// GeminiInput turns Gemini CLI's hook input into the Input intentq's handlers read, as JSON:
//   - tool_use_id and prompt_id, which Gemini does not send, are derived from the run (its
//     session, its timestamp and the tool call or prompt): the same hook run gets the same key;
//   - an MCP tool's name, mcp_<server>_<tool> in Gemini, becomes Claude Code's
//     mcp__<server>__<tool>, as hooks.reply_tools and hooks.remind_tools name them;
//   - notification_type ToolPermission (an approval prompt opens) becomes permission_prompt.
//
// Input that is not a JSON object is returned as it is (ReadInput then says why it is unusable).
func GeminiInput(data []byte) []byte {
	var in map[string]any
	if json.Unmarshal(data, &in) != nil || in == nil {
		return data
	}
	str := func(k string) string { s, _ := in[k].(string); return s }
	key := func(parts ...string) string { return hashKey("gemini-", parts...) }
	switch str("hook_event_name") {
	case "BeforeTool", "AfterTool":
		if str("tool_use_id") == "" {
			args, _ := json.Marshal(in["tool_input"])
			in["tool_use_id"] = key(str("session_id"), str("timestamp"), str("tool_name"), string(args))
		}
	case "BeforeAgent":
		if str("prompt_id") == "" {
			in["prompt_id"] = key(str("session_id"), str("timestamp"), str("prompt"))
		}
	case "Notification":
		if str("notification_type") == "ToolPermission" {
			in["notification_type"] = "permission_prompt"
		}
	}
	if name := str("tool_name"); name != "" {
		in["tool_name"] = GeminiToolName(name)
	}
	out, err := json.Marshal(in)
	if err != nil {
		return data
	}
	return out
}

// GeminiToolName is Claude Code's name of a tool Gemini CLI names: mcp_<server>_<tool> (Gemini
// 0.61.0: the server's name holds no "_") becomes mcp__<server>__<tool>; other names stay.
func GeminiToolName(name string) string {
	rest, ok := strings.CutPrefix(name, "mcp_")
	if !ok || strings.HasPrefix(rest, "_") {
		return name
	}
	server, tool, ok := strings.Cut(rest, "_")
	if !ok || server == "" || tool == "" {
		return name
	}
	return fmt.Sprintf("mcp__%s__%s", server, tool)
}

// GeminiMCPTool is Gemini CLI's name of an MCP server's tool (mcp_<server>_<tool>).
func GeminiMCPTool(server, tool string) string { return "mcp_" + server + "_" + tool }

// GeminiHome is Gemini CLI's folder: dir, else $GEMINI_CLI_HOME/.gemini (Gemini 0.61.0 takes
// that variable as its home), else ~/.gemini.
func GeminiHome(dir string) (string, error) {
	if dir == "" {
		home := os.Getenv("GEMINI_CLI_HOME")
		if home == "" {
			var err error
			if home, err = os.UserHomeDir(); err != nil {
				return "", fmt.Errorf("home directory: %w", err)
			}
		}
		dir = filepath.Join(home, ".gemini")
	}
	return filepath.Abs(dir)
}
