package toolpolicy

import (
	"path"
	"strings"
)

// command is a shell command line, split as far as a policy needs to see through it. It is
// not a shell parser: it knows words, quotes, escapes, command separators, redirections and
// substitutions, which is enough to tell "ls; git push" from "ls", and to give up (opaque) on
// anything it cannot see through.
type command struct {
	// segments are the simple commands, each as its words with quotes and escapes removed.
	segments [][]string
	// nested are the bodies of command and process substitutions: $(...), `...`, <(...).
	nested []string
	// opaque is set when the line does something the word lists do not show: a substitution,
	// a subshell, a redirection into a file, a here-document, or an unterminated quote.
	opaque bool
	// inputs are the files input redirections read ("cat < FILE"): harmless for the tool
	// policy, but a read all the same for a guard's folder checks.
	inputs []string
}

// parseCommand splits a command line into simple commands.
func parseCommand(s string) command {
	var (
		c      command
		words  []string
		w      strings.Builder
		inWord bool
	)
	endWord := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	endSegment := func() {
		endWord()
		if len(words) > 0 {
			c.segments = append(c.segments, words)
			words = nil
		}
	}
	// dropFD forgets a file descriptor number written right before a redirection ("2>").
	dropFD := func() {
		if inWord && isDigits(w.String()) {
			w.Reset()
			inWord = false
			return
		}
		endWord()
	}
	substitution := func(body string) {
		c.nested = append(c.nested, body)
		c.opaque = true
		w.WriteString("$(...)")
		inWord = true
	}

	n := len(s)
	for i := 0; i < n; i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
			endWord()
		case ch == '\n' || ch == ';' || ch == '|':
			endSegment()
		case ch == '&' && i+1 < n && s[i+1] == '>': // &> and &>>: stdout and stderr to a file
			endWord()
			var ok bool
			if i, ok = skipOutput(s, i+1); !ok {
				c.opaque = true
			}
		case ch == '&':
			endSegment()
		case (ch == '<' || ch == '>') && i+1 < n && s[i+1] == '(':
			body, end := parenBody(s, i+2)
			substitution(body)
			i = end
		case ch == '>':
			dropFD()
			var ok bool
			if i, ok = skipOutput(s, i); !ok {
				c.opaque = true
			}
		case ch == '<' && i+1 < n && s[i+1] == '<': // here-document or here-string
			endWord()
			c.opaque = true
			i++
		case ch == '<':
			dropFD()
			var file string
			if file, i = skipInput(s, i); file != "" {
				c.inputs = append(c.inputs, file)
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				c.opaque = true
				w.WriteString(s[i+1:])
				inWord = true
				i = n
				continue
			}
			w.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '"':
			inWord = true
			i = c.doubleQuoted(s, i, &w)
		case ch == '\\':
			if i+1 < n {
				if s[i+1] != '\n' { // backslash-newline continues the line
					w.WriteByte(s[i+1])
					inWord = true
				}
				i++
			}
		case ch == '`':
			body, end := backtickBody(s, i+1)
			substitution(body)
			i = end
		case ch == '$' && i+1 < n && s[i+1] == '(':
			body, end := parenBody(s, i+2)
			substitution(body)
			i = end
		case ch == '(' || ch == ')':
			c.opaque = true
			endSegment()
		case ch == '#' && !inWord:
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = n
				continue
			}
			i += j - 1 // the newline ends the segment on the next turn
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	endSegment()
	return c
}

// doubleQuoted appends the text of the double-quoted string starting at s[i] to w and returns
// the index of its closing quote (or of the last byte, when there is none).
func (c *command) doubleQuoted(s string, i int, w *strings.Builder) int {
	n := len(s)
	for j := i + 1; j < n; j++ {
		switch s[j] {
		case '"':
			return j
		case '\\':
			if j+1 < n && strings.IndexByte("\"\\$`\n", s[j+1]) >= 0 {
				if s[j+1] != '\n' {
					w.WriteByte(s[j+1])
				}
				j++
				continue
			}
			w.WriteByte('\\')
		case '`':
			body, end := backtickBody(s, j+1)
			c.nested = append(c.nested, body)
			c.opaque = true
			w.WriteString("$(...)")
			j = end
		case '$':
			if j+1 < n && s[j+1] == '(' {
				body, end := parenBody(s, j+2)
				c.nested = append(c.nested, body)
				c.opaque = true
				w.WriteString("$(...)")
				j = end
				continue
			}
			w.WriteByte('$')
		default:
			w.WriteByte(s[j])
		}
	}
	c.opaque = true
	return n - 1
}

