package toolpolicy

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// command is a shell command line as a policy sees it, parsed with bash's grammar
// (mvdan.cc/sh). It keeps only what it can prove: a word is proven when it is made of
// literals (glob characters allowed, brace expansion not), plain single and double quotes, and
// the variables $HOME and $PWD with no modifier. Anything else the shell would compute when it
// runs the line ($'…', $"…", other parameters, arithmetic, substitutions, extended globs) leaves
// the word unproven and the line opaque.
type command struct {
	// segments are the simple commands of the line, wherever they are (also inside compound
	// commands, functions and substitutions), in the order they are written: each as its words,
	// assignments first as NAME=value. A proven word has its quotes and escapes removed and
	// $HOME and $PWD as homeRef and pwdRef; an unproven one is unprovenMark and a best guess
	// of it, with what the shell computes as written.
	segments [][]string
	// words are the other proven words of the line: for lists, case subjects, declare
	// arguments, words inside parameter expansions. They may name files too.
	words []string
	// inputs are the files input redirections read ("cat < FILE"): harmless for the tool
	// policy, but a read all the same for a guard's folder checks.
	inputs []string
	// outputs are the files output redirections write (other than /dev/null).
	outputs []string
	// globs maps the text of each proven word that bash expands as a pattern (an unquoted *, ?
	// or [) to the pattern: quoted and escaped characters escaped with \, $HOME and $PWD as
	// homeRef and pwdRef, a leading unquoted ~ as written. A word with quoted wildcards only
	// ("*.go") is no pattern.
	globs map[string][]string
	// unproven lists the words and constructs the parser cannot prove, as written.
	unproven []string
	// opaque is set when the line does something its simple commands do not show: an unproven
	// word, a compound command, a redirection into a file, a here-document; why says the first.
	opaque bool
	why    string
	// err is set when the line does not parse (then there are no segments): bash would read it
	// differently, or not at all.
	err error
}

// Markers in the text of a word. NUL never occurs in a line parseCommand accepts.
const (
	// homeRef and pwdRef stand for $HOME and $PWD in a proven word.
	homeRef = "\x00HOME\x00"
	pwdRef  = "\x00PWD\x00"
	// unprovenMark starts the text of an unproven word, followed by the word as written.
	unprovenMark = "\x00?"
)

// parseCommand parses a command line with bash's grammar.
func parseCommand(s string) command {
	var c command
	if err := readable(s); err != nil {
		c.opaque, c.err, c.why = true, err, err.Error()
		return c
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(s), "")
	if err != nil {
		c.err = fmt.Errorf("the command does not parse as bash: %w", err)
		c.opaque, c.why = true, c.err.Error()
		return c
	}
	c.globs = map[string][]string{}
	w := walker{c: &c, done: map[*syntax.Word]bool{}}
	syntax.Walk(f, w.visit)
	if len(c.unproven) > 0 {
		w.opaqueBy(c.unproven[0])
	}
	return c
}

// readable refuses what bash reads differently from the parser: control characters (a
// carriage return is a blank to the parser and part of a word to bash) and invalid UTF-8.
func readable(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("the command is not valid UTF-8")
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 && b != '\t' && b != '\n' || b == 0x7f {
			return fmt.Errorf("the command has a control character (%q) the guard cannot read as bash does", string(b))
		}
	}
	return nil
}

// walker fills a command from a syntax tree.
type walker struct {
	c *command
	// done holds the words already taken (as arguments, assignments or redirections), so that
	// visit sees the others as loose words.
	done map[*syntax.Word]bool
}

// opaqueBy marks the command opaque, for a reason unless it has one.
func (w walker) opaqueBy(why string) {
	if !w.c.opaque {
		w.c.opaque, w.c.why = true, why
	}
}

// visit is syntax.Walk's callback.
func (w walker) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case nil:
	case *syntax.Stmt:
		if n.Coprocess || n.Disown {
			w.opaqueBy("a coprocess")
		}
	case *syntax.CallExpr:
		seg := make([]string, 0, len(n.Assigns)+len(n.Args))
		for _, a := range n.Assigns {
			seg = append(seg, w.assign(a))
		}
		for _, arg := range n.Args {
			seg = append(seg, w.wordText(arg))
		}
		w.c.segments = append(w.c.segments, seg)
	case *syntax.BinaryCmd:
		switch n.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
		default:
			w.opaqueBy(n.Op.String())
		}
	case *syntax.Redirect:
		w.redirect(n)
	case *syntax.Word:
		if !w.done[n] {
			if text, ok := w.word(n); ok {
				w.c.words = append(w.c.words, text)
			}
		}
	case *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop, *syntax.TestClause:
		// Arithmetic runs code held in variables (a[$(cmd)]), which no word shows.
		w.c.unproven = append(w.c.unproven, printed(n))
	case syntax.Command: // if, while, for, case, functions, subshells, blocks, declare, time, coproc
		w.opaqueBy("the compound command " + printed(n))
	}
	return true
}

