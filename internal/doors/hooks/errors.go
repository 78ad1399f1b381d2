package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/intentq/intentq/internal/base/private"
)

// ErrorRecord is the last problem that made the hooks allow without doing their work (a config
// they could not load), kept in data_dir so that `starter doctor` shows it.
type ErrorRecord struct {
	At    time.Time `json:"at"`
	Cause string    `json:"cause"`
	// Since is when this cause was first seen; Count how many hook runs met it.
	Since time.Time `json:"since"`
	Count int       `json:"count"`
}

// ErrorFile is where the hooks keep their ErrorRecord.
func ErrorFile(dataDir string) string { return filepath.Join(dataDir, "hooks", "last-error.json") }

// RecordError keeps cause as the hooks' last error; isNew says the cause differs from the one
// recorded before (so the person is told once per cause, not once per hook run).
func RecordError(dataDir, cause string, now time.Time) (rec ErrorRecord, isNew bool, err error) {
	prev, err := LastError(dataDir)
	if err != nil {
		prev = nil // an unreadable record is replaced
	}
	rec = ErrorRecord{At: now.UTC(), Cause: cause, Since: now.UTC(), Count: 1}
	if prev != nil && prev.Cause == cause {
		rec.Since, rec.Count = prev.Since, prev.Count+1
	}
	isNew = prev == nil || prev.Cause != cause
	data, _ := json.Marshal(rec)
	if err := private.WriteFile(ErrorFile(dataDir), data); err != nil {
		return rec, isNew, fmt.Errorf("record hook error: %w", err)
	}
	return rec, isNew, nil
}

// LastError is the hooks' recorded error, nil when there is none.
func LastError(dataDir string) (*ErrorRecord, error) {
	data, err := os.ReadFile(ErrorFile(dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the hooks' last error: %w", err)
	}
	var rec ErrorRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("read the hooks' last error %s: %w", ErrorFile(dataDir), err)
	}
	return &rec, nil
}

// ClearError forgets the recorded error once the hooks work again.
func ClearError(dataDir string) error {
	if err := os.Remove(ErrorFile(dataDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear the hooks' last error: %w", err)
	}
	return nil
}

// TakeBackoff is how long the hooks stop asking the session for waiting messages after a take
// found no worker (each would wait TakeBudget, after every tool call of the agent); they report
// their events meanwhile, and the messages wait.
const TakeBackoff = 30 * time.Second

// takeBackoffFile marks when a take last found no worker.
func takeBackoffFile(dataDir string) string {
	return filepath.Join(dataDir, "hooks", "take-unanswered")
}

// takeBackingOff reports whether a take found no worker less than TakeBackoff ago. A mark from
// the future (the clock was set back) is no back-off; one up to clockSkew ahead is: the file's
// time comes from the kernel's clock, which a virtual CPU's may trail by a little.
func takeBackingOff(dataDir string, now time.Time) bool {
	if dataDir == "" {
		return false
	}
	info, err := os.Stat(takeBackoffFile(dataDir))
	return err == nil && now.Sub(info.ModTime()) < TakeBackoff && !info.ModTime().After(now.Add(clockSkew))
}

// clockSkew is how far ahead of this process's clock a file's time may be and still be now.
const clockSkew = time.Second

// markTakeUnanswered starts the back-off; clearTakeBackoff ends it once a take is answered.
func markTakeUnanswered(dataDir string) error {
	if dataDir == "" {
		return nil
	}
	return private.WriteFile(takeBackoffFile(dataDir), nil)
}

func clearTakeBackoff(dataDir string) {
	if dataDir != "" {
		_ = os.Remove(takeBackoffFile(dataDir))
	}
}
