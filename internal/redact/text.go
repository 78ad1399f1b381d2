// Package redact owns what may be shown of a message: secrets masked (secrets.go, SPEC P8),
// invalid UTF-8 repaired visibly, and the snippet that is the only part of a message allowed to
// leave the machine (text.go, SPEC I7).
package redact

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis marks a snippet that was cut.
const Ellipsis = "…"

// Repair replaces every byte that is not part of valid UTF-8 with U+FFFD, one per byte, so
// nothing is dropped silently. It reports whether anything was replaced.
func Repair(s string) (string, bool) {
	if utf8.ValidString(s) {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), true
}

// Snippet is the masked form of s for anything that leaves the machine: newlines and tabs become
// spaces, other control characters are removed, and the text is cut to at most max characters
// (runes, never bytes) with Ellipsis appended when cut. Invalid UTF-8 becomes U+FFFD.
func Snippet(s string, max int) string {
	if max < 1 {
		return ""
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case unicode.IsControl(r):
			continue
		}
		if n == max {
			b.WriteString(Ellipsis)
			return b.String()
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Chars counts the characters (runes) of s.
func Chars(s string) int { return utf8.RuneCountInString(s) }
