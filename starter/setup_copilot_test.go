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

// Issue 37: setup --cli copilot writes intentq's hooks into Copilot CLI's user hook folder
// (Claude Code's nested format and event names, each with --cli copilot; the permission hook with
// its long timeout) and registers `starter mcp` in mcp-config.json beside the person's servers,
// keeping their keys; --dry-run writes nothing; a second run changes nothing.
func TestSetupCopilotMergesIdempotently(t *testing.T) {
	home := t.TempDir()
	starter := "/opt/intent q/starter"
	mcp := filepath.Join(home, "mcp-config.json")
	persons := `{"mcpServers":{"other":{"type":"local","command":"other","tools":["*"]},"intentq":{"command":"/old/starter","args":["mcp"],"env":{"INTENTQ_CONFIG":"/etc/iq.yaml"},"tools":["reply"]}}}`
	if err := os.WriteFile(mcp, []byte(persons), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := setupCopilot(&out, home, starter, true); err != nil {
		t.Fatal(err)
	}
	hooksFile := filepath.Join(home, "hooks", "intentq.json")
	if _, err := os.Stat(hooksFile); err == nil {
		t.Fatal("dry run wrote the hooks")
	}
	if b, _ := os.ReadFile(mcp); string(b) != persons {
		t.Fatal("dry run changed mcp-config.json")
	}
	if err := setupCopilot(&out, home, starter, false); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hooks map[string][]map[string]any `json:"hooks"`
	}
	b, _ := os.ReadFile(hooksFile)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range intentqhooks.CopilotEvents {
		groups := doc.Hooks[e.Name]
		if len(groups) != 1 {
			t.Fatalf("%s: %d groups", e.Name, len(groups))
		}
		h := groups[0]["hooks"].([]any)[0].(map[string]any)
		if cmd := h["command"].(string); !strings.Contains(cmd, " hook "+e.Arg+" --cli copilot") || !strings.HasPrefix(cmd, "'/opt/intent q/starter'") {
			t.Errorf("%s runs %q", e.Name, cmd)
		}
		if want := float64(intentqhooks.TimeoutFor(e.Arg)); h["timeout"] != want {
			t.Errorf("%s: timeout %v, want %v", e.Name, h["timeout"], want)
		}
	}
	var servers struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	b, _ = os.ReadFile(mcp)
	if err := json.Unmarshal(b, &servers); err != nil {
		t.Fatal(err)
	}
	iq := servers.MCPServers["intentq"]
	if iq["command"] != starter || iq["type"] != "local" || mustJSON(iq["args"]) != `["mcp"]` || mustJSON(iq["env"]) != `{"INTENTQ_CONFIG":"/etc/iq.yaml"}` ||
		mustJSON(iq["tools"]) != `["reply"]` || servers.MCPServers["other"] == nil {
		t.Errorf("mcp-config.json: %s", b)
	}
	before, _ := os.ReadFile(hooksFile)
	out.Reset()
	if err := setupCopilot(&out, home, starter, false); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(hooksFile); !bytes.Equal(before, after) || strings.Contains(out.String(), "backed up") {
		t.Errorf("a second run changed something:\n%s", out.String())
	}
}
