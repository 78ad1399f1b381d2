// Package spool is the door that loses nothing while the worker is down: the patched Telegram
// plugin appends every message, before anything else, as one JSON line to a spool file of its
// own under data_dir/spool (spool-<pid>.jsonl), then posts it to ingest. The worker drains the
// spool at start and whenever it grows: it records each entry (the intent ID makes a message
// that also came through ingest one intent) and removes a file only once all of it is recorded.
// The plugin's canary and error records (data_dir/spool/events.jsonl) are read here too.
package spool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// Files in the spool directory.
const (
	// FilePrefix and FileSuffix name a plugin process's spool file: spool-<pid>.jsonl.
	FilePrefix = "spool-"
	FileSuffix = ".jsonl"
	// drainingSuffix marks a spool file the worker has taken over (renamed) to drain.
	drainingSuffix = ".draining"
	// EventsFile holds the plugin's canary ("loaded") and error records.
	EventsFile = "events.jsonl"
	// settle is how long a file taken over is left alone before it is read, so a write the
	// plugin began before the rename lands first.
	settle = 100 * time.Millisecond
)

// Dir is the spool directory under data_dir.
func Dir(dataDir string) string { return filepath.Join(dataDir, "spool") }

// Entry is one spooled message, as the plugin's block writes it.
type Entry struct {
	ChatID    json.RawMessage `json:"chat_id"`
	MessageID json.RawMessage `json:"message_id"`
	Text      string          `json:"text"`
	User      string          `json:"user"`
	TS        int64           `json:"ts"`
}

// Recorder records messages; *intent.Recorder is the real one.
type Recorder interface {
	Record(ctx context.Context, m intent.Message) (intent.Result, error)
}

// Drainer records what the plugin spooled.
type Drainer struct {
	Dir      string
	Recorder Recorder
	Logger   *zap.Logger
	// OnErrors is told of the plugin's new error records (each once, also those written while
	// the worker was down); nil: they are only logged.
	OnErrors func(ctx context.Context, errs []Event)
}

// offsetFile keeps how far events.jsonl has been read, across restarts.
const offsetFile = "events.offset"

