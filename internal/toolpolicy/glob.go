package toolpolicy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Shell wildcards as the guard matches them (issue 61, item 10). bash replaces a word with an
// unquoted *, ? or [ by the names it matches, and a link among them is followed like any path,
// so the guard matches the word against the folders itself. It knows *, ?, \x and brackets of
// plain ASCII characters and ranges within a-z, A-Z or 0-9, and matches them at least as widely
// as bash could with any shell options (dotglob, nocaseglob, a locale's ranges or characters):
// ? as any run of characters, letters in either case, a range also any non-ASCII character.
// Anything else ([!…], [^…], [[:alpha:]], [[=a=]], a \ or [ inside brackets, ** as globstar
// reads it) it refuses, unless the policy allows everything: then such a part matches every
// name in its folder, so private files are still seen where they can be (** goes one folder
// deep, not every folder below).

// errUnknownGlob is wrapped by the error for a wildcard the guard does not match as bash does.
var errUnknownGlob = errors.New("wildcards the guard does not match as bash does")

// globLiteral turns the text of an unquoted literal into pattern text: escapes stay, a
// backslash before a newline goes with it; wild says whether an unescaped *, ? or [ is in it.
func globLiteral(lit string) (pattern string, wild bool) {
	var b strings.Builder
	for i := 0; i < len(lit); i++ {
		switch c := lit[i]; {
		case c == '\\' && i+1 < len(lit):
			i++
			if lit[i] != '\n' {
				b.WriteByte('\\')
				b.WriteByte(lit[i])
			}
		case c == '\\':
			b.WriteString(`\\`)
		default:
			wild = wild || c == '*' || c == '?' || c == '['
			b.WriteByte(c)
		}
	}
	return b.String(), wild
}

// globEscape escapes the characters of quoted text (or of a folder's name) that a pattern would
// read as wildcards, and a leading ~.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\~`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\~`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// globPart is one folder name of a pattern.
type globPart struct {
	// name is the name without escapes, for a part with no wildcard.
	name string
	wild bool
	// exact and folded are the part as filepath.Match patterns, as written and in lower case.
	exact, folded string
	// dot: the part starts with a literal dot, so bash matches . and .. with it too.
	dot bool
	// unknown says what bash reads in the part that the guard does not match ("" if nothing);
	// every makes such a part match every name.
	unknown string
	every   bool
}

// compileGlobPart reads one folder name of a pattern.
func compileGlobPart(s string) globPart {
	var p globPart
	var exact, name strings.Builder
	literal := func(c byte) {
		name.WriteByte(c)
		if strings.IndexByte(`*?[]\-^!`, c) >= 0 {
			exact.WriteByte('\\')
		}
		exact.WriteByte(c)
	}
	p.dot = strings.HasPrefix(s, ".") || strings.HasPrefix(s, `\.`)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
			}
			literal(s[i])
		case '*', '?':
			// ? is one character: a byte in the C locale, a letter of several bytes in UTF-8.
			p.wild = true
			exact.WriteByte('*')
			if c == '*' && i+1 < len(s) && s[i+1] == '*' && p.unknown == "" {
				p.unknown = "** (with globstar it goes through every folder below)"
			}
		case '[':
			end, set, why := globBracket(s, i)
			if end < 0 {
				literal('[') // no closing ]: bash takes the [ as it is
				continue
			}
			p.wild = true
			if why != "" && p.unknown == "" {
				p.unknown = why
			}
			exact.WriteString(set)
			i = end
		default:
			literal(c)
		}
	}
	p.name, p.exact = name.String(), exact.String()
	p.folded = strings.ToLower(p.exact)
	return p
}

