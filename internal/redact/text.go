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

// Reveal is the form of s for an approval's card (issue 61), where what is not seen is approved
// all the same: secrets masked, invalid UTF-8 repaired, and nothing left that could hide or fake
// a part of it. Control, bidi, zero-width and other invisible characters and the blanks that are
// not a plain space are written out as their code point ([U+202E]); a run of more than
// MaxBlankRun spaces and tabs becomes "[1,600 blanks]", more than two empty lines in a row
// "[40 empty lines]"; a text longer than limit characters (as shown) keeps its head and its tail,
// with "[… 1,234 of 3,000 characters not shown …]" between them.
func Reveal(s string, limit int) string {
	shown, _ := RevealCut(s, 0, 0, limit)
	return shown
}

// RevealCut is Reveal of a text whose middle was already left out (it was too long to carry):
// left characters were taken out at rune offset at of s. The mark between head and tail counts
// them too. It reports whether anything is not shown.
func RevealCut(s string, at, left, limit int) (string, bool) {
	if limit < 1 {
		return "", s != "" || left > 0
	}
	runes := []rune(s)
	at = min(max(at, 0), len(runes))
	var toks []shownToken
	if left > 0 {
		toks = append(revealTokens(string(runes[:at])), shownToken{src: left, gap: true})
		toks = append(toks, revealTokens(string(runes[at:]))...)
	} else {
		toks = revealTokens(s)
	}
	width, total := 0, 0
	for _, t := range toks {
		width += Chars(t.text)
		total += t.src
	}
	if width <= limit && left <= 0 {
		var b strings.Builder
		for _, t := range toks {
			b.WriteString(t.text)
		}
		return b.String(), false
	}
	// The head takes two thirds of what can be shown, the tail the rest; neither crosses the gap.
	mark := func(hidden int) string {
		return fmt.Sprintf("\n[… %s of %s characters not shown …]\n", Count(hidden), Count(total))
	}
	room := max(limit-Chars(mark(total)), 2)
	headRoom := room * 2 / 3
	tailRoom := room - headRoom
	head, headSrc, w := 0, 0, 0
	for head < len(toks) && !toks[head].gap && w+Chars(toks[head].text) <= headRoom {
		w += Chars(toks[head].text)
		headSrc += toks[head].src
		head++
	}
	tail, tailSrc := len(toks), 0
	w = 0
	for tail > head && !toks[tail-1].gap && w+Chars(toks[tail-1].text) <= tailRoom {
		tail--
		w += Chars(toks[tail].text)
		tailSrc += toks[tail].src
	}
	var b strings.Builder
	for _, t := range toks[:head] {
		b.WriteString(t.text)
	}
	b.WriteString(mark(total - headSrc - tailSrc))
	for _, t := range toks[tail:] {
		b.WriteString(t.text)
	}
	return b.String(), true
}

// MaxBlankRun is the longest run of spaces and tabs Reveal shows as it is.
const MaxBlankRun = 8

// shownToken is one piece of a revealed text: what is shown, and how many characters of the
// text it stands for (a gap: characters left out before, shown as none).
type shownToken struct {
	text string
	src  int
	gap  bool
}

// revealTokens is s made visible (Reveal), piece by piece: one token per character shown as it
// is, one per character written out, one per collapsed run.
func revealTokens(s string) []shownToken {
	runes := []rune(Secrets(strings.ToValidUTF8(s, string(utf8.RuneError))))
	var toks []shownToken
	for i := 0; i < len(runes); {
		r := runes[i]
		switch {
		case r == ' ' || r == '\t':
			j := i
			for j < len(runes) && (runes[j] == ' ' || runes[j] == '\t') {
				j++
			}
			if j-i > MaxBlankRun {
				toks = append(toks, shownToken{text: "[" + Count(j-i) + " blanks]", src: j - i})
			} else {
				for _, b := range runes[i:j] {
					toks = append(toks, shownToken{text: string(b), src: 1})
				}
			}
			i = j
		case r == '\n':
			// Lines holding only blanks count as empty.
			j, lines, last := i, 0, i
			for j < len(runes) && (runes[j] == '\n' || runes[j] == ' ' || runes[j] == '\t') {
				if runes[j] == '\n' {
					lines++
					last = j
				}
				j++
			}
			if lines > 3 {
				toks = append(toks, shownToken{text: "\n[" + Count(lines-1) + " empty lines]\n", src: last + 1 - i})
				i = last + 1
			} else {
				toks = append(toks, shownToken{text: "\n", src: 1})
				i++
			}
		case unicode.IsControl(r) || hiding(r) || invisible(r):
			toks = append(toks, shownToken{text: fmt.Sprintf("[U+%04X]", r), src: 1})
			i++
		default:
			toks = append(toks, shownToken{text: string(r), src: 1})
			i++
		}
	}
	return toks
}

// invisible reports the characters that show as blank or nothing though they are not a space
// (shells do not split words at them): the Unicode spaces other than U+0020, the Hangul
// fillers, the Braille blank.
func invisible(r rune) bool {
	switch r {
	case '\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800':
		return true
	}
	return r != ' ' && unicode.Is(unicode.Zs, r)
}

// Count writes n with thousands separators (1,600).
func Count(n int) string {
	if n < 0 {
		return "-" + Count(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
