package doctor

// The hooks of a Gemini CLI session (issue 25): intentq's hooks and MCP server in Gemini CLI's
// settings.json.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Result{Name: name, Status: StatusWarn, Detail: "not installed yet: " + path + " does not exist", Hint: fix + " installs them"}
	}
	if err != nil {
		return Result{Name: name, Detail: err.Error()}
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return Result{Name: name, Detail: fmt.Sprintf("%s: %v", path, err), Hint: "fix the JSON (Gemini CLI reads no hook from it either)"}
	}
	settings, _ := doc["hooks"].(map[string]any)
	var missing, noFlag []string
	for _, e := range hooks.GeminiEvents {
		groups, _ := settings[e.Name].([]any)
		group := hooks.Group(groups, e.Arg)
		if group == nil {
			missing = append(missing, e.Name)
			continue
		}
		list, _ := group["hooks"].([]any)
		for _, h := range list {
			entry, _ := h.(map[string]any)
			if cmd, _ := entry["command"].(string); hooks.IsIntentqHook(cmd) && !strings.Contains(cmd, hooks.GeminiFlag) {
				noFlag = append(noFlag, e.Name)
			}
		}
	}
	if len(noFlag) > 0 {
		return Result{Name: name, Detail: fmt.Sprintf("%s: the hooks of %s run without %s: they would read Gemini CLI's input as Claude Code's",
			path, strings.Join(noFlag, ", "), hooks.GeminiFlag), Hint: fix + " adds it"}
	}
	if len(missing) > 0 {
		return Result{Name: name, Status: StatusWarn, Detail: fmt.Sprintf("not installed yet: %s lacks %s", path, strings.Join(missing, ", ")), Hint: fix + " installs them"}
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