// globBracket reads the bracket expression that starts at s[i]: the index of its closing ], the
// set as a filepath.Match class, and what the guard does not match in it ("" if nothing). end is
// -1 when bash would not see a bracket expression (no closing ]).
func globBracket(s string, i int) (end int, set, why string) {
	j := i + 1
	if j < len(s) && (s[j] == '!' || s[j] == '^') {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	k := strings.IndexByte(s[j:], ']')
	if k < 0 {
		return -1, "", ""
	}
	end = j + k
	content := s[i+1 : end]
	switch {
	case content[0] == '!' || content[0] == '^':
		return end, "", "[!…] or [^…] (a negated set)"
	case strings.Contains(content, "["):
		return end, "", "[[:class:]], [[=c=]] or [[.c.]] (a class inside brackets)"
	case content[0] == ']' || strings.Contains(content, `\`):
		return end, "", "a ] or \\ inside brackets"
	}
	var b strings.Builder
	b.WriteByte('[')
	ranges := false
	for n := 0; n < len(content); n++ {
		c := content[n]
		switch {
		case c < 0x20 || c >= 0x7f:
			return end, "", "a character other than plain ASCII inside brackets"
		case n+2 < len(content) && content[n+1] == '-':
			lo, hi := c, content[n+2]
			if !sameClass(lo, hi) || lo > hi {
				return end, "", fmt.Sprintf("the range %c-%c (only ranges within a-z, A-Z or 0-9)", lo, hi)
			}
			b.WriteByte(lo)
			b.WriteByte('-')
			b.WriteByte(hi)
			ranges = true
			n += 2
		case c == '-':
			return end, "", "a - inside brackets that is not a range"
		default:
			if !isAlnum(c) {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	if ranges {
		// In a locale without globasciiranges, a range follows the locale's order: it may hold
		// letters with accents and other scripts.
		b.WriteString("\u0080-\U0010FFFF")
	}
	b.WriteByte(']')
	return end, b.String(), ""
}

// sameClass reports whether two ASCII characters are both lower-case letters, both upper-case
// letters or both digits.
func sameClass(a, b byte) bool {
	class := func(c byte) int {
		switch {
		case c >= 'a' && c <= 'z':
			return 1
		case c >= 'A' && c <= 'Z':
			return 2
		case c >= '0' && c <= '9':
			return 3
		}
		return 0
	}
	return class(a) != 0 && class(a) == class(b)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// matches reports whether bash may match a name with the part, whatever its shell options.
func (p globPart) matches(name string) bool {
	if p.every {
		return true
	}
	if ok, _ := filepath.Match(p.exact, name); ok {
		return true
	}
	ok, _ := filepath.Match(p.folded, strings.ToLower(name))
	return ok
}

// globPaths expands a pattern word (see command.globs) from the shell's folder base: the folder
// it starts in and the paths it matches, within the call's budget of folder entries. A part the
// guard does not match as bash does fails with an error wrapping errUnknownGlob, unless every is
// set; then the part matches every name. A word with no wildcard, or one that starts with ~user,
// gives nothing (the word itself is checked as written).
func (g Guard) globPaths(pattern, base string, every bool) (root string, found []string, err error) {
	if strings.HasPrefix(pattern, "~") {
		first, rest, _ := strings.Cut(pattern, "/")
		if first != "~" || g.Home == "" {
			return "", nil, nil
		}
		pattern = globEscape(g.Home) + "/" + rest
	}
	if strings.Contains(pattern, homeRef) {
		if g.Home == "" {
			return "", nil, nil
		}
		pattern = strings.ReplaceAll(pattern, homeRef, globEscape(g.Home))
	}
	pattern = strings.ReplaceAll(pattern, pwdRef, globEscape(base))
	if !strings.HasPrefix(pattern, "/") {
		pattern = globEscape(base) + "/" + pattern
	}
	var parts []globPart
	first := -1
	for _, s := range strings.Split(pattern, "/") {
		if s == "" {
			continue
		}
		p := compileGlobPart(s)
		if p.unknown != "" {
			if !every {
				return "", nil, fmt.Errorf("%w: %s", errUnknownGlob, p.unknown)
			}
			p.every = true
		}
		if p.wild && first < 0 {
			first = len(parts)
		}
		parts = append(parts, p)
	}
	if first < 0 {
		return "", nil, nil
	}
	root = "/"
	for _, p := range parts[:first] {
		root = joinName(root, p.name)
	}
	found = []string{root}
	for _, p := range parts[first:] {
		if !p.wild {
			for i := range found {
				found[i] = joinName(found[i], p.name)
			}
			continue
		}
		var next []string
		for _, dir := range found {
			m, err := g.state.matchDir(dir, p)
			if err != nil {
				return "", nil, err
			}
			next = append(next, m...)
		}
		found = next
	}
	return root, found, nil
}

// joinName appends a name to a folder as the system reads it (no cleaning: "link/.." is where
// the link leads, then up).
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// matchDir returns the entries of a folder that a pattern part matches, reading them in batches
// within the budget.
func (st *callState) matchDir(dir string, p globPart) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return nil, nil
	}
	var out []string
	// A part that starts with a dot matches . and .. in bash 5.1 and older (no globskipdots):
	// count them, so ".*/x" is checked as "../x" too.
	if p.dot {
		for _, n := range []string{".", ".."} {
			if p.matches(n) {
				out = append(out, joinName(dir, n))
			}
		}
	}
	for {
		names, err := f.Readdirnames(256)
		if st.entries -= len(names); st.entries < 0 {
			return nil, fmt.Errorf("the wildcards go through more than %d folder entries", maxEntries)
		}
		for _, n := range names {
			if p.matches(n) {
				out = append(out, joinName(dir, n))
			}
		}
		if err != nil || len(names) == 0 {
			return out, nil
		}
	}
}
