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

// CodexTrustsShaped are the trusts of the hooks whose command has exactly the shape setup writes
// for their event (CodexHookCommand with one absolute program named starter or intentq-hook),
// whichever install wrote it, and the look-alikes beside them (a shell line that ends in `starter
// hook stop`, a program of another name): doctor checks the trust of the first and names the
// others, never asking the person to trust them.
func CodexTrustsShaped(path string, doc map[string]any) (trusts []CodexTrust, unknown []string, foreign []CodexTrust) {
	return codexTrusts(path, doc, func(event, cmd string) bool {
		program, rest := CommandProgram(cmd)
		if !filepath.IsAbs(program) || filepath.Base(program) != Binary && filepath.Base(program) != "starter" {
			return false
		}
		// The program as one word, quoted or not (older setups quoted every path), then exactly
		// the arguments setup writes.
		if word := strings.TrimSuffix(cmd, rest); word != ShellWord(program) && word != "'"+strings.ReplaceAll(program, "'", `'\''`)+"'" {
			return false
		}
		i := slices.IndexFunc(CodexEvents, func(e ClaudeEvent) bool { return e.Name == event })
		return i >= 0 && rest == " hook "+CodexEvents[i].Arg+" "+CodexFlag
	})
}

// CodexTrustsOf are the trusts `starter setup --cli codex` records (issue 61): only for the hooks
// whose command is exactly the one it writes for their event with program (CodexHookCommand),
// never for another hook whatever its command contains (`sh -c '...; starter hook stop'`,
// another program's `... hook stop --cli codex`, intentq's command under another event). unknown
// names those of them whose hash cannot be computed here; foreign are the other hooks that look
// like intentq's (Event and Command set, no Hash): setup did not write them and trusts none.
func CodexTrustsOf(path string, doc map[string]any, program string) (trusts []CodexTrust, unknown []string, foreign []CodexTrust) {
	return codexTrusts(path, doc, func(event, cmd string) bool {
		i := slices.IndexFunc(CodexEvents, func(e ClaudeEvent) bool { return e.Name == event })
		return i >= 0 && cmd == CodexHookCommand(program, CodexEvents[i].Arg)
	})
}

// CodexHookCommand is the command line `starter setup --cli codex` writes for intentq's hook of
// event arg, run by program (intentq-hook, else the starter): the program as one shell word,
// then `hook <arg> --cli codex`.
func CodexHookCommand(program, arg string) string {
	return ShellWord(program) + " hook " + arg + " " + CodexFlag
}

// ShellWord is s as one word of a shell command line, as setup writes a hook's program: as it is
// when it holds nothing a shell reads, else in single quotes (CommandProgram reads it back).
func ShellWord(s string) string {
	if !strings.ContainsAny(s, " '\"$`\\!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// codexTrusts walks the command hooks of a hooks.json document that look like intentq's
// (looksLikeIntentq): the trusts of those ours(event, command) accepts, the commands of those
// whose hash cannot be computed, and the others.
func codexTrusts(path string, doc map[string]any, ours func(event, cmd string) bool) (trusts []CodexTrust, unknown []string, foreign []CodexTrust) {
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
				key := fmt.Sprintf("%s:%s:%d:%d", path, SnakeCase(event), gi, hi)
				switch {
				case !looksLikeIntentq(cmd):
					continue // not ours to trust
				case !ours(event, cmd):
					foreign = append(foreign, CodexTrust{Key: key, Event: event, Command: cmd})
					continue
				}
				hash, ok := CodexHookHash(event, group, entry)
				if !ok {
					unknown = append(unknown, cmd)
					continue
				}
				trusts = append(trusts, CodexTrust{Key: key, Hash: hash, Event: event, Command: cmd})
			}
		}
	}
	return trusts, unknown, foreign
}

// looksLikeIntentq: a command that runs `hook <event>` as words (IsIntentqHook) or holds it
// anywhere (inside a quoted `sh -c '... hook stop'`).
func looksLikeIntentq(cmd string) bool {
	return IsIntentqHook(cmd) || slices.ContainsFunc(Events(), func(e string) bool { return strings.Contains(cmd, "hook "+e) })
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
