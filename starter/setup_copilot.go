package main

// setup --cli copilot (issue 37): intentq's hooks into Copilot CLI's user hook folder and its MCP
// server into Copilot's mcp-config.json, merged with what is there, idempotent.

import (
	"fmt"
	"io"
	"path/filepath"

	intentqhooks "github.com/intentq/intentq/internal/doors/hooks"
)

// copilotHookTimeout is the timeout (seconds) of Copilot CLI's hooks (its default is 30 s):
// intentq's answer within hooks.MaxTimeout, the permission hook's wait (hooks.ApprovalTimeout).
func copilotHookTimeout(arg string) int { return intentqhooks.TimeoutFor(arg) }

// setupCopilot writes home/hooks/intentq.json (Claude Code's nested format, which Copilot CLI
// 1.0.102 reads under Claude Code's event names: each runs `starter hook <arg> --cli copilot`)
// and registers `starter mcp` as the MCP server "intentq" (a local server, every tool) in
// home/mcp-config.json; every other hook and server stays.
func setupCopilot(out io.Writer, home, starter string, dryRun bool) error {
	hooks := filepath.Join(home, "hooks", "intentq.json")
	err := updateJSONFile(out, hooks, "Copilot CLI hooks", dryRun, func(doc map[string]any) (bool, error) {
		return mergeCLIHooks(doc, intentqhooks.CopilotEvents, intentqhooks.CopilotFlag, starter, copilotHookTimeout)
	})
	if err != nil {
		return err
	}
	err = updateJSONFile(out, filepath.Join(home, "mcp-config.json"), "the intentq MCP server", dryRun, func(doc map[string]any) (bool, error) {
		servers, err := objectAt(doc, "mcpServers")
		if err != nil {
			return false, err
		}
		server, _ := servers["intentq"].(map[string]any)
		if server == nil {
			server = map[string]any{}
		}
		if cmd, _ := server["command"].(string); cmd == starter && mustJSON(server["args"]) == `["mcp"]` && server["type"] == "local" {
			return false, nil
		}
		// The person's other keys of the server (env, tools) stay.
		server["type"], server["command"], server["args"] = "local", starter, []any{"mcp"}
		if _, ok := server["tools"]; !ok {
			server["tools"] = []any{"*"}
		}
		servers["intentq"], doc["mcpServers"] = server, servers
		return true, nil
	})
	if err != nil {
		return err
	}
	if !dryRun {
		fmt.Fprint(out, "Copilot CLI runs intentq's hooks in the TUI's own process, with the pane's environment: start it\n"+
			"with `starter run-agent` (INTENTQ_AGENT_ID), or in a pane whose @agent_id names the session.\n")
	}
	return nil
}
