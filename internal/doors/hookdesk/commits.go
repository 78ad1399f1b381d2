package hookdesk

// Recorded commits (issue 32): a hook that printed what it took commits it to the desk; when no
// worker answers (it died, with the embedded server the Temporal server too), the hook records
// the commit on disk before it exits, and the next worker applies the recorded commits at start,
// before its workflows run: what a hook printed is never handed over or typed again, across a
// worker crash.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/base/private"
)

// recordedCommit is one commit a hook could not hand the desk.
type recordedCommit struct {
	Session string    `json:"session"`
	Key     string    `json:"key"`
	At      time.Time `json:"at"`
}

// Dir is the folder of the desk of the intentq whose data_dir is dataDir: its journals, and the
// commits hooks recorded.
func Dir(dataDir string) string { return filepath.Join(dataDir, "desk") }

// CommitsDir is where the hooks of the intentq whose data_dir is dataDir record the commits no
// worker took.
func CommitsDir(dataDir string) string { return commitsIn(Dir(dataDir)) }

// commitsIn is the recorded commits' folder in the desk's folder dir.
func commitsIn(dir string) string { return filepath.Join(dir, "commits") }

// RecordCommit keeps a hook's commit on disk (private, fsynced before it returns) for the next
// worker to apply: the hook printed the take, and the desk did not answer.
func RecordCommit(dataDir, session, key string) error {
	if dataDir == "" || session == "" || key == "" {
		return errors.New("record commit: no data_dir, session or key")
	}
	data, err := json.Marshal(recordedCommit{Session: session, Key: key, At: time.Now().UTC()})
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

// applyRecorded applies the commits hooks recorded under dir/commits (the desk's folder): each is
// the desk's commit now (journaled, passed on), and its file goes once the session has it.
func (d *Desk) applyRecorded() error {
	dir := commitsIn(d.dir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hook desk: recorded commits: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("hook desk: recorded commit %s: %w", e.Name(), err)
		}
		var c recordedCommit
		if err := json.Unmarshal(data, &c); err != nil || c.Session == "" || c.Key == "" {
			d.log.Error("hook desk: a recorded commit is unreadable; set aside", zap.String("file", e.Name()), zap.Error(err))
			_ = os.Rename(path, path+".unreadable")
			continue
		}
		d.log.Info("hook desk: a commit a hook recorded while no worker answered is applied", zap.String("session", c.Session), zap.String("take", c.Key))
		if err := d.commit(c.Session, c.Key, func() { _ = os.Remove(path) }); err != nil {
			return err
		}
	}
	return nil
}
