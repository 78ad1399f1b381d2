// Package toolpolicy decides which agent tools a headless run may use (SPEC P5, P6).
//
// A policy allows and denies tools at three configured scopes, global, channel (cli, telegram,
// web) and session, on top of a built-in default per channel. Resolve folds them into an
// Effective policy for one run: for each tool named in any of those scopes, the most specific
// scope that names it decides (session, then channel, then global, then the default), and
// within one scope a deny beats an allow. The Effective policy renders the agent CLI's flags
// (Flags), checks a tool a run asks for (Check) and lists the non-idempotent tools it allows
// (NonIdempotent), which make a run unsafe to retry automatically.
//
// Tools are written in Claude Code's permission syntax: a tool name ("Read", "Write",
// "mcp__github__create_issue"), a tool with a specifier ("Read(./docs/**)"), or a Bash command
// rule: "Bash(git status)" is that exact command and "Bash(git log:*)" any command whose words
// start with "git log". "*" stands for every tool: allowing it allows everything not denied,
// denying it turns an allow-everything default (cli) into an allow list. A rule may not contain
// a comma, which the CLI flags use as a separator.
package toolpolicy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Channels a prompt can come from.
const (
	ChannelCLI      = "cli"
	ChannelTelegram = "telegram"
	ChannelWeb      = "web"
)

// AllTools is the rule that stands for every tool.
const AllTools = "*"

// Scope names, as they appear in Effective.Source and DeniedError.Scope: "default:CHANNEL",
// "global", "channel:CHANNEL" and "session:ID".
const (
	ScopeDefault = "default"
	ScopeGlobal  = "global"
	ScopeChannel = "channel"
	ScopeSession = "session"
)

// ErrInvalidRule is wrapped by the errors for malformed rules in a policy.
var ErrInvalidRule = errors.New("invalid tool rule")

// Rule lists the tools one scope allows and denies.
type Rule struct {
	// Allow lists tools the scope allows.
	Allow []string `mapstructure:"allow" json:"allow,omitempty"`
	// Deny lists tools the scope denies; a tool in both lists of one scope is denied.
	Deny []string `mapstructure:"deny" json:"deny,omitempty"`
	// Dir is the work folder of headless runs (global or session scope; the session's wins):
	// the CLI runs there, and a run reads and writes no file outside it unless an allow rule
	// names the path (Read(//abs/path/**), Read(~/notes/**)). Absolute or ~/...; empty:
	// data_dir/headless/<session>.
	Dir string `mapstructure:"dir" json:"dir,omitempty"`
	// Env names more environment variables a run may see (NAME, or PREFIX_* for all that
	// start so), on top of the few the CLI needs (PATH, HOME, LANG, TERM, its API variables);
	// the scopes that apply add up. INTENTQ_* variables never reach a run.
	Env []string `mapstructure:"env" json:"env,omitempty"`
}

// Policy is the configured tool policy: rules for every run, per channel and per session.
type Policy struct {
	// Global applies to every run.
	Global Rule `mapstructure:"global" json:"global"`
	// Channels holds rules per channel name (cli, telegram, web).
	Channels map[string]Rule `mapstructure:"channels" json:"channels,omitempty"`
	// Sessions holds rules per session id.
	Sessions map[string]Rule `mapstructure:"sessions" json:"sessions,omitempty"`
}

// Effective is the policy for one run, resolved from the scopes that apply to it. It is plain
// data, safe to pass through workflow history.
type Effective struct {
	// Channel and Session are what the policy was resolved for.
	Channel string `json:"channel"`
	Session string `json:"session,omitempty"`
	// Allowed and Denied are the tools the deciding scopes allowed and denied, sorted, in
	// canonical form (AllTools is never listed: see AllowAll).
	Allowed []string `json:"allowed,omitempty"`
	Denied  []string `json:"denied,omitempty"`
	// AllowAll is set when the scope that decides AllTools allows it: every tool not denied
	// is allowed.
	AllowAll bool `json:"allow_all"`
	// Source maps each tool in Allowed or Denied, and AllTools when a scope named it, to the
	// scope that decided it.
	Source map[string]string `json:"source,omitempty"`
}

