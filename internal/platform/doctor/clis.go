package doctor

// The hooks of each configured agent CLI (issue 25): Claude Code's settings.json, Codex's
// hooks.json with the trust Codex keeps in config.toml, and the MCP server Codex replies through.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/doors/hooks"
)

// CLIHooks checks the hooks of every CLI kind a session uses (the person's own pane aside):
// Claude Code's (also when no session names a CLI: the secretary's settings), Codex's in
// codexHome (its hooks.json, their trust, the MCP server), Gemini CLI's settings.json (its hooks
// and the MCP server; GeminiHooks), and for the kinds without hooks says
// that intentq reads their state from the screen.
func CLIHooks(cfg *config.Config, codexHome string) Report {
	kinds := map[string]bool{}
	for _, s := range cfg.Sessions {
		if !s.Human && s.CLI != "" {
			kinds[s.CLI] = true
		}
	}
	var r Report
	if kinds["claude"] || len(kinds) == 0 {
		r = append(r, Hooks(cfg.Claude.Settings))
	}
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		switch kind {
		case "claude":
		case "codex":
			r = append(r, CodexHooks(codexHome), CodexMCP(codexHome))
		case "gemini", "copilot":
			homeOf, check := hooks.GeminiHome, GeminiHooks
			if kind == "copilot" {
				homeOf, check = hooks.CopilotHome, CopilotHooks
			}
			home, err := homeOf("")
			if err != nil {
				r = append(r, Result{Name: "hooks " + kind, Detail: err.Error()})
				continue
			}
			r = append(r, check(home))
		default:
			r = append(r, Result{Name: "hooks " + kind, OK: true,
				Detail: "none: intentq has no hooks for " + kind + "; it reads the agent's state from its screen only (docs/agents.md)"})
		}
	}
	return r
}

// CodexHooks looks for intentq's hooks in home/hooks.json and for their trust in
// home/config.toml (hooks.state."<hooks.json>:<event>:<group>:<handler>".trusted_hash, as Codex
// 0.169.0 records it when the person trusts them, and as `starter setup --cli codex` records
// it). Hooks not installed yet are a warning; installed but not trusted is a failure: Codex
// runs no hook it has not trusted (it asks for a review at its start), so the agent's state and
// the messages at its turn boundaries would never reach intentq.
func CodexHooks(home string) Result {
	const name = "hooks codex"
	fix := "starter setup --cli codex"
	path := filepath.Join(home, "hooks.json")
	doc, bad := cliHooks(cliHookFile{name: name, fix: fix, path: path, cli: "Codex", events: hooks.CodexEvents, flag: hooks.CodexFlag,
		withoutFlag: "they would find their agent by the environment of Codex's process, not by its thread"})
	if bad != nil {
		return *bad
	}
	state, err := codexTrustState(filepath.Join(home, "config.toml"))
	if err != nil {
		return Result{Name: name, Detail: err.Error(), Hint: "fix config.toml (Codex does not start with it either)"}
	}
	trusts, unknown, foreign := hooks.CodexTrustsShaped(path, doc)
	if len(foreign) > 0 {
		var cmds []string
		for _, f := range foreign {
			cmds = append(cmds, fmt.Sprintf("%s: %q", f.Event, f.Command))
		}
		return Result{Name: name, Detail: fmt.Sprintf("%s has hooks that look like intentq's but are not what setup writes: %s", path, strings.Join(cmds, "; ")),
			Hint: "do not trust them in Codex's dialog: remove them from hooks.json unless you wrote them, then run " + fix}
	}
	var untrusted []string
	for _, tr := range trusts {
		if state[tr.Key] != tr.Hash {
			untrusted = append(untrusted, tr.Event)
		}
	}
	if len(untrusted) > 0 {
		slices.Sort(untrusted)
		return Result{Name: name, Detail: fmt.Sprintf("installed but not trusted: %s in %s has no matching trusted_hash in %s, and Codex runs no untrusted hook",
			strings.Join(slices.Compact(untrusted), ", "), path, filepath.Join(home, "config.toml")),
			Hint: fix + " records the trust; or choose to trust them in the \"Hooks need review\" dialog Codex opens at its start"}
	}
	if len(unknown) > 0 {
		return Result{Name: name, Status: StatusWarn, Detail: fmt.Sprintf("trust not checked: the hooks %q have settings doctor cannot hash as Codex does", unknown),
			Hint: "make sure Codex trusts them (its \"Hooks need review\" dialog), or " + fix + " after removing those settings"}
	}
	return Result{Name: name, OK: true, Detail: fmt.Sprintf("%s in %s, trusted in config.toml", strings.Join(eventNames(hooks.CodexEvents), ", "), path)}
}

