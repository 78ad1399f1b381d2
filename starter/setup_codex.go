package main

// setup --cli codex (issue 25): intentq's hooks into Codex's hooks.json, its MCP server and the
// hooks' trust into Codex's config.toml, merged with what is there, idempotent.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/intentq/intentq/internal/base/private"
	intentqhooks "github.com/intentq/intentq/internal/doors/hooks"
)

// codexHome is Codex's folder (hooks.CodexHome).
func codexHome(dir string) (string, error) { return intentqhooks.CodexHome(dir) }

// setupCodex installs intentq's hooks into home/hooks.json (mergeCodexHooks: every other hook
// stays), and registers `starter mcp` as the MCP server "intentq" and records the trust of
// intentq's hooks in home/config.toml, as Codex's own review would
// (hooks.state.<key>.trusted_hash): Codex then runs them without asking at its next start. Trust
// is recorded only for the exact commands setup writes (issue 61): a hook that looks like
// intentq's but is not one of them stays for Codex to review, and setup says so.
func setupCodex(out io.Writer, home, starter string, dryRun bool) error {
	hooksPath := filepath.Join(home, "hooks.json")
	var hooksDoc map[string]any
	err := updateJSONFile(out, hooksPath, "Codex hooks", dryRun, func(doc map[string]any) (bool, error) {
		hooksDoc = doc
		return mergeCodexHooks(doc, starter)
	})
	if err != nil {
		return err
	}
	trusts, untrusted, foreign := intentqhooks.CodexTrustsOf(hooksPath, hooksDoc, hookProgram(starter))
	if err := updateCodexConfig(out, filepath.Join(home, "config.toml"), starter, trusts, dryRun); err != nil {
		return err
	}
	for _, u := range untrusted {
		fmt.Fprintf(out, "the hook %q has settings setup does not know how Codex hashes: Codex asks you to review it at its next start\n", u)
	}
	for _, f := range foreign {
		fmt.Fprintf(out, "setup found a %s hook in %s that it did not write: %q. It is not intentq's and not trusted: Codex asks you to review it\n"+
			"at its next start. Remove it unless you wrote it (%s).\n", f.Event, hooksPath, f.Command, codexHookFor(starter, f.Event))
	}
	if dryRun {
		return nil
	}
	fmt.Fprint(out, "Codex runs intentq's hooks without asking: their trust is recorded in config.toml as its own review\n"+
		"records it (a hook changed by hand since is shown for review at Codex's next start: trust it, or\n"+
		"run setup --cli codex again). Start Codex with --no-daemon (starter run-agent does): a shared Codex\n"+
		"daemon runs every TUI's hooks and MCP servers with the first TUI's environment.\n")
	return nil
}

// mergeCodexHooks adds intentq's hooks to a hooks.json document: for each of Codex's events the
// command setup writes (hooks.CodexHookCommand with the hook program beside starter). A hook that
// runs it stays as it is; one an older setup wrote is brought to it (a starter that moved, no
// --cli codex, Codex's PermissionRequest at `hook notification`, with its timeout). Every other
// hook stays as it is, a look-alike of intentq's too (`sh -c '...; starter hook stop'`, another
// program's `hook stop`): intentq's own is added beside it, and only intentq's is trusted.
func mergeCodexHooks(doc map[string]any, starter string) (bool, error) {
	hooks, err := objectAt(doc, "hooks")
	if err != nil {
		return false, err
	}
	changed := false
	for _, h := range intentqhooks.CodexEvents {
		want := intentqhooks.CodexHookCommand(hookProgram(starter), h.Arg)
		groups, _ := hooks[h.Name].([]any)
		found := false
		for _, g := range groups {
			group, _ := g.(map[string]any)
			list, _ := group["hooks"].([]any)
			for _, e := range list {
				entry, _ := e.(map[string]any)
				cmd, _ := entry["command"].(string)
				upgraded, repointed := olderCodexHook(cmd, starter, h.Arg)
				if upgraded != want {
					continue // not a hook setup wrote: left as it is
				}
				found = true
				if cmd != want {
					entry["command"] = want
					changed = true
				}
				if repointed {
					entry["timeout"] = intentqhooks.TimeoutFor(h.Arg)
				}
			}
		}
		if !found {
			entry := map[string]any{"type": "command", "command": want, "timeout": intentqhooks.TimeoutFor(h.Arg)}
			hooks[h.Name] = append(groups, map[string]any{"hooks": []any{entry}})
			changed = true
		}
	}
	doc["hooks"] = hooks
	return changed, nil
}

