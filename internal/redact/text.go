// Package redact owns what may be shown of a message: secrets masked (secrets.go, SPEC P8),
// invalid UTF-8 repaired visibly, and the snippet that is the only part of a message allowed to
// leave the machine (text.go, SPEC I7).
package redact

import (
	"fmt"
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

// Snippet is the form of s for anything that leaves the machine (ntfy reminders, alerts,
// digests): newlines and tabs become spaces, other control characters are removed, invalid
// UTF-8 becomes U+FFFD, secrets are masked (Secrets), and the text is cut to at most max
// characters (runes, never bytes) with Ellipsis appended when cut. The order matters: a control
// character removed from inside a token would otherwise join it back together after masking.
func Snippet(s string, max int) string {
	if max < 1 {
		return ""
	}
	body, cut := cutChars(Secrets(clean(s)), max)
	if Contains(body) {
		// The cut made something secret-shaped (a token cut to its exact length): mask again.
		var cutAgain bool
		body, cutAgain = cutChars(Secrets(body), max)
		cut = cut || cutAgain
	}
	if cut {
		return body + Ellipsis
	}
	return body
}

// clean turns newlines and tabs into spaces and drops other control characters.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}

// cutChars returns the first max characters of s, and whether anything was cut.
func cutChars(s string, max int) (string, bool) {
	n := 0
	for i := range s {
		if n == max {
			return s[:i], true
		}
		n++
	}
	return s, false
}

// Chars counts the characters (runes) of s.
func Chars(s string) int { return utf8.RuneCountInString(s) }

// Shown is the form of s for a card that shows the person what an agent asks to do (issue 36):
// secrets masked, invalid UTF-8 repaired, line breaks kept, and every character that could hide
// or reorder what is shown (control, bidi and zero-width characters) written out as its code
// point, e.g. [U+202E]; cut to at most max characters with Ellipsis.
func Shown(s string, max int) string {
	if max < 1 {
		return ""
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, string(utf8.RuneError)) {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || hiding(r):
			fmt.Fprintf(&b, "[U+%04X]", r)
		default:
			b.WriteRune(r)
		}
	}
	body, cut := cutChars(Secrets(b.String()), max)
	if cut {
		return Secrets(body) + Ellipsis
	}
	return body
}

// hiding reports the characters that change how text around them reads without showing
// themselves: bidi controls and marks, zero-width characters, the byte order mark, and other
// format characters (Unicode category Cf).
func hiding(r rune) bool {
	return unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
