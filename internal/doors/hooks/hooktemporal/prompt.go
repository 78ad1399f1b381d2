package hooktemporal

// Whether Claude Code's permission prompt is still open. The terminal can answer
// while the permission hook waits for the phone, and Claude Code then ignores what the hook
// prints; the hook hands the phone's answer over only while Claude Code's own session registry
// ($CLAUDE_CONFIG_DIR or ~/.claude, sessions/<pid>.json, written by Claude Code 2.1.330) says the
// session waits at a permission prompt.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// claudeRegistryEntry is what the hook reads of one registry entry.
type claudeRegistryEntry struct {
	SessionID  string `json:"sessionId"`
	Status     string `json:"status"`
	WaitingFor string `json:"waitingFor"`
	UpdatedAt  int64  `json:"statusUpdatedAt"`
}

// ClaudeDir is the folder Claude Code keeps its state in: $CLAUDE_CONFIG_DIR, else ~/.claude.
func ClaudeDir() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".claude")
}

// claudePromptOpen reports whether Claude Code's registry in dir shows the session sessionID
// waiting at a permission prompt (open), and whether it has an entry for the session at all
// (known: a Claude Code before the registry, or a session not found, tells nothing). Of several
// entries for the session, the last updated counts.
func claudePromptOpen(dir, sessionID string) (open, known bool) {
	if dir == "" || sessionID == "" {
		return false, false
	}
	files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*.json"))
	var last claudeRegistryEntry
	for _, f := range files {
		b, err := os.ReadFile(f)
		var e claudeRegistryEntry
		if err != nil || json.Unmarshal(b, &e) != nil || e.SessionID != sessionID {
			continue
		}
		if !known || e.UpdatedAt > last.UpdatedAt {
			last, known = e, true
		}
	}
	return known && last.Status == "waiting" && strings.Contains(last.WaitingFor, "permission"), known
}