// olderCodexHook is cmd as setup writes it now for Codex's hook of arg, when cmd is a hook a setup
// wrote: the same program (or one that moved: movedProgram) running `hook <arg>`, with --cli codex
// or without; for PermissionRequest, `hook notification` as an older setup wrote it (repointed).
// Any other command comes back as it is.
func olderCodexHook(cmd, starter, arg string) (upgraded string, repointed bool) {
	prog, rest := intentqhooks.CommandProgram(cmd)
	prog = movedProgram(prog, starter)
	flag := " " + intentqhooks.CodexFlag
	switch {
	case rest == " hook "+arg+flag, rest == " hook "+arg:
		return intentqhooks.CodexHookCommand(prog, arg), false
	case arg == intentqhooks.EventPermissionRequest && (rest == " hook "+intentqhooks.EventNotification+flag || rest == " hook "+intentqhooks.EventNotification):
		return intentqhooks.CodexHookCommand(prog, arg), true
	}
	return cmd, false
}

// codexHookFor says which command setup writes for Codex's event (a hooks.json event name).
func codexHookFor(starter, event string) string {
	for _, h := range intentqhooks.CodexEvents {
		if h.Name == event {
			return fmt.Sprintf("intentq's own is %q", intentqhooks.CodexHookCommand(hookProgram(starter), h.Arg))
		}
	}
	return "intentq writes no " + event + " hook"
}

// updateCodexConfig sets, in Codex's config.toml, mcp_servers.intentq (command: starter, args:
// ["mcp"], env_vars: the person's and hooks.CodexMCPEnv; its other keys stay) and each trust's hooks.state.<key>.trusted_hash, editing the text
// so that everything else, comments too, stays as it is. The result is checked by parsing it: it
// must hold the new values and otherwise what the file held, or nothing is written.
func updateCodexConfig(out io.Writer, path, starter string, trusts []intentqhooks.CodexTrust, dryRun bool) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(old, &doc); err != nil {
		return fmt.Errorf("%s is not TOML (%v): fix it first; nothing was changed", path, err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	type setting struct {
		table []string // the table's key path
		key   string
		value any    // as parsed
		toml  string // as written
	}
	var settings []setting
	mcpArgs := []any{"mcp"}
	envVars, envTOML := codexMCPEnvVars(doc)
	settings = append(settings,
		setting{[]string{"mcp_servers", "intentq"}, "command", starter, tomlString(starter)},
		setting{[]string{"mcp_servers", "intentq"}, "args", mcpArgs, `["mcp"]`},
		setting{[]string{"mcp_servers", "intentq"}, "env_vars", envVars, envTOML})
	for _, tr := range trusts {
		settings = append(settings, setting{[]string{"hooks", "state", tr.Key}, "trusted_hash", tr.Hash, tomlString(tr.Hash)})
	}
	text := string(old)
	want := deepCopy(doc).(map[string]any)
	changed := false
	for _, s := range settings {
		if cur, ok := lookup(doc, append(append([]string{}, s.table...), s.key)); ok && sameValue(cur, s.value) {
			continue
		}
		text, err = setTOMLKey(text, s.table, s.key, s.toml)
		if err != nil {
			return fmt.Errorf("%s: %w; nothing was changed", path, err)
		}
		setPath(want, s.table, s.key, s.value)
		changed = true
	}
	if !changed {
		fmt.Fprintf(out, "the intentq MCP server and the hooks' trust already in %s\n", path)
		return nil
	}
	var got map[string]any
	if err := toml.Unmarshal([]byte(text), &got); err != nil || !sameValue(got, want) {
		return fmt.Errorf("%s: setup could not merge its settings into this file (%v): add them by hand:\n%s; nothing was changed", path, err, codexConfigLines(starter, trusts))
	}
	if dryRun {
		fmt.Fprintf(out, "would change %s:\n%s", path, lineDiff(string(old), text))
		return nil
	}
	if len(old) > 0 {
		backup := fmt.Sprintf("%s.bak-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.WriteFile(backup, old, 0o600); err != nil {
			return fmt.Errorf("back up %s: %w", path, err)
		}
		fmt.Fprintf(out, "backed up %s to %s\n", path, backup)
	}
	if err := private.WriteFile(path, []byte(text)); err != nil {
		return err
	}
	fmt.Fprintf(out, "the intentq MCP server and the hooks' trust written to %s\n", path)
	return nil
}

// codexMCPEnvVars is mcp_servers.intentq.env_vars as setup wants it: what the person listed, plus
// hooks.CodexMCPEnv; parsed and as TOML.
func codexMCPEnvVars(doc map[string]any) ([]any, string) {
	cur, _ := lookup(doc, []string{"mcp_servers", "intentq", "env_vars"})
	list, _ := cur.([]any)
	have := map[string]bool{}
	var out []any
	var parts []string
	for _, v := range list {
		switch v := v.(type) {
		case string:
			have[v] = true
			parts = append(parts, tomlString(v))
		case map[string]any:
			name, _ := v["name"].(string)
			have[name] = true
			var fields []string
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if str, ok := v[k].(string); ok {
					fields = append(fields, tomlKey(k)+" = "+tomlString(str))
				}
			}
			parts = append(parts, "{ "+strings.Join(fields, ", ")+" }")
		default:
			continue // left out: the parse check then refuses to write, and says what to add
		}
		out = append(out, v)
	}
	for _, name := range intentqhooks.CodexMCPEnv {
		if !have[name] {
			out = append(out, name)
			parts = append(parts, tomlString(name))
		}
	}
	return out, "[" + strings.Join(parts, ", ") + "]"
}