// readOnlyBash are the shell commands the telegram default allows: they read the working tree
// and the repository, and change nothing (Check also refuses a few options that would make them
// write or run other programs, such as rg --pre and git diff --output).
var readOnlyBash = []string{
	"Bash(ls:*)", "Bash(cat:*)", "Bash(head:*)", "Bash(tail:*)", "Bash(wc:*)", "Bash(pwd)",
	"Bash(grep:*)", "Bash(rg:*)",
	"Bash(git status:*)", "Bash(git log:*)", "Bash(git diff:*)", "Bash(git show:*)",
}

// safeBash are the shell commands the web default allows on top of readOnlyBash: they change
// files in the working tree only. Commands that run code from the repository (make, go test,
// npm test, git commit with its hooks) are left out on purpose, because web also allows Write:
// together they would run anything.
var safeBash = []string{"Bash(mkdir:*)", "Bash(touch:*)", "Bash(git add:*)"}

// Default returns the built-in rule for a channel, and whether the channel is known:
//   - cli allows everything (AllTools);
//   - telegram is read-only: Read, Grep, Glob and read-only shell commands; it denies Write,
//     Edit, MultiEdit, NotebookEdit and git push;
//   - web allows Read, Grep, Glob, Write, Edit and safe shell commands (the read-only ones,
//     mkdir, touch, git add); it denies git push, rm, curl and wget.
func Default(channel string) (Rule, bool) {
	switch channel {
	case ChannelCLI:
		return Rule{Allow: []string{AllTools}}, true
	case ChannelTelegram:
		return Rule{
			Allow: concat([]string{"Read", "Grep", "Glob"}, readOnlyBash),
			Deny:  []string{"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash(git push:*)"},
		}, true
	case ChannelWeb:
		return Rule{
			Allow: concat([]string{"Read", "Grep", "Glob", "Write", "Edit"}, readOnlyBash, safeBash),
			Deny:  []string{"Bash(git push:*)", "Bash(rm:*)", "Bash(curl:*)", "Bash(wget:*)"},
		}, true
	}
	return Rule{}, false
}

// concat returns a new slice holding the elements of all lists in order.
func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// normalizeChannel returns the channel name as the policy keys it: trimmed, lower case.
func normalizeChannel(channel string) string {
	return strings.ToLower(strings.TrimSpace(channel))
}

// unknownChannel is the error for a channel name that is not cli, telegram or web.
func unknownChannel(channel string) error {
	return fmt.Errorf("toolpolicy: unknown channel %q (want %s, %s or %s)",
		channel, ChannelCLI, ChannelTelegram, ChannelWeb)
}

// layer is one scope's rule with the name it goes by in Source.
type layer struct {
	scope string
	rule  Rule
}

// Resolve returns the effective policy for a run in a session that came from a channel. The
// session may be empty (no session scope). It fails for a channel other than cli, telegram and
// web, and for a malformed rule in a scope that applies.
func (p Policy) Resolve(channel, session string) (Effective, error) {
	ch := normalizeChannel(channel)
	def, ok := Default(ch)
	if !ok {
		return Effective{}, unknownChannel(channel)
	}
	layers := []layer{{ScopeDefault + ":" + ch, def}, {ScopeGlobal, p.Global}}
	for name, r := range p.Channels {
		if normalizeChannel(name) == ch {
			layers = append(layers, layer{ScopeChannel + ":" + ch, r})
		}
	}
	if session != "" {
		if r, ok := p.Sessions[session]; ok {
			layers = append(layers, layer{ScopeSession + ":" + session, r})
		}
	}

	type decision struct {
		allow bool
		scope string
	}
	decided := map[string]decision{}
	for _, l := range layers {
		for _, list := range []struct {
			verb  string
			tools []string
			allow bool
		}{{"allow", l.rule.Allow, true}, {"deny", l.rule.Deny, false}} {
			for _, t := range list.tools {
				c, err := canonicalRule(t)
				if err != nil {
					return Effective{}, fmt.Errorf("toolpolicy: %s %s: %w", l.scope, list.verb, err)
				}
				decided[c] = decision{allow: list.allow, scope: l.scope}
			}
		}
	}

	e := Effective{Channel: ch, Session: session, Source: make(map[string]string, len(decided))}
	for tool, d := range decided {
		e.Source[tool] = d.scope
		switch {
		case tool == AllTools:
			e.AllowAll = d.allow
		case d.allow:
			e.Allowed = append(e.Allowed, tool)
		default:
			e.Denied = append(e.Denied, tool)
		}
	}
	sort.Strings(e.Allowed)
	sort.Strings(e.Denied)
	return e, nil
}