// assign returns an assignment before a command as the word NAME=value.
func (w walker) assign(a *syntax.Assign) string {
	if a.Name == nil || a.Append || a.Naked || a.Index != nil || a.Array != nil {
		w.c.unproven = append(w.c.unproven, printed(a))
		return unprovenMark + printed(a)
	}
	if a.Value == nil {
		return a.Name.Value + "="
	}
	text, ok := w.word(a.Value)
	if !ok {
		return unprovenMark + a.Name.Value + "=" + text
	}
	return a.Name.Value + "=" + text
}

// wordText returns the text of a proven word, or unprovenMark and the best guess of it.
func (w walker) wordText(word *syntax.Word) string {
	text, ok := w.word(word)
	if !ok {
		return unprovenMark + text
	}
	return text
}

// redirect records a redirection: an input file, an output file (opaque unless /dev/null),
// a copy of a file descriptor (harmless), a here-document or here-string (opaque).
func (w walker) redirect(r *syntax.Redirect) {
	if r.N != nil && !isDigits(r.N.Value) { // {varname}>file
		w.c.unproven = append(w.c.unproven, "the redirection "+r.N.Value+r.Op.String()+printed(r.Word))
	}
	if r.Hdoc != nil {
		w.done[r.Hdoc] = true
		for _, p := range r.Hdoc.Parts {
			if _, ok := p.(*syntax.Lit); !ok {
				w.c.unproven = append(w.c.unproven, "a here-document with "+printed(p))
				break
			}
		}
	}
	if r.Word == nil {
		w.opaqueBy("the redirection " + r.Op.String())
		return
	}
	target, ok := w.word(r.Word)
	switch r.Op {
	case syntax.RdrIn:
		if ok {
			w.c.inputs = append(w.c.inputs, target)
		}
	case syntax.DplIn, syntax.DplOut: // <&3, 2>&1, >&-, 2>&1- (move); anything else names a file
		if !ok || !isFD(target) {
			w.opaqueBy("a redirection into " + printed(r.Word))
			if ok {
				w.c.outputs = append(w.c.outputs, target)
			}
		}
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut:
		if !ok || target != "/dev/null" {
			w.opaqueBy("a redirection into " + printed(r.Word))
			if ok {
				w.c.outputs = append(w.c.outputs, target)
			}
		}
	default: // here-documents, here-strings, zsh's forms
		w.opaqueBy("the here-document or here-string " + r.Op.String() + " " + printed(r.Word))
	}
}

// word returns the text of a word and whether it is proven; an unproven word is recorded, and
// its text is then a best guess, with the parts the shell computes as written.
func (w walker) word(word *syntax.Word) (string, bool) {
	w.done[word] = true
	var text, skeleton, pattern strings.Builder
	proven, glob := true, false
	unproven := func(p syntax.Node) {
		proven = false
		text.WriteString(source(p))
	}
	for _, part := range word.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			text.WriteString(unescape(p.Value, ""))
			skeleton.WriteString(p.Value)
			lit, wild := globLiteral(p.Value)
			pattern.WriteString(lit)
			glob = glob || wild
		case *syntax.SglQuoted:
			if p.Dollar {
				unproven(p)
			} else {
				text.WriteString(p.Value)
				pattern.WriteString(globEscape(p.Value))
			}
			skeleton.WriteByte('q')
		case *syntax.DblQuoted:
			proven = proven && !p.Dollar
			for _, dp := range p.Parts {
				switch d := dp.(type) {
				case *syntax.Lit:
					lit := unescape(d.Value, "$`\"\\\n")
					text.WriteString(lit)
					pattern.WriteString(globEscape(lit))
				case *syntax.ParamExp:
					if ref, ok := plainParam(d); ok {
						text.WriteString(ref)
						pattern.WriteString(ref)
					} else {
						unproven(d)
					}
				default:
					unproven(d)
				}
			}
			skeleton.WriteByte('q')
		case *syntax.ParamExp:
			if ref, ok := plainParam(p); ok {
				text.WriteString(ref)
				pattern.WriteString(ref)
			} else {
				unproven(p)
			}
			skeleton.WriteByte('p')
		default: // substitutions, arithmetic, extended globs
			unproven(p)
			skeleton.WriteByte('p')
		}
	}
	// Brace expansion ({a,b}, {1..3}) makes several words of one, and a tilde after a colon
	// expands in assignments (PATH=a:~/b).
	if braceExpansion(skeleton.String()) || strings.Contains(skeleton.String(), ":~") {
		proven = false
	}
	if !proven {
		w.c.unproven = append(w.c.unproven, printed(word))
	}
	if proven && glob && !contains(w.c.globs[text.String()], pattern.String()) {
		w.c.globs[text.String()] = append(w.c.globs[text.String()], pattern.String())
	}
	return text.String(), proven
}

