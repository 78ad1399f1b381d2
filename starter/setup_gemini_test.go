package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	intentqhooks "github.com/intentq/intentq/internal/doors/hooks"
)

// Issue 25: setup --cli gemini merges intentq's hooks (Gemini's event names, --cli gemini, a
// timeout in milliseconds) and its MCP server into Gemini CLI's settings.json and writes the
// policy for its session-scoped tools: the person's settings and hooks stay, a hook intentq
// installed by hand gets --cli gemini, the MCP server's other keys stay, --dry-run writes
// nothing, a change is backed up first, a second run changes nothing.
func TestSetupGeminiMergesIdempotently(t *testing.T) {
	home := t.TempDir()
	starter := "/opt/intent q/starter"
	settings := filepath.Join(home, "settings.json")
	persons := `{"security":{"auth":{"selectedType":"gemini-api-key"}},` +
		`"hooks":{"AfterAgent":[{"hooks":[{"type":"command","command":"notify-send done"}]}],` +
		`"AfterTool":[{"matcher":"run_shell_command","hooks":[{"type":"command","command":"/usr/bin/starter hook post-tool-use","timeout":5000}]}]},` +
		`"mcpServers":{"other":{"command":"other-server"},"intentq":{"command":"/old/starter","args":["mcp"],"timeout":30000}}}`
	if err := os.WriteFile(settings, []byte(persons), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := setupGemini(&out, home, starter, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(settings); string(b) != persons || !strings.Contains(out.String(), "would change "+settings) {
		t.Fatalf("dry run changed settings.json or said nothing:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(home, "policies", "intentq.toml")); err == nil {
		t.Fatal("dry run wrote the policy")
	}
	out.Reset()
	if err := setupGemini(&out, home, starter, false); err != nil {
		t.Fatal(err)
	}
	if backups, _ := filepath.Glob(settings + ".bak-*"); len(backups) != 1 {
		t.Errorf("backups: %q", backups)
	}
	var doc map[string]any
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["security"] == nil {
		t.Error("the person's settings are gone")
	}
	hooks := doc["hooks"].(map[string]any)
	for _, e := range intentqhooks.GeminiEvents {
		groups, _ := hooks[e.Name].([]any)
		group := intentqhooks.Group(groups, e.Arg)
		if group == nil {
			t.Errorf("%s: no intentq hook", e.Name)
			continue
		}
		entry := group["hooks"].([]any)[0].(map[string]any)
		if cmd := entry["command"].(string); !strings.HasSuffix(cmd, " hook "+e.Arg+" --cli gemini") {
			t.Errorf("%s runs %q", e.Name, cmd)
		}
		if e.Name == "AfterTool" {
			if entry["timeout"] != float64(5000) || group["matcher"] != "run_shell_command" {
				t.Errorf("the person's AfterTool hook changed beyond the flag: %v", group)
			}
		} else if entry["timeout"] != float64(10000) || entry["command"] != `'/opt/intent q/starter' hook `+e.Arg+` --cli gemini` {
			t.Errorf("%s: %v", e.Name, entry)
		}
	}
	if stop := hooks["AfterAgent"].([]any); len(stop) != 2 {
		t.Errorf("AfterAgent groups %v: the person's hook should stay beside intentq's", stop)
	}
	servers := doc["mcpServers"].(map[string]any)
	server := servers["intentq"].(map[string]any)
	if server["command"] != starter || server["timeout"] != float64(30000) || servers["other"] == nil {
		t.Errorf("mcpServers: %v", servers)
	}
	policy, err := os.ReadFile(filepath.Join(home, "policies", "intentq.toml"))
	if err != nil || !strings.Contains(string(policy), `toolName = "mcp_intentq_reply"`) || strings.Contains(string(policy), "inbox_send") {
		t.Errorf("policy (%v):\n%s", err, policy)
	}
	// Again: nothing changes.
	out.Reset()
	if err := setupGemini(&out, home, starter, false); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(settings); !bytes.Equal(again, b) || strings.Contains(out.String(), "written") {
		t.Errorf("a second run changed something:\n%s", out.String())
	}
	if backups, _ := filepath.Glob(settings + ".bak-*"); len(backups) != 1 {
		t.Errorf("backups after a second run: %q", backups)
	}
}
