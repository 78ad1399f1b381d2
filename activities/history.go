package activities

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
	"time"

	"go.temporal.io/sdk/temporal"
)

// HistoryAppendName is History.Append; HistoryAppendAllName is History.AppendAll.
const (
	HistoryAppendName    = "HistoryAppend"
	HistoryAppendAllName = "HistoryAppendAll"
)

// HistoryEntry is one line of a session's history file (SPEC H1-H3): something intentq typed
// into the session, with its wrapper, exactly as typed.
type HistoryEntry struct {
	// Seq numbers the entries of one file from 1, without gaps.
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	Kind    string    `json:"kind"`
	// ID is the delivery request the entry belongs to.
	ID   string `json:"id"`
	Text string `json:"text"`
}

// AppendRequest asks for one entry to be appended to the history file at Path. Entry.ID is the
// idempotency key; Entry.Seq is assigned by Append.
type AppendRequest struct {
	// Session names the session whose history file (from the worker's config) is appended to;
	// Path is only read from requests of older builds (and must then be a configured file).
	Session string       `json:"session,omitempty"`
	Path    string       `json:"path,omitempty"`
	Entry   HistoryEntry `json:"entry"`
}

// History appends to session history files. Appends to one file are ordered and exactly once:
// the session workflow appends one entry at a time, each under the ID of its delivery request,
// and Append skips an entry whose ID the file already ends with (an activity retry, or a worker
// that died after writing). Sequence numbers follow the file, so they have no gaps.
type History struct {
	// Sessions resolves a request's session to its history file from the worker's config (the
	// worker always sets it); nil: Path is taken as it is (tests and tools).
	Sessions *Directory
}

// Append writes req.Entry as one JSON line numbered after the file's last entry, unless that
// last entry has the same ID, and returns the entry's sequence number. A torn last line (a crash
// mid-write) is cut off first: it can only be an entry whose append was never acknowledged, and
// which is being retried now. Every line is fsynced.
func (h History) Append(ctx context.Context, req AppendRequest) (int64, error) {
	return h.AppendAll(ctx, AppendAllRequest{Session: req.Session, Path: req.Path, Entries: []HistoryEntry{req.Entry}})
}

// AppendAllRequest asks for entries to be appended in order, as one write: the entries of
// messages typed together.
type AppendAllRequest struct {
	// Session and Path as in AppendRequest.
	Session string         `json:"session,omitempty"`
	Path    string         `json:"path,omitempty"`
	Entries []HistoryEntry `json:"entries"`
}

// AppendAll writes req.Entries as JSON lines numbered after the file's last entry, in one write
// and one fsync, exactly once: when the file already ends with one of them (a retry after a
// crash mid-write, whose torn last line is cut), only the entries after it are written. It
// returns the sequence number of the last entry.
func (h History) AppendAll(ctx context.Context, req AppendAllRequest) (int64, error) {
	if len(req.Entries) == 0 {
		return 0, temporal.NewNonRetryableApplicationError("no history entries to append", "HistoryEntryInvalid", nil)
	}
	ep, err := h.Sessions.resolve(req.Session, Endpoint{HistoryPath: req.Path}, func(ep Endpoint) bool { return ep.HistoryPath == req.Path })
	if err != nil {
		return 0, err
	}
	if ep.HistoryPath == "" {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %q keeps no history file", req.Session), ErrTypeUnknownSession, nil)
	}
	req.Path = ep.HistoryPath
	for _, e := range req.Entries {
		if e.ID == "" {
			return 0, temporal.NewNonRetryableApplicationError("history entry without an ID", "HistoryEntryInvalid", nil)
		}
	}
	if err := os.MkdirAll(filepath.Dir(req.Path), 0o700); err != nil {
		return 0, fmt.Errorf("history %s: %w", req.Path, err)
	}
	f, err := os.OpenFile(req.Path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("history %s: %w", req.Path, err)
	}
	defer f.Close()
	last, end, err := lastEntry(f)
	if err != nil {
		return 0, fmt.Errorf("history %s: %w", req.Path, err)
	}
	todo, seq := req.Entries, int64(0)
	if last != nil {
		seq = last.Seq
		for i, e := range req.Entries {
			if e.ID == last.ID {
				todo = req.Entries[i+1:] // written up to here before
			}
		}
	}
	if len(todo) == 0 {
		return seq, nil
	}
	var buf bytes.Buffer
	for _, e := range todo {
		seq++
		e.Seq = seq
		line, err := json.Marshal(e)
		if err != nil {
			return 0, fmt.Errorf("history %s: encode entry %s: %w", req.Path, e.ID, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("history %s: cut torn line: %w", req.Path, err)
	}
	if _, err := f.WriteAt(buf.Bytes(), end); err != nil {
		return 0, fmt.Errorf("history %s: append seq %d-%d: %w", req.Path, seq-int64(len(todo))+1, seq, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("history %s: sync: %w", req.Path, err)
	}
	return seq, nil
}

// tailWindow is how much of the file's end lastEntry reads; entries are far smaller.
const tailWindow = 1 << 20

// lastEntry returns the last complete, parsable entry of f and the offset just past it (where
// the next line goes). Bytes after it (a torn line) are not counted.
func lastEntry(f *os.File) (*HistoryEntry, int64, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := info.Size()
	start := max(0, size-tailWindow)
	buf := make([]byte, size-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	end := int64(bytes.LastIndexByte(buf, '\n') + 1) // complete lines end here
	complete := buf[:end]
	for len(complete) > 0 {
		lineStart := bytes.LastIndexByte(complete[:len(complete)-1], '\n') + 1
		var e HistoryEntry
		if err := json.Unmarshal(complete[lineStart:len(complete)-1], &e); err == nil {
			return &e, start + end, nil
		}
		// A complete line that does not parse is left as it is; look further back for the
		// last good entry but keep appending after it all.
		complete = complete[:lineStart]
	}
	return nil, start + end, nil
}

// ReadHistory returns the entries of a history file in order. Lines that do not parse (a torn
// last line) are skipped and counted.
func ReadHistory(r io.Reader) (entries []HistoryEntry, skipped int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e HistoryEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			skipped++
			continue
		}
		entries = append(entries, e)
	}
	return entries, skipped, sc.Err()
}