// plainParam returns the marker of $HOME, ${HOME}, $PWD or ${PWD}; any other parameter, or
// any modifier (slice, replacement, default, length, indirection, index), is not proven.
func plainParam(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.IsSet || p.Flags != nil ||
		p.NestedParam != nil || p.Index != nil || len(p.Modifiers) > 0 || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || p.Exp != nil ||
		p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset {
		return "", false
	}
	switch p.Param.Value {
	case "HOME":
		return homeRef, true
	case "PWD":
		return pwdRef, true
	}
	return "", false
}

// braceExpansion reports whether the unquoted text of a word (quoted parts as placeholders)
// may hold a brace expansion: a "{" followed by "," or ".." and then "}". Escaped braces count
// too: better refused than missed.
func braceExpansion(skeleton string) bool {
	open, sep := false, false
	for i := 0; i < len(skeleton); i++ {
		switch {
		case skeleton[i] == '{':
			open = true
		case !open:
		case skeleton[i] == ',' || strings.HasPrefix(skeleton[i:], ".."):
			sep = true
		case skeleton[i] == '}' && sep:
			return true
		}
	}
	return false
}

// unescape removes the backslashes of a literal: before any character outside quotes
// (escaped = ""), before the characters in escaped inside double quotes. A backslash before a
// newline goes with it.
func unescape(s, escaped string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (escaped == "" || strings.IndexByte(escaped, s[i+1]) >= 0) {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// source renders a node of the syntax tree as shell text.
func source(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.SingleLine(true)).Print(&b, n); err != nil {
		return fmt.Sprintf("%T", n)
	}
	return b.String()
}

// printed is source shortened for a message.
func printed(n syntax.Node) string {
	s := source(n)
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:80], "") + "…"
	}
	return s
}

