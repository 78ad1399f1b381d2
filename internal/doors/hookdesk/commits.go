package hookdesk

// Recorded commits (issue 32): a hook that printed what it took commits it to the desk; when no
// worker answers (it died, with the embedded server the Temporal server too), the hook records
// the commit on disk before it exits, and the next worker applies the recorded commits at start,
// before its workflows run: what a hook printed is never handed over or typed again, across a
// worker crash.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
)

// applyRecorded applies the commits hooks recorded under dir/commits (the desk's folder): each is
// the desk's commit now (journaled, passed on), and its file goes once the session has it.
func (d *Desk) applyRecorded() error {
	dir := desksocket.CommitsIn(d.dir)
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
		var c desksocket.RecordedCommit
		if err := json.Unmarshal(data, &c); err != nil || c.Session == "" || c.Key == "" {
			d.log.Error("hook desk: a recorded commit is unreadable; set aside", zap.String("file", e.Name()), zap.Error(err))
			_ = os.Rename(path, path+".unreadable")
			continue
		}
		d.log.Info("hook desk: a commit a hook recorded while no worker answered is applied", zap.String("session", c.Session), zap.String("take", c.Key))
		h := d.lock(c.Session)
		err = d.commit(c.Session, h, c.Key, func() { _ = os.Remove(path) })
		h.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}
