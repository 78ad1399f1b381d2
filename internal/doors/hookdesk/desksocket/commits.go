package desksocket

// Recorded commits (issue 32): a hook that printed what it took commits it to the desk; when no
// worker answers (it died, with the embedded server the Temporal server too), the hook records
// the commit on disk before it exits, and the next worker applies the recorded commits at start,
// before its workflows run (hookdesk): what a hook printed is never handed over or typed again,
// across a worker crash.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/intentq/intentq/internal/base/private"
)

// RecordedCommit is one commit a hook could not hand the desk.
type RecordedCommit struct {
	Session string    `json:"session"`
	Key     string    `json:"key"`
	At      time.Time `json:"at"`
}

// Dir is the folder of the desk of the intentq whose data_dir is dataDir: its journals, and the
// commits hooks recorded.
func Dir(dataDir string) string { return filepath.Join(dataDir, "desk") }

// CommitsDir is where the hooks of the intentq whose data_dir is dataDir record the commits no
// worker took.
func CommitsDir(dataDir string) string { return CommitsIn(Dir(dataDir)) }

// CommitsIn is the recorded commits' folder in the desk's folder dir.
func CommitsIn(dir string) string { return filepath.Join(dir, "commits") }

// RecordCommit keeps a hook's commit on disk (private, fsynced before it returns) for the next
// worker to apply: the hook printed the take, and the desk did not answer.
func RecordCommit(dataDir, session, key string) error {
	if dataDir == "" || session == "" || key == "" {
		return errors.New("record commit: no data_dir, session or key")
	}
	data, err := json.Marshal(RecordedCommit{Session: session, Key: key, At: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("record commit: %w", err)
	}
	sum := sha256.Sum256([]byte(session + "\x00" + key))
	path := filepath.Join(CommitsDir(dataDir), hex.EncodeToString(sum[:12])+".json")
	if err := private.WriteFile(path, data); err != nil {
		return fmt.Errorf("record commit: %w", err)
	}
	return nil
}