// codexConfigLines are the settings as lines of TOML, for the person to add by hand.
func codexConfigLines(starter string, trusts []intentqhooks.CodexTrust) string {
	var b strings.Builder
	_, env := codexMCPEnvVars(nil)
	fmt.Fprintf(&b, "[mcp_servers.intentq]\ncommand = %s\nargs = [\"mcp\"]\nenv_vars = %s\n", tomlString(starter), env)
	for _, tr := range trusts {
		fmt.Fprintf(&b, "[hooks.state.%s]\ntrusted_hash = %s\n", tomlString(tr.Key), tomlString(tr.Hash))
	}
	return b.String()
}

// setTOMLKey sets key = value in the table at path: on the key's line where the table's header
// has it, else right after the header, else in a new table at the end of the file.
func setTOMLKey(text string, path []string, key, value string) (string, error) {
	header := tomlHeader(path)
	lines := strings.SplitAfter(text, "\n")
	start := -1
	for i, l := range lines {
		if sameHeader(strings.TrimSpace(l), path) {
			start = i
			break
		}
	}
	line := key + " = " + value + "\n"
	if start < 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if text != "" {
			text += "\n"
		}
		return text + header + "\n" + line, nil
	}
	for i := start + 1; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if strings.HasPrefix(t, "[") {
			break
		}
		if k, _, ok := strings.Cut(t, "="); ok && strings.TrimSpace(k) == key {
			lines[i] = line
			return strings.Join(lines, ""), nil
		}
	}
	if !strings.HasSuffix(lines[start], "\n") {
		lines[start] += "\n"
	}
	lines = slices.Insert(lines, start+1, line)
	return strings.Join(lines, ""), nil
}

// tomlHeader is a table's header: [a.b."c:d"].
func tomlHeader(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = tomlKey(p)
	}
	return "[" + strings.Join(parts, ".") + "]"
}

// sameHeader: a line that is the header of the table at path, however its keys are quoted.
func sameHeader(line string, path []string) bool {
	if !strings.HasPrefix(line, "[") || strings.HasPrefix(line, "[[") {
		return false
	}
	var doc map[string]any
	if err := toml.Unmarshal([]byte(line+"\n"), &doc); err != nil {
		return false
	}
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok || len(m) != 1 {
			return false
		}
		if cur, ok = m[p]; !ok {
			return false
		}
	}
	m, ok := cur.(map[string]any)
	return ok && len(m) == 0
}

// tomlKey is a bare key when it may be one, else a quoted one.
func tomlKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return tomlString(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// tomlString is a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// lookup is the value at path in a parsed document.
func lookup(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// setPath sets table.key in a parsed document, making the tables on the way.
func setPath(doc map[string]any, table []string, key string, value any) {
	cur := doc
	for _, p := range table {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[key] = value
}

// deepCopy copies a parsed document.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = deepCopy(x)
		}
		return s
	}
	return v
}

// sameValue compares parsed values (through JSON: numbers and dates as they print).
func sameValue(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
