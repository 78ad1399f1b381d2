package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/redact"
)

// Publisher sends a push; *activities.Ntfy is the real one.
type Publisher interface {
	Publish(ctx context.Context, p activities.Push) error
}

// NotifyState is what `doctor --notify` remembers between runs (in data_dir): the failing checks
// the person has been told about.
type NotifyState struct {
	Failing map[string]string `json:"failing"` // check -> its detail when it was reported
	At      time.Time         `json:"at"`
}

// NotifyStateFile is where `doctor --notify` keeps its NotifyState.
func NotifyStateFile(dataDir string) string { return filepath.Join(dataDir, "doctor", "notify.json") }

// Notify tells the person about changes only: one push when checks turn FAIL, one when they
// recover, nothing while the state stays the same, however often it runs. Warnings never push.
// Pushes carry check names and details (metadata; secrets masked), never message text. A push
// that fails leaves the state as it was, so the next run tries again.
func Notify(ctx context.Context, r Report, pub Publisher, topic, stateFile string, now time.Time) ([]activities.Push, error) {
	prev, err := readNotifyState(stateFile)
	if err != nil {
		return nil, err
	}
	next := NotifyState{Failing: map[string]string{}, At: now.UTC()}
	current := map[string]Result{}
	for _, res := range r.Failing() {
		current[res.Name] = res
	}
	var failed, recovered []string
	for name, res := range current {
		if _, known := prev.Failing[name]; !known {
			failed = append(failed, name+": "+res.Detail)
		}
	}
	for name := range prev.Failing {
		if _, still := current[name]; !still {
			recovered = append(recovered, name)
		}
	}
	sort.Strings(failed)
	sort.Strings(recovered)

	var sent []activities.Push
	push := func(p activities.Push) bool {
		if pub == nil || topic == "" {
			return false
		}
		p.Topic = topic
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := pub.Publish(pctx, p); err != nil {
			return false
		}
		sent = append(sent, p)
		return true
	}
	failedSent := len(failed) == 0 || push(activities.Push{
		Title:    fmt.Sprintf("intentq: %d check(s) failing", len(failed)),
		Message:  redact.Secrets(strings.Join(failed, "\n")),
		Priority: 5, Tags: []string{"rotating_light"},
	})
	recoveredSent := len(recovered) == 0 || push(activities.Push{
		Title:    "intentq: recovered",
		Message:  "ok again: " + strings.Join(recovered, ", "),
		Priority: 3, Tags: []string{"white_check_mark"},
	})
	for name, res := range current {
		if _, known := prev.Failing[name]; known || failedSent {
			next.Failing[name] = res.Detail
		}
	}
	if !recoveredSent {
		for _, name := range recovered {
			next.Failing[name] = prev.Failing[name]
		}
	}
	return sent, writeNotifyState(stateFile, next)
}

func readNotifyState(path string) (NotifyState, error) {
	st := NotifyState{Failing: map[string]string{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return NotifyState{Failing: map[string]string{}}, nil // a damaged state starts afresh
	}
	if st.Failing == nil {
		st.Failing = map[string]string{}
	}
	return st, nil
}

func writeNotifyState(path string, st NotifyState) error {
	data, _ := json.Marshal(st)
	return private.WriteFile(path, data)
}
