package hooks

// GitHub Copilot CLI's hooks (issue 37), as observed on @github/copilot 1.0.102 (2026-11-27,
// offline with COPILOT_OFFLINE and a BYOK endpoint): a user's hook files are
// $COPILOT_HOME/hooks/*.json (default ~/.copilot); in Claude Code's nested format under Claude
// Code's event names, each hook gets Claude Code's input (hook_event_name, session_id, snake_case
// fields, tool_name "Bash") but no tool_use_id or prompt_id, and PermissionRequest gets Copilot's
// own camelCase input (toolName "bash", toolInput). Copilot reads a flat output: additionalContext
// at the top (hookSpecificOutput is ignored), {"decision":"block","reason":R} on Stop (R becomes
// the next user prompt), and {"behavior":"allow"|"deny","message":M} on PermissionRequest. Hooks
// run in the TUI's process, with its environment; the default timeout is 30 s.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CopilotEvents are the hooks intentq installs into Copilot CLI's hook file (setup --cli
// copilot), under Claude Code's event names, which Copilot 1.0.102 also takes. Not its
// PermissionRequest: Copilot runs it before its own rules, for every tool call (with
// --allow-all-tools too), so it cannot tell a prompt that will open from one that will not; its
// Notification (permission_prompt) says when one opens, and the agent then waits for the person.
var CopilotEvents = slices.DeleteFunc(slices.Clone(ClaudeEvents), func(e ClaudeEvent) bool { return e.Arg == EventPermissionRequest })

// CopilotFlag is what a Copilot CLI hook command adds after `hook <event>`.
const CopilotFlag = "--cli copilot"

// CopilotHome is Copilot CLI's folder: dir, else $COPILOT_HOME, else ~/.copilot.
func CopilotHome(dir string) (string, error) { return cliHome(dir, "COPILOT_HOME", ".copilot") }

// cliHome is an agent CLI's folder: dir, else $env, else folder in the home directory; absolute.
func cliHome(dir, env, folder string) (string, error) {
	if dir == "" {
		dir = os.Getenv(env)
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("home directory: %w", err)
		}
		dir = filepath.Join(home, folder)
	}
	return filepath.Abs(dir)
}

// CopilotInput turns Copilot CLI's hook input into the Input intentq's handlers read, as JSON:
//   - tool_use_id and prompt_id, which Copilot does not send, are derived from the run (its
//     session, its timestamp and the tool call or prompt): the same hook run gets the same key;
//   - PermissionRequest's camelCase fields (toolName "bash", toolInput, permissionSuggestions)
//     become Claude Code's (tool_name "Bash", tool_input, permission_suggestions).
//
// Input that is not a JSON object is returned as it is (ReadInput then says why it is unusable).
func CopilotInput(data []byte) []byte {
	var in map[string]any
	if json.Unmarshal(data, &in) != nil || in == nil {
		return data
	}
	str := func(k string) string { s, _ := in[k].(string); return s }
	stamp := fmt.Sprint(in["timestamp"])
	key := func(parts ...string) string { return hashKey("copilot-", parts...) }
	if _, camel := in["toolName"]; camel {
		for from, to := range map[string]string{"sessionId": "session_id", "toolInput": "tool_input", "toolArgs": "tool_input", "permissionSuggestions": "permission_suggestions"} {
			if v, ok := in[from]; ok {
				in[to] = v
				delete(in, from)
			}
		}
		in["tool_name"] = copilotToolName(str("toolName"))
		delete(in, "toolName")
	}
	switch str("hook_event_name") {
	case "PreToolUse", "PostToolUse":
		if str("tool_use_id") == "" {
			args, _ := json.Marshal(in["tool_input"])
			in["tool_use_id"] = key(str("session_id"), stamp, str("tool_name"), string(args))
		}
	case "UserPromptSubmit":
		if str("prompt_id") == "" {
			in["prompt_id"] = key(str("session_id"), stamp, str("prompt"))
		}
	}
	out, err := json.Marshal(in)
	if err != nil {
		return data
	}
	return out
}

// copilotToolName is Claude Code's name of a tool Copilot names in its own input: "bash" is
// "Bash", as in Copilot's Claude-format input; others stay.
func copilotToolName(name string) string {
	if name == "bash" {
		return "Bash"
	}
	return name
}

// FlatOutput is a hook's output as Copilot CLI reads it: additionalContext at the top.
type FlatOutput struct {
	Decision          string `json:"decision,omitempty"`
	Reason            string `json:"reason,omitempty"`
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// Flat is out as Copilot CLI reads it.
func Flat(out Output) FlatOutput {
	f := FlatOutput{Decision: out.Decision, Reason: out.Reason}
	if out.HookSpecificOutput != nil {
		f.AdditionalContext = out.HookSpecificOutput.AdditionalContext
	}
	return f
}

// hashKey is the key of a hook run a CLI does not name (a tool call, a prompt): prefix and a hash
// of what identifies the run, so the same run gets the same key.
func hashKey(prefix string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return prefix + hex.EncodeToString(h[:12])
}
