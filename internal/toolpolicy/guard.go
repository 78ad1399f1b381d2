package toolpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Guard is what a headless run's PreToolUse hook enforces on every tool call (issue 23): the
// run's effective policy (Check), and its work folder. The CLI's flags say the same, but a CLI
// treats some tools as needing no permission (Claude Code's Read, Grep and Glob read any file);
// the hook sees every call.
//
//   - Bash commands must pass Check; with a policy that does not allow everything, the shell's
//     folder must be inside Dir, every word of the command must be proven (see Check: no
//     variables other than $HOME and $PWD, no $'…', brace expansion or substitutions), and
//     every path the command names (arguments, option values, redirections, through wrappers,
//     sh -c and substitutions) must lie inside Dir or be named by an allow rule
//     (Read(//etc/hosts)); a wildcard word counts with every path bash may expand it to
//     (glob.go: syntax the guard does not match as bash does is refused). A command the guard
//     cannot parse as bash is refused whatever the policy, and so is one that is more work than
//     it checks (see ErrOverBudget).
//   - File tools (Read, Grep, Glob, LS, NotebookRead; Write, Edit, MultiEdit, NotebookEdit) must
//     be allowed, by a bare rule for their path inside Dir, or by a rule with a path pattern
//     (Read(...) for the reading tools, Edit(...) for the editing ones, or their own name)
//     anywhere. Deny rules with a path pattern refuse what they match.
//   - Paths under Private (intentq's data_dir and secret files, ~/.ssh and other credential
//     stores) are refused whatever the policy says, unless Dir itself lies there.
//   - With a policy that does not allow everything, no write plants a program for the person
//     (plants.go): the editing tools' paths, and what shell commands create or change (their
//     writers' arguments, output options, redirections), must not be or lie in one of
//     PlantNames at any depth, nor inside a folder with a HEAD; git init, clone and config
//     (but reading) are refused.
//   - Other tools must pass Check; the CLI's bookkeeping tools (TodoWrite, ...) pass unless a
//     deny rule names them.
//
// Paths are followed through symbolic links. The guard is a second line behind the operating
// system's confinement of a run: what it cannot prove it refuses.
type Guard struct {
	// Policy is the run's effective policy.
	Policy Effective `json:"policy"`
	// Dir is the session's work folder (absolute).
	Dir string `json:"dir"`
	// Home is the run's home folder, for ~ and $HOME.
	Home string `json:"home,omitempty"`
	// Private are files and folders no run may touch (absolute).
	Private []string `json:"private,omitempty"`

	// state is one CheckCall's parsed rules and work budget.
	state *callState
}

// Bounds on the work of one call: beyond them the guard refuses rather than takes its time
// (the hook must answer within CheckBudget).
const (
	// maxCommandBytes bounds the length of a shell command.
	maxCommandBytes = 64 << 10
	// maxPatterns bounds the wildcard words a shell command may have.
	maxPatterns = 64
	// maxEntries bounds the folder entries the guard reads to expand them.
	maxEntries = 20000
)

// ErrOverBudget is wrapped by CheckCall's and PreToolUse's error for a call that is more work
// than the guard checks: a shell command longer than 64 KiB, more than 64 wildcard words,
// wildcards that go through more than 20000 folder entries, or a check that takes longer than
// CheckBudget. The call is refused.
var ErrOverBudget = errors.New("more than the guard checks")

// callState is what one CheckCall works with: the policy's rules parsed once, the private paths
// resolved once, and the work it may still do.
type callState struct {
	denied, allowed []rule
	private         []string
	entries         int
	// checked holds the paths already decided, so that a word seen twice (a command as
	// written and unwrapped) is checked once.
	checked map[string]bool
}

// Call is one tool call as Claude Code's PreToolUse hook reports it on standard input.
type Call struct {
	// Event is the hook's event, PreToolUse.
	Event string `json:"hook_event_name"`
	// Tool is the tool's name, e.g. "Bash" or "Read".
	Tool string `json:"tool_name"`
	// Input is the tool's input, e.g. {"command": "ls"} or {"file_path": "/a"}.
	Input json.RawMessage `json:"tool_input"`
	// Cwd is the CLI's current folder, where relative paths and shell commands start.
	Cwd string `json:"cwd"`
}