// Validate checks the whole policy: channel keys name known channels, session keys are not
// empty, and every rule is well formed. Resolve only checks the scopes it uses.
func (p Policy) Validate() error {
	var errs []error
	check := func(scope string, r Rule) {
		for _, t := range r.Allow {
			if _, err := canonicalRule(t); err != nil {
				errs = append(errs, fmt.Errorf("toolpolicy: %s allow: %w", scope, err))
			}
		}
		for _, t := range r.Deny {
			if _, err := canonicalRule(t); err != nil {
				errs = append(errs, fmt.Errorf("toolpolicy: %s deny: %w", scope, err))
			}
		}
	}
	runs := func(scope string, r Rule, dirAllowed bool) {
		switch d := strings.TrimSpace(r.Dir); {
		case d == "":
		case !dirAllowed:
			errs = append(errs, fmt.Errorf("toolpolicy: %s dir: a work folder belongs to a session (or global), not to a channel", scope))
		case !strings.HasPrefix(d, "/") && d != "~" && !strings.HasPrefix(d, "~/"):
			errs = append(errs, fmt.Errorf("toolpolicy: %s dir: %q is not an absolute path (or ~/...)", scope, r.Dir))
		}
		for _, name := range r.Env {
			if err := checkEnvName(name); err != nil {
				errs = append(errs, fmt.Errorf("toolpolicy: %s env: %w", scope, err))
			}
		}
	}
	check(ScopeGlobal, p.Global)
	runs(ScopeGlobal, p.Global, true)
	for _, name := range sortedKeys(p.Channels) {
		if _, ok := Default(normalizeChannel(name)); !ok {
			errs = append(errs, unknownChannel(name))
			continue
		}
		check(ScopeChannel+":"+normalizeChannel(name), p.Channels[name])
		runs(ScopeChannel+":"+normalizeChannel(name), p.Channels[name], false)
	}
	for _, id := range sortedKeys(p.Sessions) {
		if strings.TrimSpace(id) == "" {
			errs = append(errs, errors.New("toolpolicy: empty session id"))
			continue
		}
		check(ScopeSession+":"+id, p.Sessions[id])
		runs(ScopeSession+":"+id, p.Sessions[id], true)
	}
	return errors.Join(errs...)
}

// Dir is the work folder configured for a session's headless runs: the session scope's dir,
// else the global one, else empty (the caller's default). It may start with ~/.
func (p Policy) Dir(session string) string {
	if d := strings.TrimSpace(p.Sessions[session].Dir); d != "" {
		return d
	}
	return strings.TrimSpace(p.Global.Dir)
}

