package toolpolicy

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrInvalidTool is wrapped by Check's error for a malformed tool request.
var ErrInvalidTool = errors.New("invalid tool request")

// DeniedError is Check's error for a tool the policy does not let a run use. A run that needs
// such a tool fails without retry, naming the policy (SPEC P5, P6).
type DeniedError struct {
	// Tool is the tool as requested, e.g. "Bash(git push origin main)".
	Tool string
	// Scope is the scope that decided: "session:ID", "channel:NAME", "global" or
	// "default:NAME" (see Effective.Source).
	Scope string
	// Rule is the deny rule that matched, e.g. "Bash(git push:*)"; empty when the tool was
	// refused because no allow rule covers it, or because it could not be checked.
	Rule string
	// Unchecked is set for a shell command that rules for commands cannot check: what in it
	// cannot be proven (a variable, $'…', brace expansion, a substitution, a line that does
	// not parse) or is hidden from them (a compound command, a redirection into a file). With
	// DenyRules set, the policy's deny rules for commands could not be checked; else no allow
	// rule for commands can cover it.
	Unchecked string
	// DenyRules: the command was refused because the policy has deny rules for commands that
	// it cannot be checked against (the deny rules fail closed).
	DenyRules bool
	// Option is the option, as written, that kept a prefix rule from allowing the command: one
	// that follows links, writes files or runs programs (riskyOptions, riskyFor), or an
	// abbreviation of one.
	Option string
}

// Error names the tool, the scope and, for a deny rule, the rule.
func (e *DeniedError) Error() string {
	switch {
	case e.Rule != "":
		return fmt.Sprintf("toolpolicy: tool %q denied by the %s policy (rule %q)", e.Tool, e.Scope, e.Rule)
	case e.DenyRules:
		return fmt.Sprintf("toolpolicy: tool %q refused: the %s policy denies some commands, and the command "+
			"cannot be checked against those deny rules (%s): write it out without variables (other than $HOME "+
			"and $PWD), $'…', brace expansion or substitutions", e.Tool, e.Scope, e.Unchecked)
	case e.Option != "":
		return fmt.Sprintf("toolpolicy: tool %q not allowed by the %s policy: its option %s can follow links, "+
			"read or write other files, or run programs, which no prefix rule allows", e.Tool, e.Scope, e.Option)
	case e.Unchecked != "":
		return fmt.Sprintf("toolpolicy: tool %q not allowed by the %s policy (no allow rule for commands "+
			"covers what cannot be checked: %s)", e.Tool, e.Scope, e.Unchecked)
	}
	return fmt.Sprintf("toolpolicy: tool %q not allowed by the %s policy (no allow rule covers it)", e.Tool, e.Scope)
}

// rule is a parsed rule of an Effective policy.
type rule struct {
	tool
	raw string
	// For Bash command rules: the command's words, whether the rule is a prefix ("cmd:*"),
	// and whether the command has several parts ("a && b"), which is then compared as text.
	words    []string
	prefix   bool
	compound bool
	text     string
}

// parseRules parses the rules of an Effective policy.
func parseRules(list []string) ([]rule, error) {
	out := make([]rule, 0, len(list))
	for _, raw := range list {
		if raw == AllTools {
			continue
		}
		t, err := parseTool(raw)
		if err != nil {
			return nil, fmt.Errorf("toolpolicy: effective policy: %w", err)
		}
		r := rule{tool: t, raw: raw}
		if t.name == "Bash" && t.hasArg {
			body := t.arg
			if strings.HasSuffix(body, ":*") {
				body, r.prefix = strings.TrimSuffix(body, ":*"), true
			}
			c := parseCommand(body)
			if len(c.segments) == 1 && !c.opaque {
				r.words = c.segments[0]
			} else {
				r.compound = true
				r.text = strings.Join(strings.Fields(body), " ")
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// parseRequest splits a requested tool, e.g. "Read", "Read(./a.go)" or "Bash(ls -la)". Unlike
// a rule, a request may hold commas and line breaks in its specifier.
func parseRequest(s string) (tool, error) {
	s = strings.TrimSpace(s)
	name, arg, hasArg := s, "", false
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return tool{}, fmt.Errorf("toolpolicy: %w: %q: missing closing parenthesis", ErrInvalidTool, s)
		}
		name, arg, hasArg = strings.TrimSpace(s[:i]), s[i+1:len(s)-1], true
		if strings.TrimSpace(arg) == "" {
			return tool{}, fmt.Errorf("toolpolicy: %w: %q: empty specifier", ErrInvalidTool, s)
		}
	}
	if name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return r <= ' ' || r == '(' || r == ')' || r == 0x7f
	}) {
		return tool{}, fmt.Errorf("toolpolicy: %w: %q: bad tool name", ErrInvalidTool, s)
	}
	if known, ok := claudeTools[strings.ToLower(name)]; ok {
		name = known
	}
	return tool{name: name, arg: arg, hasArg: hasArg}, nil
}

