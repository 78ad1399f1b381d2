package workflows

import "strings"

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