// Env lists the extra environment variables of a run in a session that came from a channel:
// those of the global, channel and session scopes, in that order, without duplicates.
func (p Policy) Env(channel, session string) []string {
	ch := normalizeChannel(channel)
	lists := [][]string{p.Global.Env}
	for name, r := range p.Channels {
		if normalizeChannel(name) == ch {
			lists = append(lists, r.Env)
		}
	}
	if session != "" {
		lists = append(lists, p.Sessions[session].Env)
	}
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, name := range l {
			if name = strings.TrimSpace(name); name != "" && !seen[name] && checkEnvName(name) == nil {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

// checkEnvName accepts a variable name (letters, digits, _) or a prefix of names ending in *,
// except intentq's own INTENTQ_* variables.
func checkEnvName(name string) error {
	n := strings.TrimSuffix(strings.TrimSpace(name), "*")
	if n == "" {
		return fmt.Errorf("%q names no variable", name)
	}
	for i, c := range n {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%q is not a variable name (or PREFIX_*)", name)
		}
	}
	if strings.HasPrefix(strings.ToUpper(n), "INTENTQ") {
		return fmt.Errorf("%q: intentq's own variables never reach a run", name)
	}
	return nil
}

// sortedKeys returns the keys of m in order, so that errors come out the same every time.
func sortedKeys(m map[string]Rule) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// claudeTools are Claude Code's built-in tool names, so that a rule written in another case
// ("bash(ls:*)", "read") still means the tool.
var claudeTools = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{
		"Bash", "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Grep", "Glob",
		"LS", "WebFetch", "WebSearch", "Task", "TodoWrite", "BashOutput", "KillShell", "SlashCommand",
	} {
		m[strings.ToLower(name)] = name
	}
	return m
}()

// tool is a tool rule or request split into its name and specifier.
type tool struct {
	name   string
	arg    string
	hasArg bool
}

// parseTool splits "Name" or "Name(arg)"; it rejects empty names, names with spaces or
// parentheses, an unclosed "(", an empty specifier and control characters.
func parseTool(s string) (tool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return tool{}, fmt.Errorf("%w: empty tool name", ErrInvalidRule)
	}
	if !utf8.ValidString(s) {
		return tool{}, fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidRule, s)
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return tool{}, fmt.Errorf("%w: %q has a control character", ErrInvalidRule, s)
		}
	}
	name, arg, hasArg := s, "", false
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return tool{}, fmt.Errorf("%w: %q: missing closing parenthesis", ErrInvalidRule, s)
		}
		name, arg, hasArg = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:len(s)-1]), true
		if arg == "" {
			return tool{}, fmt.Errorf("%w: %q: empty specifier", ErrInvalidRule, s)
		}
	}
	if name == "" || strings.ContainsAny(name, " \t()") {
		return tool{}, fmt.Errorf("%w: %q: bad tool name", ErrInvalidRule, s)
	}
	if known, ok := claudeTools[strings.ToLower(name)]; ok {
		name = known
	}
	if name == "Bash" && hasArg {
		arg = canonicalCommand(arg)
	}
	return tool{name: name, arg: arg, hasArg: hasArg}, nil
}

// String renders the tool in canonical form.
func (t tool) String() string {
	if !t.hasArg {
		return t.name
	}
	return t.name + "(" + t.arg + ")"
}

// canonicalRule validates a rule and returns its canonical form: known tool names in their
// proper case, Bash commands with single spaces and the prefix form written "cmd:*".
func canonicalRule(s string) (string, error) {
	if strings.TrimSpace(s) == AllTools {
		return AllTools, nil
	}
	if strings.Contains(s, ",") {
		return "", fmt.Errorf("%w: %q: commas separate tools in CLI flags", ErrInvalidRule, s)
	}
	t, err := parseTool(s)
	if err != nil {
		return "", err
	}
	return t.String(), nil
}

// canonicalCommand collapses white space in a Bash rule's command and writes the prefix forms
// "cmd *" and "cmd :*" as "cmd:*".
func canonicalCommand(arg string) string {
	arg = strings.Join(strings.Fields(arg), " ")
	switch {
	case strings.HasSuffix(arg, " :*"):
		arg = strings.TrimSuffix(arg, " :*") + ":*"
	case strings.HasSuffix(arg, " *"):
		arg = strings.TrimSuffix(arg, " *") + ":*"
	}
	return arg
}