// CodexMCP looks for intentq's MCP server (the reply path) in home/config.toml.
func CodexMCP(home string) Result {
	const name = "mcp codex"
	path := filepath.Join(home, "config.toml")
	doc, err := readTOML(path)
	if err != nil {
		return Result{Name: name, Detail: err.Error(), Hint: "fix config.toml (Codex does not start with it either)"}
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	server, _ := servers["intentq"].(map[string]any)
	cmd, _ := server["command"].(string)
	if cmd == "" {
		return Result{Name: name, Status: StatusWarn, Detail: "not registered yet: " + path + " has no mcp_servers.intentq: Codex cannot reply through intentq",
			Hint: "starter setup --cli codex registers it"}
	}
	have := map[string]bool{}
	list, _ := server["env_vars"].([]any)
	for _, v := range list {
		switch v := v.(type) {
		case string:
			have[v] = true
		case map[string]any:
			if n, ok := v["name"].(string); ok {
				have[n] = true
			}
		}
	}
	var missing []string
	for _, v := range hooks.CodexMCPEnv {
		if !have[v] {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return Result{Name: name, Status: StatusWarn, Detail: fmt.Sprintf("mcp_servers.intentq in %s does not hand on %s (env_vars): Codex starts it without them, so it does not know its agent or config and acts for the default session",
			path, strings.Join(missing, ", ")), Hint: "starter setup --cli codex adds them"}
	}
	return Result{Name: name, OK: true, Detail: "mcp_servers.intentq runs " + cmd + " in " + path}
}

// codexTrustState is hooks.state.<key>.trusted_hash of Codex's config.toml by key.
func codexTrustState(path string) (map[string]string, error) {
	doc, err := readTOML(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	h, _ := doc["hooks"].(map[string]any)
	state, _ := h["state"].(map[string]any)
	for key, v := range state {
		entry, _ := v.(map[string]any)
		if hash, ok := entry["trusted_hash"].(string); ok {
			out[key] = hash
		}
	}
	return out, nil
}

// readTOML parses a TOML file; a missing one is empty.
func readTOML(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	return doc, nil
}

// cliHookFile names a CLI's hooks file and what intentq's hooks in it must look like.
type cliHookFile struct {
	name, fix, path string
	// cli names the program in messages; events are intentq's hooks in its event names, each
	// running `starter hook <arg>` with flag; withoutFlag says what a hook without it would do.
	cli         string
	events      []hooks.ClaudeEvent
	flag        string
	withoutFlag string
}

// cliHooks reads f's JSON file and checks that every event runs intentq's hook with the CLI's
// flag. It returns the document, or the result to report: a missing file or hook is a warning,
// unreadable JSON or a hook without the flag a failure.
func cliHooks(f cliHookFile) (map[string]any, *Result) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &Result{Name: f.name, Status: StatusWarn, Detail: "not installed yet: " + f.path + " does not exist", Hint: f.fix + " installs them"}
	}
	if err != nil {
		return nil, &Result{Name: f.name, Detail: err.Error()}
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, &Result{Name: f.name, Detail: fmt.Sprintf("%s: %v", f.path, err), Hint: "fix the JSON (" + f.cli + " reads no hook from it either)"}
	}
	settings, _ := doc["hooks"].(map[string]any)
	var missing, noFlag []string
	for _, e := range f.events {
		groups, _ := settings[e.Name].([]any)
		group := hooks.Group(groups, e.Arg)
		if group == nil {
			missing = append(missing, e.Name)
			continue
		}
		list, _ := group["hooks"].([]any)
		for _, h := range list {
			entry, _ := h.(map[string]any)
			if cmd, _ := entry["command"].(string); hooks.IsIntentqHook(cmd) && !strings.Contains(cmd, f.flag) {
				noFlag = append(noFlag, e.Name)
			}
		}
	}
	if len(noFlag) > 0 {
		return nil, &Result{Name: f.name, Detail: fmt.Sprintf("%s: the hooks of %s run without %s: %s",
			f.path, strings.Join(noFlag, ", "), f.flag, f.withoutFlag), Hint: f.fix + " adds it"}
	}
	if len(missing) > 0 {
		return nil, &Result{Name: f.name, Status: StatusWarn, Detail: fmt.Sprintf("not installed yet: %s lacks %s", f.path, strings.Join(missing, ", ")), Hint: f.fix + " installs them"}
	}
	byEvent := map[string][]any{}
	for name, groups := range settings {
		byEvent[name], _ = groups.([]any)
	}
	if bad := unrunnableHooks(byEvent, f.events); len(bad) > 0 {
		return nil, &Result{Name: f.name, Detail: fmt.Sprintf("the hooks in %s cannot run: %s", f.path, strings.Join(bad, "; ")),
			Hint: "make build puts worker, starter and intentq-hook in bin/; then " + f.fix + " points the hooks at them"}
	}
	return doc, nil
}

func eventNames(events []hooks.ClaudeEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Name)
	}
	return out
}