// parenBody returns the text from start up to the parenthesis that closes the one before
// start, and the index of that parenthesis (or of the last byte, when there is none).
func parenBody(s string, start int) (string, int) {
	depth := 1
	for j := start; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[start:j], j
			}
		}
	}
	return s[min(start, len(s)):], len(s) - 1
}

// backtickBody returns the text from start up to the next backtick, and that backtick's index
// (or the index of the last byte, when there is none).
func backtickBody(s string, start int) (string, int) {
	if j := strings.IndexByte(s[start:], '`'); j >= 0 {
		return s[start : start+j], start + j
	}
	return s[start:], len(s) - 1
}

// skipOutput skips an output redirection starting with the '>' at s[i] and returns the index
// of its last byte and whether it is harmless: a copy of a file descriptor (2>&1, >&-) or a
// redirection to /dev/null. Anything else writes a file.
func skipOutput(s string, i int) (int, bool) {
	n := len(s)
	j := i + 1
	if j < n && (s[j] == '>' || s[j] == '|') {
		j++
	}
	if j < n && s[j] == '&' {
		k := j + 1
		for k < n && (s[k] >= '0' && s[k] <= '9' || s[k] == '-') {
			k++
		}
		if k > j+1 {
			return k - 1, true
		}
		j++
	}
	target, end := redirectTarget(s, j)
	return end, target == "/dev/null"
}

// skipInput skips an input redirection starting with the '<' at s[i] and returns the file it
// reads (empty for a copy of a file descriptor, <&3) and the index of its last byte. Reading a
// file is harmless to the tool policy.
func skipInput(s string, i int) (string, int) {
	j := i + 1
	dup := j < len(s) && s[j] == '&'
	if dup {
		j++
	}
	target, end := redirectTarget(s, j)
	if dup {
		return "", end
	}
	return target, end
}

// redirectTarget returns the word a redirection names, after optional blanks from s[j], and the
// index of its last byte.
func redirectTarget(s string, j int) (string, int) {
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	k := j
	for k < len(s) && strings.IndexByte(" \t\r\n;&|<>()", s[k]) < 0 {
		k++
	}
	return strings.Trim(s[j:k], `"'`), k - 1
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

// maxDepth bounds how deeply deny checks follow substitutions, sh -c and eval.
const maxDepth = 4

// denyViews returns the simple commands of a command line as deny rules see them: with
// variable assignments and wrapper commands before them removed, git's global options removed,
// the program as its base name, and including the commands inside substitutions, sh -c and
// eval, up to maxDepth deep.
func denyViews(s string, depth int) [][]string {
	if depth > maxDepth {
		return nil
	}
	c := parseCommand(s)
	var out [][]string
	for _, seg := range c.segments {
		v := unwrap(seg)
		if len(v) == 0 {
			continue
		}
		out = append(out, v)
		switch {
		case shells[v[0]]:
			if script, ok := shellScript(v[1:]); ok {
				out = append(out, denyViews(script, depth+1)...)
			}
		case v[0] == "eval":
			out = append(out, denyViews(strings.Join(v[1:], " "), depth+1)...)
		}
	}
	for _, body := range c.nested {
		out = append(out, denyViews(body, depth+1)...)
	}
	return out
}

// pathViews returns what a guard's folder checks look at in a command line: every simple
// command both as written and as deny rules see it (unwrapped), and the files input
// redirections read, following substitutions, sh -c and eval as denyViews does.
func pathViews(s string, depth int) (views [][]string, inputs []string) {
	if depth > maxDepth {
		return nil, nil
	}
	c := parseCommand(s)
	inputs = append(inputs, c.inputs...)
	add := func(v [][]string, in []string) {
		views, inputs = append(views, v...), append(inputs, in...)
	}
	for _, seg := range c.segments {
		views = append(views, seg)
		v := unwrap(seg)
		if len(v) == 0 {
			continue
		}
		views = append(views, v)
		switch {
		case shells[v[0]]:
			if script, ok := shellScript(v[1:]); ok {
				add(pathViews(script, depth+1))
			}
		case v[0] == "eval":
			add(pathViews(strings.Join(v[1:], " "), depth+1))
		}
	}
	for _, body := range c.nested {
		add(pathViews(body, depth+1))
	}
	return views, inputs
}

// unwrap strips assignments and wrapper commands from the front of a simple command, takes the
// base name of the program, and drops git's global options.
func unwrap(words []string) []string {
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
		return nil
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
	return out
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
