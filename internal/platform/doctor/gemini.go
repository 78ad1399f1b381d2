package doctor

// The hooks of a Gemini CLI session (issue 25): intentq's hooks and MCP server in Gemini CLI's
// settings.json.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/intentq/intentq/internal/doors/hooks"
)

// GeminiHooks looks for intentq's hooks (Gemini's event names, each running `starter hook <arg>
// --cli gemini`) and the MCP server "intentq" in home/settings.json. Not installed yet is a
// warning; a hook without --cli gemini is a failure: it would read Gemini's input as Claude
// Code's (no run keys, Gemini's MCP tool names) and serve the default session.
func GeminiHooks(home string) Result {
	const name = "hooks gemini"
	fix := "starter setup --cli gemini"
	path := filepath.Join(home, "settings.json")
	doc, bad := cliHooks(cliHookFile{name: name, fix: fix, path: path, cli: "Gemini CLI", events: hooks.GeminiEvents, flag: hooks.GeminiFlag,
		withoutFlag: "they would read Gemini CLI's input as Claude Code's"})
	if bad != nil {
		return *bad
	}
	if enabled, ok := lookupBool(doc, "hooksConfig", "enabled"); ok && !enabled {
		return Result{Name: name, Detail: path + ": hooksConfig.enabled is false: Gemini CLI runs no hook", Hint: "remove hooksConfig.enabled or set it to true"}
	}
	servers, _ := doc["mcpServers"].(map[string]any)
	server, _ := servers["intentq"].(map[string]any)
	if cmd, _ := server["command"].(string); cmd == "" {
		return Result{Name: name, Status: StatusWarn, Detail: "hooks installed, but " + path + " has no mcpServers.intentq: Gemini CLI cannot reply through intentq",
			Hint: fix + " registers it"}
	}
	return Result{Name: name, OK: true, Detail: fmt.Sprintf("%s and the MCP server intentq in %s", strings.Join(eventNames(hooks.GeminiEvents), ", "), path)}
}

// lookupBool is the boolean at table.key of a JSON document.
func lookupBool(doc map[string]any, table, key string) (value, ok bool) {
	t, _ := doc[table].(map[string]any)
	value, ok = t[key].(bool)
	return value, ok
}
