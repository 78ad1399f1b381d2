package hooks

// The trust Codex records for a hook (issue 25), shared by `starter setup --cli codex`, which
// records it, and doctor, which checks it.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// CodexHome is Codex's folder: dir, else $CODEX_HOME, else ~/.codex; with its links resolved,
// as Codex names the files in it (a hook's trust is keyed by the path of its hooks.json).
func CodexHome(dir string) (string, error) {
	dir, err := cliHome(dir, "CODEX_HOME", ".codex")
	if err != nil {
		return "", err
	}
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	return dir, nil
}

// CodexMCPEnv are the variables Codex must hand intentq's MCP server (mcp_servers.intentq.env_vars,
// which setup --cli codex writes). Codex 0.169.0 starts an MCP server with a default list of its
// own environment's variables only (no INTENTQ_* among them, observed): without these the server knew
// neither its agent (INTENTQ_AGENT_ID, or the pane's @agent_id through TMUX and TMUX_PANE) nor a
// config file named by INTENTQ_CONFIG, and acted for the default session with the default config
// (seen: "intentq is not reachable ... 127.0.0.1:7233").
var CodexMCPEnv = []string{"INTENTQ_AGENT_ID", "INTENTQ_CONFIG", "TMUX", "TMUX_PANE"}

// IsIntentqHook: a command that runs `... hook <event>` of intentq's starter.
func IsIntentqHook(cmd string) bool {
	fields := strings.Fields(cmd)
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "hook" && slices.Contains(Events(), fields[i+1]) {
			return true
		}
	}
	return false
}

// CommandProgram splits a hook's command line into the program it runs, unquoted as the starter's
// setup quotes it (shellQuote: single quotes), and the rest of the line after it (" hook stop").
func CommandProgram(cmd string) (program, rest string) {
	cmd = strings.TrimLeft(cmd, " \t")
	if !strings.HasPrefix(cmd, "'") {
		end := strings.IndexAny(cmd, " \t")
		if end < 0 {
			return cmd, ""
		}
		return cmd[:end], cmd[end:]
	}
	var b strings.Builder
	for i := 1; i < len(cmd); i++ {
		switch {
		case strings.HasPrefix(cmd[i:], `'\''`):
			b.WriteByte('\'')
			i += 3
		case cmd[i] == '\'':
			return b.String(), cmd[i+1:]
		default:
			b.WriteByte(cmd[i])
		}
	}
	return b.String(), ""
}

// CodexTrust is one hook's trust as Codex records it in config.toml:
// hooks.state."<Key>".trusted_hash = "<Hash>".
type CodexTrust struct {
	Key, Hash string
	// Event is the hook's event (PreToolUse), Command its command line.
	Event, Command string
}

// CodexTrusts are the trusts of intentq's hooks in a hooks.json document at path; unknown names
// the commands whose hash cannot be computed here (settings this does not know).
func CodexTrusts(path string, doc map[string]any) (trusts []CodexTrust, unknown []string) {
	hooks, _ := doc["hooks"].(map[string]any)
	events := make([]string, 0, len(hooks))
	for name := range hooks {
		events = append(events, name)
	}
	slices.Sort(events)
	for _, event := range events {
		groups, _ := hooks[event].([]any)
		for gi, g := range groups {
			group, _ := g.(map[string]any)
			list, _ := group["hooks"].([]any)
			for hi, e := range list {
				entry, _ := e.(map[string]any)
				cmd, _ := entry["command"].(string)
				if !IsIntentqHook(cmd) {
					continue // not ours to trust
				}
				hash, ok := CodexHookHash(event, group, entry)
				if !ok {
					unknown = append(unknown, cmd)
					continue
				}
				trusts = append(trusts, CodexTrust{Key: fmt.Sprintf("%s:%s:%d:%d", path, SnakeCase(event), gi, hi), Hash: hash, Event: event, Command: cmd})
			}
		}
	}
	return trusts, unknown
}

// CodexHookHash is the trusted_hash Codex (0.169.0; codex-rs hooks discovery, command_hook_hash
// and config fingerprint version_for_toml) computes for one command hook: SHA-256 of the compact
// JSON, keys sorted, of {event_name: the event's snake-case label, matcher (not for
// UserPromptSubmit and Stop; left out when unset), hooks: [the handler normalized: type, command,
// timeout (default 600, at least 1), async (default false), statusMessage when set]}. Checked
// against the hashes the real 0.169.0 wrote when the person trusted the hooks. ok is false for a
// handler with settings this does not know.
func CodexHookHash(event string, group, entry map[string]any) (string, bool) {
	for k := range entry {
		if !slices.Contains([]string{"type", "command", "timeout", "async", "statusMessage"}, k) {
			return "", false
		}
	}
	for k := range group {
		if k != "hooks" && k != "matcher" {
			return "", false
		}
	}
	if entry["type"] != "command" {
		return "", false
	}
	timeout := int64(600)
	switch v := entry["timeout"].(type) {
	case nil:
	case float64: // as read from JSON
		if v != float64(int64(v)) {
			return "", false
		}
		timeout = max(int64(v), 1)
	case int:
		timeout = max(int64(v), 1)
	default:
		return "", false
	}
	async, _ := entry["async"].(bool)
	handler := map[string]any{"type": "command", "command": entry["command"], "timeout": timeout, "async": async}
	if m, ok := entry["statusMessage"].(string); ok {
		handler["statusMessage"] = m
	}
	identity := map[string]any{"event_name": SnakeCase(event), "hooks": []any{handler}}
	if m, ok := group["matcher"].(string); ok && event != "UserPromptSubmit" && event != "Stop" {
		identity["matcher"] = m
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // serde_json escapes only what JSON must
	if err := enc.Encode(identity); err != nil {
		return "", false
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), true
}

// SnakeCase is Codex's label of a hook event: PreToolUse -> pre_tool_use.
func SnakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
