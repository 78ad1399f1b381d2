package hooks

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Issue 25: Gemini CLI 0.61.0's hook input, as its hooks received it (captured by hand), reads as
// Claude Code's: a tool run and a prompt get a key of their own, stable for the same run; an MCP
// tool gets Claude Code's name (so hooks.reply_tools matches Gemini's reply); an approval prompt's
// notification is a permission prompt.
func TestGeminiInput(t *testing.T) {
	after := `{"session_id":"8066a101-d5fd-40b9-ada9-534e7441fb48","transcript_path":"/h/.gemini/tmp/work/chats/session-1.jsonl","cwd":"/w",` +
		`"hook_event_name":"AfterTool","timestamp":"2026-11-25T19:49:27.238Z","tool_name":"mcp_intentq_reply",` +
		`"tool_input":{"chat_id":"42","reply_to":"7","text":"hi"},"tool_response":{"llmContent":"sent"}}`
	read := func(data string) Input {
		t.Helper()
		in, err := ReadInput(bytes.NewReader(GeminiInput([]byte(data))))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	in := read(after)
	if in.ToolName != "mcp__intentq__reply" || in.HookEventName != "AfterTool" || in.SessionID == "" {
		t.Errorf("AfterTool read as %+v", in)
	}
	if !strings.HasPrefix(in.ToolUseID, "gemini-") || read(after).ToolUseID != in.ToolUseID {
		t.Errorf("tool_use_id %q is not a stable key", in.ToolUseID)
	}
	var r replyInput
	if err := json.Unmarshal(in.ToolInput, &r); err != nil || string(r.ChatID) != `"42"` {
		t.Errorf("tool_input %s", in.ToolInput)
	}
	// Another call (a later timestamp, or other arguments) is another run.
	if read(strings.Replace(after, "27.238Z", "29.845Z", 1)).ToolUseID == in.ToolUseID ||
		read(strings.Replace(after, `"text":"hi"`, `"text":"ho"`, 1)).ToolUseID == in.ToolUseID {
		t.Error("two tool runs share a key")
	}
	prompt := `{"session_id":"s","hook_event_name":"BeforeAgent","timestamp":"2026-11-25T19:49:24.545Z","prompt":"【新着メッセージ】msg_id=3 chat=42: hi"}`
	if p := read(prompt); !strings.HasPrefix(p.PromptID, "gemini-") || p.Prompt == "" {
		t.Errorf("BeforeAgent read as %+v", p)
	}
	if n := read(`{"session_id":"s","hook_event_name":"Notification","notification_type":"ToolPermission","message":"Allow?"}`); n.NotificationType != "permission_prompt" {
		t.Errorf("notification type %q", n.NotificationType)
	}
	if s := read(`{"session_id":"s","hook_event_name":"AfterAgent","prompt":"p","prompt_response":"done","stop_hook_active":true}`); !s.StopHookActive {
		t.Error("stop_hook_active lost")
	}
	for name, want := range map[string]string{"run_shell_command": "run_shell_command", "mcp_intentq_reply": "mcp__intentq__reply",
		"mcp_intentq_inbox_read": "mcp__intentq__inbox_read", "mcp_": "mcp_", "mcp__x": "mcp__x"} {
		if got := GeminiToolName(name); got != want {
			t.Errorf("GeminiToolName(%q) = %q, want %q", name, got, want)
		}
	}
	if got := string(GeminiInput([]byte("not json"))); got != "not json" {
		t.Errorf("unusable input changed: %q", got)
	}
}