// OutsideError is CheckCall's error for a path outside the work folder, or a private one.
type OutsideError struct {
	// Tool is the tool call, shortened; Path the path it touches; Dir the work folder.
	Tool, Path, Dir string
	// Private: the path is one no run may touch.
	Private bool
	// Unresolved: the path, or a word of a shell command, could not be proven (a variable,
	// $'…', brace expansion, a substitution, ~user): Path holds it as written.
	Unresolved bool
}

// Error says which path, and why it is refused.
func (e *OutsideError) Error() string {
	switch {
	case e.Unresolved:
		return fmt.Sprintf("toolpolicy: %s has %s, which the guard cannot prove names no path outside the work folder "+
			"(it follows only plain words and quotes, ~, $HOME and $PWD: no other variables, $'…', brace expansion "+
			"or substitutions): write it out", e.Tool, e.Path)
	case e.Private:
		return fmt.Sprintf("toolpolicy: %s touches %s, which no headless run may read or write (intentq's data or a credential store)", e.Tool, e.Path)
	}
	return fmt.Sprintf("toolpolicy: %s touches %s, outside the session's work folder %s (allow it with a rule naming the path, e.g. Read(/%s))", e.Tool, e.Path, e.Dir, e.Path)
}

// Tool families: rules with a path pattern for the head of the family cover its members, as in
// Claude Code ("Read rules apply to all tools that read files").
var (
	readTools = map[string]string{"Read": "file_path", "NotebookRead": "notebook_path", "Grep": "path", "Glob": "path", "LS": "path"}
	editTools = map[string]string{"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
	// bookkeeping tools change nothing outside the CLI and read nothing: they pass unless denied.
	bookkeeping = map[string]bool{"TodoWrite": true, "TodoRead": true, "ExitPlanMode": true, "BashOutput": true, "KillShell": true, "KillBash": true}
)

// CheckCall reports whether a run may make a tool call: nil, a *DeniedError, an *OutsideError,
// or an error for a call it cannot read (refused too).
func (g Guard) CheckCall(c Call) error {
	if !filepath.IsAbs(g.Dir) {
		return fmt.Errorf("toolpolicy: the guard has no absolute work folder (%q)", g.Dir)
	}
	name := strings.TrimSpace(c.Tool)
	if known, ok := claudeTools[strings.ToLower(name)]; ok {
		name = known
	}
	var input map[string]any
	if len(c.Input) > 0 && string(c.Input) != "null" {
		if err := json.Unmarshal(c.Input, &input); err != nil {
			return fmt.Errorf("toolpolicy: %s: tool_input is not a JSON object: %w", name, err)
		}
	}
	g.Dir = realPath(g.Dir)
	if g.Home != "" {
		g.Home = realPath(g.Home)
	}
	if err := g.prepare(); err != nil {
		return err
	}
	base := g.Dir
	if filepath.IsAbs(c.Cwd) {
		base = realPath(c.Cwd)
	}
	switch {
	case name == "Bash":
		command, _ := input["command"].(string)
		if strings.TrimSpace(command) == "" {
			return fmt.Errorf("toolpolicy: %w: Bash without a command", ErrInvalidTool)
		}
		return g.checkShell(command, base)
	case readTools[name] != "" || editTools[name] != "":
		return g.checkFileTool(name, input, base)
	}
	err := g.Policy.Check(name)
	var denied *DeniedError
	if bookkeeping[name] && errors.As(err, &denied) && denied.Rule == "" {
		return nil
	}
	return err
}

// prepare gives the guard its state for one call: the rules parsed and the private paths
// resolved once, and the work budget.
func (g *Guard) prepare() error {
	denied, err := parseRules(g.Policy.Denied)
	if err != nil {
		return err
	}
	allowed, err := parseRules(g.Policy.Allowed)
	if err != nil {
		return err
	}
	st := &callState{denied: denied, allowed: allowed, entries: maxEntries, checked: map[string]bool{}}
	for _, p := range g.Private {
		st.private = append(st.private, realPath(p))
	}
	g.state = st
	return nil
}

// checkShell checks a Bash command: the policy, then the words and paths it names.
func (g Guard) checkShell(command, base string) error {
	short := "Bash(" + firstWords(command) + ")"
	if len(command) > maxCommandBytes {
		return fmt.Errorf("toolpolicy: %s: %w: the command is %d bytes, longer than %d KiB: call refused",
			short, ErrOverBudget, len(command), maxCommandBytes>>10)
	}
	tool := "Bash(" + command + ")"
	if err := g.Policy.Check(tool); err != nil {
		return err
	}
	if !g.Policy.AllowAll && !within(base, g.Dir) {
		return &OutsideError{Tool: short, Path: base, Dir: g.Dir}
	}
	p := pathViews(command, 0)
	switch {
	case p.err != nil:
		// Nothing the command touches can be checked, private paths included.
		return fmt.Errorf("toolpolicy: %s: the guard cannot read the command as bash does (%v): call refused", short, p.err)
	case len(p.unproven) > 0 && !g.Policy.AllowAll:
		return &OutsideError{Tool: short, Path: p.unproven[0], Unresolved: true}
	}
	patterns := 0
	for _, list := range p.globs {
		patterns += len(list)
	}
	if patterns > maxPatterns {
		return fmt.Errorf("toolpolicy: %s: %w: more than %d wildcard words: call refused (name fewer patterns)",
			short, ErrOverBudget, maxPatterns)
	}
	for _, file := range p.files {
		if err := g.checkShellWord(short, file, base, true); err != nil {
			return err
		}
	}
	for _, words := range p.views {
		for i, w := range words {
			if i == 0 && !isAssignment(w) {
				continue // the program
			}
			if err := g.checkShellWord(short, w, base, false); err != nil {
				return err
			}
		}
	}
	for _, w := range p.words {
		if err := g.checkShellWord(short, w, base, false); err != nil {
			return err
		}
	}
	texts := make([]string, 0, len(p.globs))
	for text := range p.globs {
		texts = append(texts, text)
	}
	sort.Strings(texts)
	for _, text := range texts {
		for _, pattern := range p.globs[text] {
			if err := g.checkGlob(short, text, pattern, base); err != nil {
				return err
			}
		}
	}
	if g.Policy.AllowAll {
		return nil
	}
	return g.checkShellWrites(short, p, base)
}

// checkShellWord checks one proven word of a command that may name a file: a path (with / or
// ~, or . and ..), the value of --opt=value or NAME=value, or a name that exists in the folder
// (a link, perhaps). isFile: the word is a file for sure (a redirection's). Unproven words are
// left alone: the policy allows everything (else checkShell refused them).
func (g Guard) checkShellWord(tool, w, base string, isFile bool) error {
	if strings.HasPrefix(w, unprovenMark) {
		return nil
	}
	var candidates []string
	switch {
	case strings.HasPrefix(w, "-"):
		if _, v, ok := strings.Cut(w, "="); ok {
			candidates = append(candidates, v)
		} else if i := strings.IndexAny(w, "/~\x00"); i > 0 {
			candidates = append(candidates, w[i:]) // -I/usr/include, -f~/x, -I$HOME/include
		}
	case strings.Contains(w, "="):
		_, v, _ := strings.Cut(w, "=")
		candidates = append(candidates, v, w)
	default:
		candidates = append(candidates, w)
	}
	if strings.HasPrefix(w, "~") {
		// A quoted ~ ('~'/x) is a name in the folder, not the home: check both.
		candidates = append(candidates, "./"+w)
	}
	for _, c := range candidates {
		if c == "" || c == "-" || safeDevices[c] {
			continue
		}
		p, ok := g.expand(c, base)
		switch {
		case !ok && g.Policy.AllowAll:
			continue // everything is allowed: nothing to hold a variable against
		case !ok:
			return &OutsideError{Tool: tool, Path: shown(c), Unresolved: true}
		case !isFile && !pathLike(c, p) && !exists(filepath.Join(base, p)):
			continue
		}
		if err := g.checkPath(tool, "Read", p, base); err != nil {
			return err
		}
	}
	return nil
}

// safeDevices are files commands name that hold nothing.
var safeDevices = map[string]bool{"/dev/null": true, "/dev/stdin": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/zero": true}

// pathLike reports whether a word (and its expansion) looks like a path, or a shell pattern of
// paths, rather than an argument that merely names something (a branch, a word to find).
func pathLike(word, expanded string) bool {
	return strings.ContainsAny(word, "/$*?[") || strings.HasPrefix(word, "~") || word == "." || word == ".." || expanded != word
}

// expand resolves ~ and ~/ (the run's home) and, in a shell word (shellDir, the shell's
// folder, not empty), $HOME and $PWD; ok is false for ~user, and for $HOME in a run without a
// home.
func (g Guard) expand(w, shellDir string) (string, bool) {
	out := w
	if shellDir != "" && strings.Contains(out, "\x00") {
		if strings.Contains(out, homeRef) {
			if g.Home == "" {
				return w, false
			}
			out = strings.ReplaceAll(out, homeRef, g.Home)
		}
		out = strings.ReplaceAll(out, pwdRef, shellDir)
		if strings.Contains(out, "\x00") {
			return w, false
		}
	}
	if out == "~" || strings.HasPrefix(out, "~/") {
		if g.Home == "" {
			return w, false
		}
		out = g.Home + out[1:]
	} else if strings.HasPrefix(out, "~") {
		return w, false // ~user
	}
	return out, true
}

// shown writes a shell word for a message: $HOME and $PWD as such.
func shown(w string) string {
	return strings.NewReplacer(homeRef, "$HOME", pwdRef, "$PWD", unprovenMark, "").Replace(w)
}

// checkFileTool checks a file tool's call: its path, resolved from the base folder.
func (g Guard) checkFileTool(name string, input map[string]any, base string) error {
	key, family := readTools[name], "Read"
	if key == "" {
		key, family = editTools[name], "Edit"
	}
	raw, _ := input[key].(string)
	paths := []string{raw}
	if raw == "" {
		if family == "Edit" || name == "Read" || name == "NotebookRead" {
			return fmt.Errorf("toolpolicy: %w: %s without %s", ErrInvalidTool, name, key)
		}
		paths = []string{"."} // Grep, Glob, LS: the current folder
	}
	if name == "Glob" {
		// An absolute pattern (or one that climbs) searches where it says.
		if pattern, _ := input["pattern"].(string); pattern != "" {
			paths = append(paths, globRoot(filepath.Join(pathOr(raw, "."), pattern), pattern))
		}
	}
	for _, p := range paths {
		e, ok := g.expand(p, "")
		if !ok {
			return &OutsideError{Tool: name, Path: p, Unresolved: true}
		}
		if err := g.checkPath(name, family, e, base); err != nil {
			return err
		}
	}
	return nil
}

func pathOr(p, def string) string {
	if p == "" {
		return def
	}
	return p
}

// globRoot is the folder a glob pattern starts in: the part before its first wildcard. An
// absolute pattern replaces the folder it was joined to.
func globRoot(joined, pattern string) string {
	p := joined
	if filepath.IsAbs(pattern) || strings.HasPrefix(pattern, "~") {
		p = pattern
	}
	if i := strings.IndexAny(p, "*?[{"); i >= 0 {
		p = filepath.Dir(p[:i] + "x")
	}
	return p
}

// checkPath decides one path a tool touches, relative to base unless absolute. family is Read
// or Edit: the rules with a path pattern that cover the tool.
func (g Guard) checkPath(tool, family, p, base string) error {
	if !filepath.IsAbs(p) {
		p = base + string(filepath.Separator) + p
	}
	st := g.state
	if st == nil {
		if err := g.prepare(); err != nil {
			return err
		}
		st = g.state
	}
	if st.checked[family+"\x00"+p] {
		return nil
	}
	st.checked[family+"\x00"+p] = true
	return g.decide(tool, family, realPath(p))
}

// checkGlob checks a pattern word of a shell command (text as written, pattern from
// command.globs): the folder it starts in and every path bash may expand it to are read.
func (g Guard) checkGlob(tool, text, pattern, base string) error {
	root, found, err := g.globPaths(pattern, base, g.Policy.AllowAll)
	switch {
	case errors.Is(err, errUnknownGlob):
		return fmt.Errorf("toolpolicy: %s: %s has %w: name the files, or quote the word", tool, shown(text), err)
	case err != nil:
		return fmt.Errorf("toolpolicy: %s: %w: %v: call refused (name the files)", tool, ErrOverBudget, err)
	}
	if root != "" {
		if err := g.checkPath(tool, "Read", root, base); err != nil {
			return err
		}
	}
	for _, m := range found {
		if err := g.checkPath(tool, "Read", m, base); err != nil {
			return err
		}
	}
	return nil
}

// decide applies the rules to one absolute, resolved path.
func (g Guard) decide(tool, family, p string) error {
	name, _, _ := strings.Cut(tool, "(")
	for _, r := range g.state.private {
		if within(p, r) && !(within(g.Dir, r) && within(p, g.Dir)) {
			return &OutsideError{Tool: tool, Path: p, Private: true}
		}
	}
	if family == "Edit" && !g.Policy.AllowAll {
		if err := g.checkPlant(tool, p); err != nil {
			return err
		}
	}
	// Rules with the family's name cover its tools; a Bash command's paths are reads.
	covers := func(r rule) bool { return r.name == family || name != "Bash" && r.name == name }
	for _, r := range g.state.denied {
		if !covers(r) {
			continue
		}
		if (!r.hasArg && name != "Bash") || r.hasArg && g.ruleMatches(r.arg, p) {
			return &DeniedError{Tool: tool, Scope: g.Policy.scopeOf(r.raw), Rule: r.raw}
		}
	}
	if name == "Bash" && g.Policy.AllowAll {
		return nil
	}
	for _, r := range g.state.allowed {
		if covers(r) && r.hasArg && g.ruleMatches(r.arg, p) {
			return nil // a rule names the path
		}
	}
	toolAllowed := g.Policy.AllowAll || name == "Bash" // a shell command passed Check already
	for _, r := range g.state.allowed {
		if !r.hasArg && (r.name == name || r.name == family && name != "Write") {
			toolAllowed = true
		}
	}
	switch {
	case !toolAllowed:
		return &DeniedError{Tool: tool, Scope: g.Policy.allowListScope()}
	case g.Policy.AllowAll || within(p, g.Dir):
		return nil
	}
	return &OutsideError{Tool: tool, Path: p, Dir: g.Dir}
}

// ruleMatches reports whether a rule's path pattern covers an absolute path. Patterns are
// written as in Claude Code: //abs/path, ~/path, or relative to the work folder (./src/**);
// /path is taken as absolute too. * matches within a folder name, ** across folders; a pattern
// without wildcards covers the path and everything under it.
func (g Guard) ruleMatches(pattern, p string) bool {
	pat := strings.TrimSpace(pattern)
	switch {
	case strings.HasPrefix(pat, "//"):
		pat = pat[1:]
	case pat == "~" || strings.HasPrefix(pat, "~/"):
		if g.Home == "" {
			return false
		}
		pat = g.Home + pat[1:]
	case strings.HasPrefix(pat, "/"):
	default:
		pat = g.Dir + "/" + strings.TrimPrefix(pat, "./")
	}
	if !strings.ContainsAny(pat, "*?") {
		pat = filepath.Clean(pat)
		return within(p, pat) || within(p, realPath(pat))
	}
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch {
		case strings.HasPrefix(pat[i:], "/**"):
			re.WriteString("(/.*)?")
			i += 2
		case strings.HasPrefix(pat[i:], "**"):
			re.WriteString(".*")
			i++
		case pat[i] == '*':
			re.WriteString("[^/]*")
		case pat[i] == '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(pat[i : i+1]))
		}
	}
	re.WriteString("$")
	m, err := regexp.MatchString(re.String(), p)
	return err == nil && m
}

// within reports whether path p is dir or lies under it.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// realPath makes an absolute path physical, as the system would follow it: symbolic links are
// resolved where they exist, and ".." goes up from where a link led, not from the link (so
// "link/../x" and a link inside the work folder that points out of it are seen for what they
// are). The part that does not exist is taken as written.
func realPath(p string) string { return physical(p, 0) }

func physical(p string, links int) string {
	parts := strings.Split(p, string(filepath.Separator))
	cur := string(filepath.Separator)
	for i, part := range parts {
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		switch {
		case err != nil:
			return filepath.Join(append([]string{cur}, parts[i:]...)...)
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(next)
			if err != nil || links > 40 {
				return next // unreadable, or a loop: the link itself
			}
			if !filepath.IsAbs(target) {
				target = cur + string(filepath.Separator) + target
			}
			// Also a dangling link: a file written through it lands where it points.
			return physical(strings.Join(append([]string{target}, parts[i+1:]...), string(filepath.Separator)), links+1)
		default:
			cur = next
		}
	}
	return cur
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// firstWords shortens a command for an error message.
func firstWords(command string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(command), "\n")
	if len(line) > 80 {
		line = line[:80] + "…"
	}
	return line
}

// ReadGuard reads a guard written by the worker for a run.
func ReadGuard(path string) (Guard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Guard{}, fmt.Errorf("toolpolicy: read the run's guard: %w", err)
	}
	var g Guard
	if err := json.Unmarshal(data, &g); err != nil {
		return Guard{}, fmt.Errorf("toolpolicy: the run's guard %s: %w", path, err)
	}
	if !filepath.IsAbs(g.Dir) {
		return Guard{}, fmt.Errorf("toolpolicy: the run's guard %s names no absolute work folder", path)
	}
	return g, nil
}