// CheckEvents reads the plugin's records written since the last call (or the last run) and
// hands the error records to OnErrors.
func (d *Drainer) CheckEvents(ctx context.Context) error {
	var offset int64
	if b, err := os.ReadFile(filepath.Join(d.Dir, offsetFile)); err == nil {
		offset, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	events, next, err := Events(d.Dir, offset)
	if err != nil || next == offset {
		return err
	}
	var errs []Event
	for _, e := range events {
		switch e.Kind {
		case "error":
			errs = append(errs, e)
			d.logger().Error("plugin: the patched block failed for a message", zap.String("chat", intent.IDString(e.ChatID)),
				zap.String("message", intent.IDString(e.MessageID)), zap.String("error", e.Error), zap.Int("pid", e.PID))
		case "loaded":
			d.logger().Info("plugin: patched block loaded", zap.String("file", e.File), zap.Int("pid", e.PID), zap.Int("version", e.Version))
		}
	}
	if len(errs) > 0 && d.OnErrors != nil {
		d.OnErrors(ctx, errs)
	}
	if err := os.WriteFile(filepath.Join(d.Dir, offsetFile), []byte(strconv.FormatInt(next, 10)), 0o600); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// Stats say what one Drain did.
type Stats struct {
	Recorded int // entries recorded (new or already there)
	Invalid  int // entries that can never be recorded (logged, dropped)
	Torn     int // torn lines repaired (a writer died mid-line)
	Files    int // spool files finished and removed
}

// DrainConcurrency is how many spooled entries are recorded at once.
const DrainConcurrency = 16

// ErrNotRecorded: an entry could not be recorded now (Temporal down); its file stays for the
// next drain.
var ErrNotRecorded = errors.New("spool: entry not recorded yet")

// Drain takes over every spool file (renaming it, so the plugin starts a new one), records its
// entries in order, and removes it once all are recorded. A file whose entry cannot be recorded
// now stays, renamed, for the next Drain. Files are drained oldest first.
func (d *Drainer) Drain(ctx context.Context) (Stats, error) {
	var st Stats
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return st, fmt.Errorf("spool: %w", err)
	}
	entries, err := os.ReadDir(d.Dir)
	if err != nil {
		return st, fmt.Errorf("spool: %w", err)
	}
	var files []string
	took := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case !e.Type().IsRegular():
		case strings.HasSuffix(name, drainingSuffix):
			files = append(files, filepath.Join(d.Dir, name))
		case strings.HasPrefix(name, FilePrefix) && strings.HasSuffix(name, FileSuffix):
			taken := filepath.Join(d.Dir, name+"."+strconv.FormatInt(time.Now().UnixNano(), 10)+drainingSuffix)
			if err := os.Rename(filepath.Join(d.Dir, name), taken); err != nil {
				return st, fmt.Errorf("spool: take over %s: %w", name, err)
			}
			files, took = append(files, taken), true
		}
	}
	if took {
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(settle):
		}
	}
	sort.Slice(files, func(i, j int) bool { return modTime(files[i]).Before(modTime(files[j])) })
	for _, f := range files {
		if err := d.drainFile(ctx, f, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

func modTime(path string) time.Time {
	info, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// drainFile records every entry of one taken-over file and removes it.
func (d *Drainer) drainFile(ctx context.Context, path string, st *Stats) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("spool: read %s: %w", path, err)
	}
	type entry struct {
		offset int
		line   []byte
		last   bool
	}
	var lines []entry
	for offset := 0; offset < len(data); {
		end := bytes.IndexByte(data[offset:], '\n')
		line, next := data[offset:], len(data)
		if end >= 0 {
			line, next = data[offset:offset+end], offset+end+1
		}
		if len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, entry{offset, line, end < 0})
		}
		offset = next
	}
	// Entries are recorded DrainConcurrency at a time (starting an intent is idempotent, and
	// spooled messages are not typed, so their order does not matter); the file goes only when
	// every entry is recorded.
	stats := make([]Stats, len(lines))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(DrainConcurrency)
	for i, e := range lines {
		g.Go(func() error { return d.record(gctx, path, e.offset, e.line, e.last, &stats[i]) })
	}
	err = g.Wait()
	for _, s := range stats {
		st.Recorded, st.Invalid, st.Torn = st.Recorded+s.Recorded, st.Invalid+s.Invalid, st.Torn+s.Torn
	}
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("spool: remove %s: %w", path, err)
	}
	st.Files++
	return nil
}

// record records one line. A line that does not parse is torn (a writer died mid-write; it
// can only be the last one of its file) or damaged: it is logged with its place, never its
// text, and passed over.
func (d *Drainer) record(ctx context.Context, path string, offset int, line []byte, last bool, st *Stats) error {
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil {
		st.Torn++
		d.logger().Error("spool: torn or damaged line repaired (passed over)", zap.String("file", filepath.Base(path)),
			zap.Int("offset", offset), zap.Int("bytes", len(line)), zap.Bool("last", last))
		return nil
	}
	msg := intent.Message{ChatID: intent.IDString(e.ChatID), MessageID: intent.IDString(e.MessageID), Text: e.Text, User: e.User, Source: workflows.SourceIngest}
	if e.TS > 0 {
		msg.SentAt = time.Unix(e.TS, 0).UTC()
	}
	res, err := d.Recorder.Record(ctx, msg)
	var invalid *intent.InvalidError
	switch {
	case errors.As(err, &invalid):
		st.Invalid++
		d.logger().Error("spool: entry cannot be recorded", zap.String("file", filepath.Base(path)), zap.Int("offset", offset),
			zap.String("chat", msg.ChatID), zap.String("message", msg.MessageID), zap.String("field", invalid.Field), zap.String("reason", invalid.Reason))
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s at %d: %w", ErrNotRecorded, filepath.Base(path), offset, err)
	}
	st.Recorded++
	d.logger().Info("intent recorded", zap.String("intent", res.ID), zap.String("session", res.Session), zap.Bool("created", res.Created), zap.String("door", "spool"))
	return nil
}