// Check reports whether a run may use a tool: nil, or a *DeniedError when a deny rule matches
// it or, unless AllowAll, no allow rule covers it; an error wrapping ErrInvalidTool for a
// malformed request.
//
// Rules match as in Claude Code: "Read" covers every Read request, "Read(./src/**)" the paths
// under ./src/, "mcp__github" every tool of that MCP server. A Bash request is split into its
// simple commands with bash's grammar ("ls && git push" is two) and each must be allowed; a rule
// "Bash(cmd:*)" allows commands whose words start with those of cmd ("git log:*" allows
// "git log -p" but not "git logs"), "Bash(cmd)" exactly that command. Only proven words count
// (literals, plain quotes, $HOME and $PWD): a command line with other variables, $'…', brace
// expansion, substitutions, compound commands (if, for, subshells, functions) or redirections
// into files is only allowed by a bare "Bash" rule or AllowAll, and a prefix rule does not
// allow options that make a read-only command write, run programs or follow links (rg --pre,
// git diff --output, find -exec, grep -R), nor their abbreviations (grep --deref). Deny rules look further: through sudo, env, xargs and other
// wrappers, variable assignments, paths to the program (/usr/bin/git), git's global options
// (git -C dir push), compound commands, substitutions, sh -c and eval; and they fail closed:
// when the policy has deny rules for commands, a command line with words that cannot be proven,
// or that does not parse, is refused whatever the allow rules say. That is a best effort, not
// a sandbox: an allow list is the boundary, deny rules are a safety net.
func (e Effective) Check(requested string) error {
	req, err := parseRequest(requested)
	if err != nil {
		return err
	}
	denied, err := parseRules(e.Denied)
	if err != nil {
		return err
	}
	allowed, err := parseRules(e.Allowed)
	if err != nil {
		return err
	}
	deny := func(r rule) error {
		return &DeniedError{Tool: strings.TrimSpace(requested), Scope: e.scopeOf(r.raw), Rule: r.raw}
	}
	notAllowed := &DeniedError{Tool: strings.TrimSpace(requested), Scope: e.allowListScope()}

	if req.name == "Bash" && req.hasArg {
		views, unproven := denyViews(req.arg, 0)
		whole := strings.Join(strings.Fields(req.arg), " ")
		var commandRule *rule
		for i, r := range denied {
			if r.name != "Bash" {
				continue
			}
			if !r.hasArg || denyMatchesCommand(r, views, whole) {
				return deny(r)
			}
			if commandRule == nil {
				commandRule = &denied[i]
			}
		}
		if !e.AllowAll && !hasBare(allowed, "Bash") {
			c := parseCommand(req.arg)
			if c.opaque || len(c.segments) == 0 {
				notAllowed.Unchecked = c.why
				return notAllowed
			}
			for _, seg := range c.segments {
				if ok, option := allowsSegment(allowed, seg, whole); !ok {
					notAllowed.Option = option
					return notAllowed
				}
			}
		}
		if commandRule != nil && len(unproven) > 0 {
			// The views may miss a command the rules deny: fail closed.
			return &DeniedError{Tool: notAllowed.Tool, Scope: e.scopeOf(commandRule.raw),
				Unchecked: unproven[0], DenyRules: true}
		}
		return nil
	}

	for _, r := range denied {
		if matchesTool(r, req) {
			return deny(r)
		}
	}
	if e.AllowAll {
		return nil
	}
	for _, r := range allowed {
		if matchesTool(r, req) {
			return nil
		}
	}
	return notAllowed
}

// scopeOf returns the scope that decided a rule, or the channel's default when Source does not
// say (an Effective built by hand).
func (e Effective) scopeOf(raw string) string {
	if s, ok := e.Source[raw]; ok {
		return s
	}
	return e.defaultScope()
}

// allowListScope names the scope whose allow list refused a tool: the scope that denied
// AllTools, or else the channel's default, where the allow list starts.
func (e Effective) allowListScope() string {
	if s, ok := e.Source[AllTools]; ok {
		return s
	}
	return e.defaultScope()
}

// defaultScope is the name of the channel's built-in default scope.
func (e Effective) defaultScope() string {
	if e.Channel == "" {
		return ScopeDefault
	}
	return ScopeDefault + ":" + e.Channel
}

// hasBare reports whether rules hold the bare tool name (no specifier).
func hasBare(rules []rule, name string) bool {
	for _, r := range rules {
		if r.name == name && !r.hasArg {
			return true
		}
	}
	return false
}

// matchesTool reports whether a non-Bash-command rule covers a request.
func matchesTool(r rule, req tool) bool {
	if r.name != req.name {
		return matchesMCPServer(r, req.name)
	}
	if !r.hasArg {
		return true
	}
	if !req.hasArg {
		return false
	}
	if r.arg == req.arg {
		return true
	}
	if p, ok := strings.CutSuffix(r.arg, ":*"); ok {
		return strings.HasPrefix(req.arg, p)
	}
	if p := strings.TrimRight(r.arg, "*"); p != r.arg {
		return strings.HasPrefix(req.arg, p)
	}
	return false
}

