package toolpolicy

import "testing"

// IsPlant, for the sweep after a run: any name of the path, in any case, as a case-insensitive
// file system may take it.
func TestIsPlant(t *testing.T) {
	for rel, want := range map[string]bool{
		"HEAD": true, "head": true, "sub/HEAD": true, "a/b/HEAD/x": true,
		".git": true, "proj/.git/config": true, "proj/.GIT/config": true, ".git./config": true, ".git /config": true,
		".g\u200cit": true, "x/.envrc": true, ".vscode/tasks.json": true, "a/.idea": true, ".husky/pre-commit": true,
		".githooks": true, ".pre-commit-config.yaml": true, "docs/.claude/settings.json": true, ".mcp.json": true,
		".codex": true, ".gemini": true, ".copilot": true, "CLAUDE.md": true, "sub/claude.md": true,
		"CLAUDE.local.md": true, "AGENTS.md": true, "GEMINI.md": true,
		"": false, ".": false, "README.md": false, "HEADLINES": false, "trap/config": false, "objects/refs": false,
		".gitignore": false, ".github/workflows/ci.yml": false, "docs/agents.md.bak": false, "git": false,
	} {
		if got := IsPlant(rel); got != want {
			t.Errorf("IsPlant(%q) = %v, want %v", rel, got, want)
		}
	}
}