// Run drains at once, then whenever the spool directory changes (fsnotify) and at least every
// retry (a drain that met Temporal down is tried again), until ctx ends.
func (d *Drainer) Run(ctx context.Context, retry time.Duration) error {
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("spool: watch %s: %w", d.Dir, err)
	}
	defer w.Close()
	if err := w.Add(d.Dir); err != nil {
		return fmt.Errorf("spool: watch %s: %w", d.Dir, err)
	}
	tick := time.NewTicker(retry)
	defer tick.Stop()
	for {
		if st, err := d.Drain(ctx); err != nil && ctx.Err() == nil {
			d.logger().Warn("spool: drain incomplete; tried again soon", zap.Error(err), zap.Int("recorded", st.Recorded))
		} else if st.Recorded+st.Invalid+st.Torn > 0 {
			d.logger().Info("spool drained", zap.Int("recorded", st.Recorded), zap.Int("invalid", st.Invalid), zap.Int("torn", st.Torn), zap.Int("files", st.Files))
		}
		if err := d.CheckEvents(ctx); err != nil {
			d.logger().Warn("spool: plugin records", zap.Error(err))
		}
		if !d.wait(ctx, w, tick.C) {
			return nil
		}
	}
}

// wait blocks until a spool file or the events file is created or written, or tick fires; it
// reports false when ctx ends. The worker's own renames and removals do not wake it.
func (d *Drainer) wait(ctx context.Context, w *fsnotify.Watcher, tick <-chan time.Time) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev := <-w.Events:
			name := filepath.Base(ev.Name)
			spooled := strings.HasPrefix(name, FilePrefix) && strings.HasSuffix(name, FileSuffix)
			if ev.Op&(fsnotify.Create|fsnotify.Write) != 0 && (spooled || name == EventsFile) {
				return true
			}
		case err := <-w.Errors:
			d.logger().Warn("spool: watch", zap.Error(err))
		case <-tick:
			return true
		}
	}
}

func (d *Drainer) logger() *zap.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return zap.NewNop()
}

// Event is a record the plugin's block writes: "loaded" when the patched plugin starts (the
// canary, with the file that runs), "error" when the block failed for a message.
type Event struct {
	Kind      string          `json:"kind"`
	At        time.Time       `json:"at"`
	PID       int             `json:"pid,omitempty"`
	File      string          `json:"file,omitempty"`
	Version   int             `json:"version,omitempty"`
	ChatID    json.RawMessage `json:"chat_id,omitempty"`
	MessageID json.RawMessage `json:"message_id,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// Events reads the plugin's records from offset on, returning them and the offset after the
// last whole line.
func Events(dir string, offset int64) ([]Event, int64, error) {
	f, err := os.Open(filepath.Join(dir, EventsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, fmt.Errorf("spool: events: %w", err)
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() < offset {
		offset = 0 // the file was replaced
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, fmt.Errorf("spool: events: %w", err)
	}
	var out []Event
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break // EOF, or a line still being written: read it next time
		}
		offset += int64(len(line))
		var e Event
		if json.Unmarshal(line, &e) == nil && e.Kind != "" {
			out = append(out, e)
		}
	}
	return out, offset, nil
}

// Last returns the newest record of each kind ("loaded", "error"), nil when there is none.
func Last(dir string) (loaded, failed *Event, err error) {
	events, _, err := Events(dir, 0)
	for i := range events {
		switch events[i].Kind {
		case "loaded":
			loaded = &events[i]
		case "error":
			failed = &events[i]
		}
	}
	return loaded, failed, err
}