// matchesMCPServer reports whether a rule naming an MCP server ("mcp__github" or
// "mcp__github__*") covers one of its tools ("mcp__github__create_issue").
func matchesMCPServer(r rule, name string) bool {
	if r.hasArg || !strings.HasPrefix(r.name, "mcp__") {
		return false
	}
	server := strings.TrimSuffix(strings.TrimSuffix(r.name, "*"), "__")
	return strings.Count(server, "__") == 1 && strings.HasPrefix(name, server+"__")
}

// denyMatchesCommand reports whether a Bash deny rule matches any simple command of a request
// (views, from denyViews) or, for a compound rule, the whole command text.
func denyMatchesCommand(r rule, views [][]string, whole string) bool {
	if r.compound {
		return whole == r.text || r.prefix && strings.HasPrefix(whole, r.text)
	}
	ruleWords := append([]string{path.Base(r.words[0])}, r.words[1:]...)
	for _, v := range views {
		if wordsMatch(ruleWords, r.prefix, v) {
			return true
		}
	}
	return false
}

// allowsSegment reports whether an allow rule covers one simple command, taken literally: the
// program as written, no wrappers, no risky options after a prefix rule's words. When a prefix
// rule matched but for a risky option, option is that option.
func allowsSegment(rules []rule, seg []string, whole string) (ok bool, option string) {
	for _, r := range rules {
		if r.name != "Bash" || !r.hasArg {
			continue
		}
		if r.compound {
			if whole == r.text || r.prefix && strings.HasPrefix(whole, r.text) {
				return true, ""
			}
			continue
		}
		if !wordsMatch(r.words, r.prefix, seg) {
			continue
		}
		if r.prefix {
			if o := riskyOption(seg[0], seg[len(r.words):]); o != "" {
				option = o
				continue
			}
		}
		return true, ""
	}
	return false, option
}

// wordsMatch reports whether a command's words equal a rule's, or start with them for a
// prefix rule.
func wordsMatch(rule []string, prefix bool, words []string) bool {
	if len(words) < len(rule) || (!prefix && len(words) != len(rule)) {
		return false
	}
	for i := range rule {
		if words[i] != rule[i] {
			return false
		}
	}
	return true
}

// riskyOptions turn commands a prefix rule allows as harmless into ones that write files or
// run other programs: rg --pre, git diff/log/show --output and --ext-diff, find -exec/-delete.
var riskyOptions = []string{
	"--pre", "--output", "--ext-diff", "--open-files-in-pager", "--exec",
	"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
}

// riskyFor are options that make one program run another or read beyond the folder it was
// given: rg's --hostname-bin runs a program, --pre-glob picks the files --pre runs on; following
// links while recursing (rg -L, grep -R, ls -LR, find -L, du -L, cp -rL, tar -h, tree -l) reads
// wherever a link in the folder points, and so does reading file names from a file (wc and du
// --files0-from, tar -T); git's --textconv runs a repository's conversion programs. Short ones
// count inside a cluster too (grep -rnR).
var riskyFor = map[string][]string{
	"rg":    {"-L", "--follow", "--hostname-bin", "--pre-glob"},
	"grep":  {"-R", "--dereference-recursive"},
	"egrep": {"-R", "--dereference-recursive"},
	"fgrep": {"-R", "--dereference-recursive"},
	"ls":    {"-L", "--dereference"},
	"git":   {"--textconv"},
	"find":  {"-L", "-follow"},
	"du":    {"-L", "--dereference", "--files0-from"},
	"wc":    {"--files0-from"},
	"cp":    {"-L", "--dereference"},
	"tar":   {"-h", "--dereference", "-T", "--files-from"},
	"tree":  {"-l"},
	"file":  {"-L", "--dereference"},
	"stat":  {"-L", "--dereference"},
}

// exactOptions are real options of a program that are also abbreviations of one of its risky
// ones (git diff --text, tar --file): written in full they are that option, not the risky one.
var exactOptions = map[string][]string{
	"git": {"--text"},
	"tar": {"--file"},
}

// riskyOption returns the first argument of program that is a risky option: alone, as
// --opt=value, as an abbreviation of a long one (GNU getopt_long and git take any unambiguous
// prefix: grep --deref is --dereference-recursive), or (a one-letter one) inside a cluster of
// short options; "" when there is none.
func riskyOption(program string, args []string) string {
	prog := path.Base(program)
	own := riskyFor[prog]
	if prog == "tar" && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = append([]string{"-" + args[0]}, args[1:]...) // tar chf: old-style options
	}
	for _, a := range args {
		if a == "--" {
			return ""
		}
		name, _, _ := strings.Cut(a, "=")
		if contains(riskyOptions, name) || contains(own, name) {
			return a
		}
		if strings.HasPrefix(name, "--") && !contains(exactOptions[prog], name) {
			for _, o := range concat(riskyOptions, own) {
				if strings.HasPrefix(o, "--") && strings.HasPrefix(o, name) {
					return a
				}
			}
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			for _, o := range own {
				if len(o) == 2 && o[0] == '-' && o[1] != '-' && strings.ContainsRune(a[1:], rune(o[1])) {
					return a
				}
			}
		}
	}
	return ""
}
