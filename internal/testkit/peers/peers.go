// Package peers finds the real programs the tests run against (tmux, bun). A test that needs one
// and cannot find it fails, with what to install: it never skips, so a machine without the peer
// cannot pass the suite by running less of it. `make test` installs them first (scripts/install-peers, which `.ci/run` runs too).
package peers

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Tmux returns the tmux binary, or fails the test.
func Tmux(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is not installed (Debian: apt-get install tmux; .ci/run installs it)")
	}
	return p
}

// Bun returns the bun binary: $INTENTQ_BUN, else bun on PATH, else the repository's
// .tools/node_modules/.bin/bun (npm install --no-save --prefix .tools bun); or fails the test.
func Bun(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("INTENTQ_BUN"); p != "" {
		return p
	}
	if p, err := exec.LookPath("bun"); err == nil {
		return p
	}
	if p := filepath.Join(repoRoot(), ".tools", "node_modules", ".bin", "bun"); executable(p) {
		return p
	}
	t.Fatal("bun is not installed: npm install --no-save --prefix .tools bun (.ci/run does), or set INTENTQ_BUN")
	return ""
}

// repoRoot is the repository's root, found from this file's place in it.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func executable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// Claude returns the Claude Code CLI (pinned by .ci/run: @anthropic-ai/claude-code@2.1.330):
// $INTENTQ_CLAUDE, else the repository's .tools/claude install, else claude on PATH; or fails
// the test.
func Claude(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("INTENTQ_CLAUDE"); p != "" {
		return p
	}
	if p := filepath.Join(repoRoot(), ".tools", "claude", "node_modules", ".bin", "claude"); executable(p) {
		return p
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	t.Fatal("Claude Code is not installed: npm install --no-save --prefix .tools/claude @anthropic-ai/claude-code@2.1.330 (.ci/run does), or set INTENTQ_CLAUDE")
	return ""
}

// Codex returns the Codex CLI (pinned by scripts/install-peers: @openai/codex@0.169.0):
// $INTENTQ_CODEX, else the repository's .tools/codex install, else codex on PATH; or fails the
// test.
func Codex(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("INTENTQ_CODEX"); p != "" {
		return p
	}
	if p := filepath.Join(repoRoot(), ".tools", "codex", "node_modules", ".bin", "codex"); executable(p) {
		return p
	}
	if p, err := exec.LookPath("codex"); err == nil {
		return p
	}
	t.Fatal("Codex is not installed: scripts/install-peers (make test runs it) installs @openai/codex@0.169.0 into .tools/codex, or set INTENTQ_CODEX")
	return ""
}

// Copilot returns Copilot CLI (pinned by scripts/install-peers: @github/copilot@1.0.102) and
// the cache folder its binary unpacks into on first run (about 235 MB, XDG_CACHE_HOME; shared,
// so each test's private HOME does not unpack it again): $INTENTQ_COPILOT, else the repository's
// .tools/copilot install; or fails the test.
func Copilot(t testing.TB) (bin, cache string) {
	t.Helper()
	cache = filepath.Join(repoRoot(), ".tools", "copilot", "cache")
	if p := os.Getenv("INTENTQ_COPILOT"); p != "" {
		return p, cache
	}
	if p := filepath.Join(repoRoot(), ".tools", "copilot", "node_modules", ".bin", "copilot"); executable(p) {
		return p, cache
	}
	t.Fatal("Copilot CLI is not installed: scripts/install-peers (make test runs it) installs @github/copilot@1.0.102 into .tools/copilot, or set INTENTQ_COPILOT")
	return "", ""
}

// Postgres returns the folder of PostgreSQL's server programs (initdb, pg_ctl): $PG_BIN, else
// the newest /usr/lib/postgresql/<version>/bin; or fails the test.
func Postgres(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("PG_BIN"); p != "" && executable(filepath.Join(p, "initdb")) {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if executable(filepath.Join(dirs[i], "initdb")) {
			return dirs[i]
		}
	}
	t.Fatal("PostgreSQL is not installed (Debian: apt-get install postgresql; .ci/run installs it), or set PG_BIN")
	return ""
}