// isFD reports whether the word after <& or >& copies, moves or closes a file descriptor
// (3, 1-, -) rather than naming a file.
func isFD(w string) bool {
	return w == "-" || isDigits(strings.TrimSuffix(w, "-"))
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// wrappers are commands that run the command after them; the value lists their options that
// take an argument. Deny rules look through them, so "sudo -u root git push" is still git push.
var wrappers = map[string][]string{
	"sudo":    {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"},
	"doas":    {"-u", "-C"},
	"env":     {"-u", "-C", "--unset", "--chdir"},
	"command": nil,
	"builtin": nil,
	"exec":    {"-a"},
	"nohup":   nil,
	"time":    {"-f", "-o"},
	"nice":    {"-n"},
	"ionice":  {"-c", "-n", "-p"},
	"timeout": {"-s", "-k", "--signal", "--kill-after"},
	"stdbuf":  {"-i", "-o", "-e"},
	"xargs":   {"-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a", "--max-args", "--max-procs"},
}

// shells run the script after their -c option.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true}

// maxDepth bounds how deeply the checks follow sh -c and eval; deeper is unproven.
const maxDepth = 4

// nestedScript returns the script a simple command (unwrapped) runs, sh -c SCRIPT or
// eval ARGS, and why it is not proven ("" when it is): a script made of unproven words is
// followed as best guessed, and $HOME and $PWD are put back as variables, though the outer
// shell puts their values into the script, where they are code.
func nestedScript(v []string) (script, unproven string, ok bool) {
	switch {
	case shells[v[0]]:
		script, ok = shellScript(v[1:])
	case v[0] == "eval":
		script, ok = strings.Join(v[1:], " "), true
	}
	if !ok {
		return "", "", false
	}
	if strings.Contains(script, unprovenMark) {
		unproven = "the script of " + v[0] + " has words the guard cannot prove"
		script = strings.ReplaceAll(script, unprovenMark, "")
	}
	if strings.Contains(script, homeRef) || strings.Contains(script, pwdRef) {
		unproven = "the script of " + v[0] + " has $HOME or $PWD in it"
		script = strings.NewReplacer(homeRef, "${HOME}", pwdRef, "${PWD}").Replace(script)
	}
	return script, unproven, true
}

// tooDeep is the reason a script nested more than maxDepth deep is not followed.
var tooDeep = fmt.Sprintf("sh -c or eval nested more than %d deep", maxDepth)

// denyViews returns the simple commands of a command line as deny rules see them: with
// variable assignments and wrapper commands before them removed, git's global options removed,
// the program as its base name, and including the commands inside compound commands,
// substitutions, sh -c and eval, up to maxDepth deep. unproven says what the views may miss:
// unproven words, a line or script that does not parse, nesting deeper than maxDepth.
func denyViews(s string, depth int) (views [][]string, unproven []string) {
	c := parseCommand(s)
	if c.err != nil {
		return nil, []string{c.err.Error()}
	}
	unproven = append(unproven, c.unproven...)
	for _, seg := range c.segments {
		v := unwrap(seg)
		if len(v) == 0 {
			continue
		}
		views = append(views, v)
		script, why, ok := nestedScript(v)
		switch {
		case !ok:
			continue
		case depth+1 > maxDepth:
			unproven = append(unproven, tooDeep)
			continue
		case why != "":
			unproven = append(unproven, why)
		}
		nv, nu := denyViews(script, depth+1)
		views, unproven = append(views, nv...), append(unproven, nu...)
	}
	return views, unproven
}

// shellPaths is what a guard's folder checks look at in a command line.
type shellPaths struct {
	// views are the simple commands, both as written and as deny rules see them (unwrapped).
	views [][]string
	// words are the other proven words (for lists, parameter expansions' words).
	words []string
	// files are the files redirections read or write; outputs those they write.
	files, outputs []string
	// globs are the patterns of the words bash expands as patterns (see command.globs).
	globs map[string][]string
	// unproven lists the words the guard cannot prove.
	unproven []string
	// err is set when the line, or a script it runs, does not parse or nests too deep: then
	// the views may miss anything.
	err error
}

// pathViews returns what a guard's folder checks look at in a command line, following sh -c
// and eval as denyViews does.
func pathViews(s string, depth int) shellPaths {
	c := parseCommand(s)
	if c.err != nil {
		return shellPaths{err: c.err}
	}
	p := shellPaths{
		words:    c.words,
		files:    append(append([]string(nil), c.inputs...), c.outputs...),
		outputs:  c.outputs,
		globs:    c.globs,
		unproven: c.unproven,
	}
	for _, seg := range c.segments {
		p.views = append(p.views, seg)
		v := unwrap(seg)
		if len(v) == 0 {
			continue
		}
		p.views = append(p.views, v)
		script, why, ok := nestedScript(v)
		switch {
		case !ok:
			continue
		case depth+1 > maxDepth:
			if p.err == nil {
				p.err = errors.New(tooDeep)
			}
			continue
		case why != "":
			p.unproven = append(p.unproven, why)
		}
		n := pathViews(script, depth+1)
		p.views = append(p.views, n.views...)
		p.words = append(p.words, n.words...)
		p.files = append(p.files, n.files...)
		p.outputs = append(p.outputs, n.outputs...)
		for text, patterns := range n.globs {
			for _, pat := range patterns {
				if !contains(p.globs[text], pat) {
					p.globs[text] = append(p.globs[text], pat)
				}
			}
		}
		p.unproven = append(p.unproven, n.unproven...)
		if p.err == nil && n.err != nil {
			p.err = fmt.Errorf("%s -c or eval: %w", v[0], n.err)
		}
	}
	return p
}

// unwrap strips assignments and wrapper commands from the front of a simple command, takes the
// base name of the program, and drops git's global options.
func unwrap(words []string) []string {
	v, _ := unwrapBy(words)
	return v
}

// unwrapBy is unwrap that also returns the wrappers it stripped (their base names).
func unwrapBy(words []string) (v []string, by []string) {
	w := words
	for len(w) > 0 {
		if isAssignment(w[0]) {
			w = w[1:]
			continue
		}
		takesArg, ok := wrappers[path.Base(w[0])]
		if !ok {
			break
		}
		name := path.Base(w[0])
		by = append(by, name)
		w = w[1:]
		for len(w) > 0 && (strings.HasPrefix(w[0], "-") || isAssignment(w[0])) {
			opt := w[0]
			w = w[1:]
			if len(w) > 0 && contains(takesArg, opt) {
				w = w[1:]
			}
		}
		if name == "timeout" && len(w) > 0 { // timeout DURATION COMMAND
			w = w[1:]
		}
	}
	if len(w) == 0 {
		return nil, by
	}
	out := append([]string{path.Base(w[0])}, w[1:]...)
	if out[0] == "git" {
		rest := out[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			opt := rest[0]
			rest = rest[1:]
			switch opt {
			case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path":
				if len(rest) > 0 {
					rest = rest[1:]
				}
			}
		}
		out = append([]string{"git"}, rest...)
	}
	return out, by
}

// shellScript returns the script a shell runs with -c (also in an option cluster like -ec).
func shellScript(args []string) (string, bool) {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return "", false
		}
		if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// isAssignment reports whether w is a shell variable assignment, NAME=value.
func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := w[j]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
