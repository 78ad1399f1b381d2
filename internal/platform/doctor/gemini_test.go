package doctor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/doors/hooks"
)

// Issue 25: doctor checks a Gemini CLI session's hooks in Gemini's settings.json: missing is a
// warning, all of them with --cli gemini and the MCP server is ok, a hook without --cli gemini
// fails, hooks switched off (hooksConfig.enabled false) fail.
func TestGeminiHooks(t *testing.T) {
	home := t.TempDir()
	if r := GeminiHooks(home); r.OK || r.Status != StatusWarn {
		t.Errorf("no settings.json: %+v", r)
	}
	starter := filepath.Join(home, "starter")
	if err := os.WriteFile(starter, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(flag string, extra map[string]any) {
		t.Helper()
		h := map[string]any{}
		for _, e := range hooks.GeminiEvents {
			h[e.Name] = []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": starter + " hook " + e.Arg + flag, "timeout": 10000}}}}
		}
		doc := map[string]any{"hooks": h, "mcpServers": map[string]any{"intentq": map[string]any{"command": "/bin/starter", "args": []any{"mcp"}}}}
		for k, v := range extra {
			doc[k] = v
		}
		b, _ := json.Marshal(doc)
		if err := os.WriteFile(filepath.Join(home, "settings.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(" --cli gemini", nil)
	if r := GeminiHooks(home); !r.OK || !strings.Contains(r.Detail, "BeforeAgent") {
		t.Errorf("installed: %+v", r)
	}
	write("", nil)
	if r := GeminiHooks(home); r.OK || r.Status == StatusWarn || !strings.Contains(r.Detail, "--cli gemini") {
		t.Errorf("without the flag: %+v", r)
	}
	write(" --cli gemini", map[string]any{"hooksConfig": map[string]any{"enabled": false}})
	if r := GeminiHooks(home); r.OK || r.Status == StatusWarn {
		t.Errorf("hooks disabled: %+v", r)
	}
}
