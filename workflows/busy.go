package workflows

import (
	"slices"
	"strings"
)

// Busy reports whether pane text (the bottom lines of a pane) shows the CLI at work: whether
// any of the patterns occurs in it, case-sensitively. It returns the first pattern found. Empty
// patterns never match.
func Busy(pane string, patterns []string) (string, bool) {
	for _, p := range patterns {
		if p != "" && strings.Contains(pane, p) {
			return p, true
		}
	}
	return "", false
}

// Blocked reports whether pane text (the bottom lines) shows something a keystroke must not
// reach: a dialog or menu (any of dialogs; a digit or Enter could approve a tool call), or a
// person's draft on the input line (text after prompt on the last line that starts with it,
// unless it is one of the CLI's placeholders for an empty line). It returns what it found.
func Blocked(pane string, dialogs []string, prompt string, placeholders ...string) (string, bool) {
	if p, ok := Busy(pane, dialogs); ok {
		return "dialog: " + p, true
	}
	if line, ok := InputLine(pane, prompt); ok && line != "" && !slices.Contains(placeholders, line) {
		return "a draft on the input line", true
	}
	return "", false
}

// InputLine is the text on the CLI's input line: after prompt on the last line of pane that
// starts with it, trimmed; ok is false when no line does (or prompt is empty).
func InputLine(pane, prompt string) (string, bool) {
	if prompt == "" {
		return "", false
	}
	lines := strings.Split(pane, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), prompt); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}
