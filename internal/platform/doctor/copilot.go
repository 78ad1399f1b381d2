package doctor

// The hooks of a Copilot CLI session (issue 37): intentq's hooks in $COPILOT_HOME/hooks/intentq.json
// and its MCP server in $COPILOT_HOME/mcp-config.json.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/intentq/intentq/internal/doors/hooks"
)

// CopilotHooks looks for intentq's hooks (Claude Code's event names, each running `starter hook
// <arg> --cli copilot`) in home/hooks/intentq.json and the MCP server "intentq" in
// home/mcp-config.json. Not installed yet is a warning; a hook without --cli copilot is a
// failure: it would print Claude Code's nested output, which Copilot CLI does not read.
func CopilotHooks(home string) Result {
	const name = "hooks copilot"
	fix := "starter setup --cli copilot"
	path := filepath.Join(home, "hooks", "intentq.json")
	if _, bad := cliHooks(cliHookFile{name: name, fix: fix, path: path, cli: "Copilot CLI", events: hooks.CopilotEvents, flag: hooks.CopilotFlag,
		withoutFlag: "their output would be Claude Code's, which Copilot CLI does not read"}); bad != nil {
		return *bad
	}
	mcp := filepath.Join(home, "mcp-config.json")
	var doc struct {
		Servers map[string]struct {
			Command string `json:"command"`
		} `json:"mcpServers"`
	}
	if b, err := os.ReadFile(mcp); err != nil || json.Unmarshal(b, &doc) != nil || doc.Servers["intentq"].Command == "" {
		return Result{Name: name, Status: StatusWarn, Detail: "hooks installed, but " + mcp + " has no mcpServers.intentq: Copilot CLI cannot reply through intentq",
			Hint: fix + " registers it"}
	}
	return Result{Name: name, OK: true, Detail: fmt.Sprintf("%s in %s and the MCP server intentq in %s", strings.Join(eventNames(hooks.CopilotEvents), ", "), path, mcp)}
}
