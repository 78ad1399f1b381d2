// Package archive keeps what a session labelled important or audit did beyond the namespace's
// retention (SPEC P9): closed intents and finished headless prompts are appended, once each, to
// JSON Lines files under data_dir/archive before Temporal deletes them.
package archive

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// Labels that keep a session's records forever.
var keepLabels = map[string]bool{"important": true, "audit": true}

// Kept reports whether a session's records are archived.
func Kept(s config.Session) bool {
	for _, l := range s.Labels {
		if keepLabels[l] {
			return true
		}
	}
	return false
}

// Entry is one archived record.
type Entry struct {
	Kind       string    `json:"kind"` // intent or prompt
	ID         string    `json:"id"`
	Session    string    `json:"session"`
	ArchivedAt time.Time `json:"archived_at"`
	Record     any       `json:"record"`
}

// Export appends every ended intent and finished prompt of the kept sessions that is not in
// the archive yet. It returns how many entries it wrote.
func Export(ctx context.Context, c client.Client, cfg *config.Config) (int, error) {
	written := 0
	for _, name := range cfg.SessionNames() {
		s := cfg.Sessions[name]
		if !Kept(s) {
			continue
		}
		path := filepath.Join(cfg.DataDir, "archive", name+".jsonl")
		have, err := archivedIDs(path)
		if err != nil {
			return written, err
		}
		var entries []Entry
		now := time.Now().UTC()
		for _, status := range []string{workflows.StatusClosed, workflows.StatusIgnored} {
			list, err := intent.List(ctx, c, intent.Filter{Session: name, Status: status})
			if err != nil {
				return written, err
			}
			for _, it := range list {
				if have[it.ID] {
					continue
				}
				v, err := intent.Show(ctx, c, it.ID)
				if err != nil {
					return written, fmt.Errorf("archive %s: %w", it.ID, err)
				}
				entries = append(entries, Entry{Kind: "intent", ID: it.ID, Session: name, ArchivedAt: now, Record: v})
			}
		}
		if s.Mode == config.ModeHeadless {
			st, err := headless.Audit(ctx, c, name)
			if err != nil {
				return written, err
			}
			for _, p := range st.Prompts {
				if p.FinishedAt != nil && !have[p.ID] {
					entries = append(entries, Entry{Kind: "prompt", ID: p.ID, Session: name, ArchivedAt: now, Record: p})
				}
			}
		}
		if err := appendEntries(path, entries); err != nil {
			return written, err
		}
		written += len(entries)
	}
	return written, nil
}

func archivedIDs(path string) (map[string]bool, error) {
	ids := map[string]bool{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return ids, nil
	}
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			ids[e.ID] = true
		}
	}
	return ids, sc.Err()
}

func appendEntries(path string, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return fmt.Errorf("archive %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("archive %s: %w", path, err)
	}
	return f.Close()
}
