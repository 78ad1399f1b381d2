package toolpolicy

import "strings"

// editing are the tools that change files.
var editing = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// Writes reports whether a run under this policy may change files: it allows everything, an
// editing tool (Write, Edit, MultiEdit, NotebookEdit), any shell command, or a shell command
// beyond the read-only ones of the telegram default (ls, cat, git status, ...). A run whose
// policy does not write gets its work folder read-only from the kernel (headless.Sandbox).
func (e Effective) Writes() bool {
	if e.AllowAll {
		return true
	}
	for _, a := range e.Allowed {
		name, _, hasArg := strings.Cut(a, "(")
		switch {
		case editing[name]:
			return true
		case name == "Bash" && (!hasArg || !contains(readOnlyBash, a)):
			return true
		}
	}
	return false
}
