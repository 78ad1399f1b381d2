package peers

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Gemini returns the Gemini CLI (pinned by scripts/install-peers: @google/gemini-cli@0.61.0;
// issue 25): $INTENTQ_GEMINI, else the repository's .tools/gemini install, else gemini on PATH;
// or fails the test.
func Gemini(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("INTENTQ_GEMINI"); p != "" {
		return p
	}
	if p := filepath.Join(repoRoot(), ".tools", "gemini", "node_modules", ".bin", "gemini"); executable(p) {
		return p
	}
	if p, err := exec.LookPath("gemini"); err == nil {
		return p
	}
	t.Fatal("Gemini CLI is not installed: scripts/install-peers (make test runs it) installs @google/gemini-cli@0.61.0 into .tools/gemini, or set INTENTQ_GEMINI")
	return ""
}
