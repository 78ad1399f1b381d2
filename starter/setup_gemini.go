package main

// setup --cli gemini (issue 25): intentq's hooks and its MCP server into Gemini CLI's
// settings.json, and a policy that lets the session-scoped MCP tools run without asking, merged
// with what is there, idempotent.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/intentq/intentq/internal/base/private"
	intentqhooks "github.com/intentq/intentq/internal/doors/hooks"
)

// geminiHome is Gemini CLI's folder (hooks.GeminiHome).
func geminiHome(dir string) (string, error) { return intentqhooks.GeminiHome(dir) }

// setupGemini installs intentq's hooks into home/settings.json ("hooks": Gemini's events, each
// running `starter hook <arg> --cli gemini` with a timeout in milliseconds; every other hook and
// setting stays), registers `starter mcp` as the MCP server "intentq" there ("mcpServers"), and
// writes home/policies/intentq.toml, which allows intentq's session-scoped MCP tools
// (preAllowedTools, as Gemini names them: mcp_intentq_reply, ...) without a confirmation.
func setupGemini(out io.Writer, home, starter string, dryRun bool) error {
	settings := filepath.Join(home, "settings.json")
	err := updateJSONFile(out, settings, "Gemini CLI hooks and the intentq MCP server", dryRun, func(doc map[string]any) (bool, error) {
		changed, err := mergeCLIHooks(doc, intentqhooks.GeminiEvents, intentqhooks.GeminiFlag, starter, func(string) int { return intentqhooks.GeminiTimeout })
		if err != nil {
			return false, err
		}
		servers, err := objectAt(doc, "mcpServers")
		if err != nil {
			return false, err
		}
		server, _ := servers["intentq"].(map[string]any)
		if server == nil {
			server = map[string]any{}
		}
		if cmd, _ := server["command"].(string); cmd != starter || mustJSON(server["args"]) != `["mcp"]` {
			// The person's other keys of the server (env, timeout, trust) stay.
			server["command"], server["args"] = starter, []any{"mcp"}
			servers["intentq"], doc["mcpServers"] = server, servers
			changed = true
		}
		return changed, nil
	})
	if err != nil {
		return err
	}
	if err := writeOwnFile(out, filepath.Join(home, "policies", "intentq.toml"), "the policy for intentq's MCP tools", geminiPolicy(), dryRun); err != nil {
		return err
	}
	if !dryRun {
		fmt.Fprint(out, "Gemini CLI runs intentq's hooks in the TUI's own process, with the pane's environment: start it\n"+
			"with `starter run-agent` (INTENTQ_AGENT_ID), or in a pane whose @agent_id names the session. It\n"+
			"starts the MCP server with its environment minus names like *TOKEN*, *KEY*, *SECRET*: keep intentq's\n"+
			"settings in a config file (INTENTQ_CONFIG), not in such variables.\n")
	}
	return nil
}

// geminiPolicy is Gemini CLI's policy file (TOML, user tier) allowing intentq's session-scoped
// MCP tools without a confirmation; inbox_send, which reaches any agent, is left to Gemini's
// prompt.
func geminiPolicy() string {
	var b strings.Builder
	b.WriteString("# Written by `starter setup --cli gemini` (intentq): intentq's MCP tools that act only for the\n" +
		"# calling session run without a confirmation. Running setup again rewrites this file.\n")
	for _, tool := range preAllowedTools {
		name := strings.TrimPrefix(tool, "mcp__intentq__")
		fmt.Fprintf(&b, "\n[[rule]]\ntoolName = %q\nmcpName = \"intentq\"\ndecision = \"allow\"\npriority = 100\n",
			intentqhooks.GeminiMCPTool("intentq", name))
	}
	return b.String()
}

// writeOwnFile writes a file setup owns whole: nothing when it already holds content; else a
// backup of what it held, then content (0600, atomically). With dryRun the difference is printed.
func writeOwnFile(out io.Writer, path, what, content string, dryRun bool) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if bytes.Equal(old, []byte(content)) {
		fmt.Fprintf(out, "%s already in %s\n", what, path)
		return nil
	}
	if dryRun {
		fmt.Fprintf(out, "would change %s:\n%s", path, lineDiff(string(old), content))
		return nil
	}
	if len(old) > 0 {
		backup := fmt.Sprintf("%s.bak-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.WriteFile(backup, old, 0o600); err != nil {
			return fmt.Errorf("back up %s: %w", path, err)
		}
		fmt.Fprintf(out, "backed up %s to %s\n", path, backup)
	}
	if err := private.WriteFile(path, []byte(content)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s written to %s\n", what, path)
	return nil
}
