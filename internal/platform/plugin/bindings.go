package plugin

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ErrUnbound: the block uses a name that handleInbound does not bind before the anchor (the
// plugin renamed a variable upstream); the block would throw at run time, so the patch refuses.
var ErrUnbound = errors.New("plugin: the block uses names handleInbound does not bind before the anchor")

// BlockNames are the names of handleInbound the block reads; ctx is optional (guarded with
// typeof in the block).
var BlockNames = []string{"chat_id", "msgId", "text", "from"}

var (
	identRE     = regexp.MustCompile(`[A-Za-z_$][A-Za-z0-9_$]*`)
	declRE      = regexp.MustCompile(`\b(?:const|let|var)\s+`)
	functionRE  = regexp.MustCompile(`(?:async\s+)?function\s+handleInbound\s*\(`)
	stringLitRE = regexp.MustCompile("'(?:[^'\\\\\n]|\\\\.)*'|\"(?:[^\"\\\\\n]|\\\\.)*\"|`(?:[^`\\\\]|\\\\.)*`")
	commentRE   = regexp.MustCompile(`//[^\n]*`)
)

// checkBindings makes sure every name in BlockNames is bound in handleInbound before the
// anchor: a parameter, or a const, let or var (destructuring included). src is server.ts
// without intentq's blocks.
func checkBindings(src, file string) error {
	loc := functionRE.FindStringIndex(src)
	if loc == nil {
		return fmt.Errorf("%w: %s has no function handleInbound", ErrUnbound, file)
	}
	anchor := strings.Index(src[loc[1]:], Anchor)
	if anchor < 0 {
		return fmt.Errorf("%w: no anchor %q after handleInbound in %s", ErrAnchor, Anchor, file)
	}
	body := src[loc[1] : loc[1]+anchor]
	// Strings and comments never bind anything.
	body = stringLitRE.ReplaceAllString(body, `""`)
	body = commentRE.ReplaceAllString(body, "")
	bound := map[string]bool{}
	// Parameters: up to the parenthesis that closes the list.
	depth, end := 1, 0
	for i, r := range body {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth == 0 {
			end = i
			break
		}
	}
	for _, p := range strings.Split(body[:end], ",") {
		if name := identRE.FindString(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p), "..."))); name != "" {
			bound[name] = true
		}
	}
	// Declarations: the binding pattern up to its "=" (or ";" / line end without one).
	for _, m := range declRE.FindAllStringIndex(body, -1) {
		rest := body[m[1]:]
		pattern := rest
		if i := patternEnd(rest); i >= 0 {
			pattern = rest[:i]
		}
		for _, name := range bindingNames(pattern) {
			bound[name] = true
		}
	}
	var missing []string
	for _, name := range BlockNames {
		if !bound[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%w: %s is not bound in handleInbound of %s (renamed upstream?); nothing was changed", ErrUnbound, strings.Join(missing, ", "), file)
	}
	return nil
}

// patternEnd is where a declaration's binding pattern ends: the "=" at nesting depth 0, else a
// ";" or newline at depth 0.
func patternEnd(s string) int {
	depth := 0
	for i, r := range s {
		switch r {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '=':
			if depth == 0 && !strings.HasPrefix(s[i:], "==") && !strings.HasPrefix(s[i:], "=>") {
				return i
			}
		case ';', '\n':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// bindingNames are the names a binding pattern binds: "x", "{ a, b: c, d = 1, ...e }" binds
// a, c, d, e; "[x, , y]" binds x and y. Type annotations are left out.
func bindingNames(pattern string) []string {
	pattern = strings.TrimSpace(pattern)
	if !strings.HasPrefix(pattern, "{") && !strings.HasPrefix(pattern, "[") {
		if name := identRE.FindString(pattern); name != "" {
			return []string{name}
		}
		return nil
	}
	var out []string
	var walk func(p string)
	walk = func(p string) {
		p = strings.TrimSpace(p)
		if len(p) < 2 {
			return
		}
		object := p[0] == '{'
		inner := p[1:]
		if i := matching(p); i > 0 {
			inner = p[1:i]
		}
		for _, part := range splitTop(inner) {
			part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "..."))
			if part == "" {
				continue
			}
			if object {
				if k, v, ok := strings.Cut(part, ":"); ok && !strings.HasPrefix(strings.TrimSpace(v), ":") {
					_ = k
					part = strings.TrimSpace(v)
				}
			}
			if d, _, ok := strings.Cut(part, "="); ok {
				part = strings.TrimSpace(d)
			}
			if strings.HasPrefix(part, "{") || strings.HasPrefix(part, "[") {
				walk(part)
				continue
			}
			if name := identRE.FindString(part); name != "" {
				out = append(out, name)
			}
		}
	}
	walk(pattern)
	return out
}

// matching is the index of the bracket closing p[0].
func matching(p string) int {
	depth := 0
	for i, r := range p {
		switch r {
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitTop splits s at commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
