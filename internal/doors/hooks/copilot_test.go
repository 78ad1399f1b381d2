package hooks

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Payloads Copilot CLI 1.0.102 gave hooks installed under Claude Code's event names (recorded
// 2026-11-27, offline).
const (
	copilotPostToolUse = `{"hook_event_name":"PostToolUse","session_id":"c5ae1f8f","timestamp":"2026-11-27T05:43:28.227Z","cwd":"/w","tool_name":"Bash","tool_input":{"command":"echo hi","description":"probe","mode":"sync","initial_wait":10},"tool_result":{"result_type":"success","text_result_for_llm":"hi"}}`
	copilotPrompt      = `{"hook_event_name":"UserPromptSubmit","session_id":"c5ae1f8f","timestamp":"2026-11-27T05:43:27.501Z","cwd":"/w","prompt":"say hi"}`
	copilotPermission  = `{"hookName":"permissionRequest","sessionId":"c5ae1f8f","timestamp":1795758208072,"cwd":"/w","toolName":"bash","toolInput":{"command":"touch x"},"permissionSuggestions":[]}`
)

// Issue 37: Copilot CLI's input reads as Claude Code's: a tool call and a prompt get stable keys
// Copilot does not send (the same run, the same key; another run, another), and the permission
// request's camelCase fields become Claude Code's.
func TestCopilotInputReadsAsClaudeCodes(t *testing.T) {
	read := func(raw string) Input {
		t.Helper()
		in, err := ReadInput(bytes.NewReader(CopilotInput([]byte(raw))))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	post := read(copilotPostToolUse)
	if post.ToolName != "Bash" || post.ToolUseID == "" || post.SessionID != "c5ae1f8f" || post.ToolUseID != read(copilotPostToolUse).ToolUseID {
		t.Errorf("post-tool-use: %+v", post)
	}
	if other := read(`{"hook_event_name":"PostToolUse","session_id":"c5ae1f8f","timestamp":"2026-11-27T05:43:29Z","tool_name":"Bash","tool_input":{"command":"echo hi"}}`); other.ToolUseID == post.ToolUseID {
		t.Error("two tool calls got one key")
	}
	if p := read(copilotPrompt); p.Prompt != "say hi" || p.PromptID == "" {
		t.Errorf("user-prompt-submit: %+v", p)
	}
	var perm PermissionInput
	if err := json.Unmarshal(CopilotInput([]byte(copilotPermission)), &perm); err != nil {
		t.Fatal(err)
	}
	if perm.ToolName != "Bash" || string(perm.ToolInput) != `{"command":"touch x"}` || perm.SessionID != "c5ae1f8f" || perm.PermissionSuggestions == nil {
		t.Errorf("permission request: %+v", perm)
	}
	if got := string(CopilotInput([]byte("not json"))); got != "not json" {
		t.Errorf("malformed input changed: %q", got)
	}
}

// Issue 37: Copilot CLI reads additionalContext at the top of a hook's output (it ignores
// hookSpecificOutput), and a Stop block as Claude Code does.
func TestCopilotOutputIsFlat(t *testing.T) {
	var b bytes.Buffer
	out := Output{HookSpecificOutput: &HookSpecificOutput{HookEventName: "PostToolUse", AdditionalContext: "a message"}}
	if err := Write(&b, out, true); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != `{"additionalContext":"a message"}`+"\n" {
		t.Errorf("flat: %s", got)
	}
	b.Reset()
	_ = Write(&b, Output{Decision: "block", Reason: "R"}, true)
	if got := b.String(); got != `{"decision":"block","reason":"R"}`+"\n" {
		t.Errorf("stop block: %s", got)
	}
	b.Reset()
	_ = Write(&b, Output{}, true)
	if b.Len() != 0 {
		t.Errorf("an empty answer printed %q", b.String())
	}
}