// preToolUseOutput is Claude Code's PreToolUse hook answer.
type preToolUseOutput struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// CheckBudget is how long PreToolUse takes at most: a call it has not decided by then is
// refused. Claude Code gives a hook 60 s, and runs the call unchecked when a hook times out
// unless the hook is set to block on failure.
const CheckBudget = 20 * time.Second

// checkBudget is CheckBudget; tests shorten it.
var checkBudget = CheckBudget

// PreToolUse answers Claude Code's PreToolUse hook for a headless run: it reads the call from
// in, checks it against the guard in guardFile, and writes nothing when the call may go on (the
// CLI's own permissions still apply: the hook never says "allow"), or a deny with the reason.
// Anything it cannot read (the guard, the call) is a deny too, and so is a check that takes
// longer than CheckBudget: the hook fails closed. The error is only for a failed write.
func PreToolUse(guardFile string, in io.Reader, out io.Writer) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("toolpolicy: the check failed (%v): call refused", r)
			}
		}()
		done <- checkHookCall(guardFile, in)
	}()
	timer := time.NewTimer(checkBudget)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		err = fmt.Errorf("toolpolicy: %w: the check took too long (more than %s): call refused", ErrOverBudget, checkBudget)
	}
	if err == nil {
		return nil
	}
	var o preToolUseOutput
	o.HookSpecificOutput.HookEventName = "PreToolUse"
	o.HookSpecificOutput.PermissionDecision = "deny"
	o.HookSpecificOutput.PermissionDecisionReason = "intentq: " + strings.TrimPrefix(err.Error(), "toolpolicy: ")
	return json.NewEncoder(out).Encode(o)
}

// checkHookCall reads the guard and the call, and checks it.
func checkHookCall(guardFile string, in io.Reader) error {
	g, err := ReadGuard(guardFile)
	if err != nil {
		return err
	}
	var c Call
	if err := json.NewDecoder(io.LimitReader(in, 16<<20)).Decode(&c); err != nil {
		return fmt.Errorf("toolpolicy: the hook's input is not a PreToolUse call: %w", err)
	}
	return g.CheckCall(c)
}
