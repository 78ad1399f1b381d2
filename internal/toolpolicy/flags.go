package toolpolicy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// CLI kinds Flags knows, as in the clis config section.
const (
	KindClaude  = "claude"
	KindCodex   = "codex"
	KindCopilot = "copilot"
	KindKimi    = "kimi"
)

// ErrUnenforceable is wrapped by FlagsFor's error when a CLI has no flags that could restrict
// its tools the way the policy asks.
var ErrUnenforceable = errors.New("CLI cannot enforce the tool policy")

// Flags renders the policy as command-line flags for an agent CLI of the given kind:
//
//   - claude (and any kind not listed here): "--allowedTools" and "--disallowedTools", each
//     followed by one comma-joined argument in Claude Code's syntax; an empty list is left
//     out, and AllowAll means no --allowedTools. Note that --allowedTools pre-approves tools
//     rather than limiting them: in print mode (-p) a tool it does not list is refused when it
//     needs permission, while read-only tools (Read, Grep, Glob) need none.
//   - copilot: "--allow-tool" and "--deny-tool" with Copilot CLI's permission kinds (Bash
//     commands become shell(...), Read/Grep/Glob read, Write/Edit/MultiEdit/NotebookEdit
//     write, WebFetch url, mcp__server__tool server(tool)); AllowAll adds --allow-all-tools.
//     Tools without a Copilot equivalent are left out. Copilot's kinds are coarser: when one
//     kind is both allowed and denied (Write allowed, Edit denied), Copilot denies it.
//   - codex: Codex has no per-tool flags, only sandboxes: "--sandbox workspace-write" when the
//     policy allows Write or Edit (or everything), else "--sandbox read-only". Both keep the
//     network off, which also stops git push; command-level rules are not expressed.
//   - kimi: nothing. Kimi Code CLI's print mode approves every tool and has no flags to
//     restrict them; use FlagsFor to refuse running a restrictive policy with it.
func (e Effective) Flags(kind string) []string {
	flags, err := e.FlagsFor(kind)
	if err != nil {
		if errors.Is(err, ErrUnenforceable) {
			return nil
		}
		return e.claudeFlags()
	}
	return flags
}

// FlagsFor is Flags that says when it cannot do its job: it fails for a kind it does not know,
// and with an error wrapping ErrUnenforceable for kimi when the policy restricts anything
// (not AllowAll, or some tool denied).
func (e Effective) FlagsFor(kind string) ([]string, error) {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case KindClaude:
		return e.claudeFlags(), nil
	case KindCopilot:
		return e.copilotFlags(), nil
	case KindCodex:
		return e.codexFlags(), nil
	case KindKimi:
		if !e.AllowAll || len(e.Denied) > 0 {
			return nil, fmt.Errorf("toolpolicy: %w: kimi has no flags to restrict tools, "+
				"but the policy for channel %q restricts them", ErrUnenforceable, e.Channel)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("toolpolicy: unknown CLI kind %q (want %s, %s, %s or %s)",
		kind, KindClaude, KindCodex, KindCopilot, KindKimi)
}

// claudeFlags renders --allowedTools and --disallowedTools.
func (e Effective) claudeFlags() []string {
	var out []string
	if !e.AllowAll && len(e.Allowed) > 0 {
		out = append(out, "--allowedTools", strings.Join(e.Allowed, ","))
	}
	if len(e.Denied) > 0 {
		out = append(out, "--disallowedTools", strings.Join(e.Denied, ","))
	}
	return out
}

// copilotFlags renders --allow-tool, --deny-tool and --allow-all-tools.
func (e Effective) copilotFlags() []string {
	var out []string
	if e.AllowAll {
		out = append(out, "--allow-all-tools")
	} else if allow := copilotRules(e.Allowed); len(allow) > 0 {
		out = append(out, "--allow-tool", strings.Join(allow, ","))
	}
	if deny := copilotRules(e.Denied); len(deny) > 0 {
		out = append(out, "--deny-tool", strings.Join(deny, ","))
	}
	return out
}

// copilotKinds maps Claude Code tool names to Copilot CLI permission kinds.
var copilotKinds = map[string]string{
	"Bash": "shell", "Read": "read", "Grep": "read", "Glob": "read", "LS": "read",
	"NotebookRead": "read", "Write": "write", "Edit": "write", "MultiEdit": "write",
	"NotebookEdit": "write", "WebFetch": "url",
}

// copilotRules translates rules to Copilot's syntax, sorted and without duplicates.
func copilotRules(rules []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, raw := range rules {
		t, err := parseTool(raw)
		if err != nil {
			continue
		}
		var r string
		if kind, ok := copilotKinds[t.name]; ok {
			switch {
			case !t.hasArg:
				r = kind
			case t.name == "Bash" || t.name == "Read" || t.name == "Write" || t.name == "Edit":
				r = kind + "(" + t.arg + ")"
			case t.name == "WebFetch":
				r = kind + "(" + strings.TrimPrefix(t.arg, "domain:") + ")"
			default: // Grep(pattern), Glob(pattern): no equivalent finer than the kind
				r = kind
			}
		} else if rest, ok := strings.CutPrefix(t.name, "mcp__"); ok && !t.hasArg {
			if server, name, ok := strings.Cut(rest, "__"); ok && name != "" && name != "*" {
				r = server + "(" + name + ")"
			} else {
				r = strings.TrimSuffix(strings.TrimSuffix(rest, "*"), "__")
			}
		} else {
			continue
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// codexFlags renders Codex's sandbox mode.
func (e Effective) codexFlags() []string {
	if e.Check("Write") == nil || e.Check("Edit") == nil {
		return []string{"--sandbox", "workspace-write"}
	}
	return []string{"--sandbox", "read-only"}
}

// nonIdempotentCommands are commands whose effect a retry would repeat: they publish.
var nonIdempotentCommands = []string{"git push", "npm publish", "docker push"}

// NonIdempotent lists the non-idempotent tools the policy allows: allow rules for git push,
// npm publish and docker push (anything starting "Bash(git push", "Bash(npm publish",
// "Bash(docker push"), and for each of those commands that a broader rule or AllowAll allows,
// its prefix rule, e.g. "Bash(git push:*)". The caller refuses automatic retries of a run
// when the list is not empty (SPEC P6), unless the prompt says it is safe to repeat.
func NonIdempotent(e Effective) []string {
	seen := map[string]bool{}
	var out []string
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, cmd := range nonIdempotentCommands {
		explicit := false
		for _, r := range e.Allowed {
			if rest, ok := strings.CutPrefix(r, "Bash("+cmd); ok && rest != "" && strings.IndexByte(" :)", rest[0]) >= 0 {
				add(r)
				explicit = true
			}
		}
		if !explicit && e.Check("Bash("+cmd+")") == nil {
			add("Bash(" + cmd + ":*)")
		}
	}
	sort.Strings(out)
	return out
}
