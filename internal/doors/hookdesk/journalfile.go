package hookdesk

// A session's journal file (issue 38): the whole journal as one line of JSON per save, appended.
// An append is one write to a file that exists; a file written anew and renamed into place is a
// new inode and a change to the folder, and under a burst (SQLite's fsyncs on the same disk)
// such a rename waited up to 154 ms for ext4's journal, holding the folder's lock, and every other
// session's save waited behind it (up to 211 ms). The file is written anew only when it grows long, after a
// failed write, and at a session's first save after Open.
//
// A save that a crash cuts off leaves a last line without its newline: it was never answered,
// and the line before it counts. Only the last line can be cut off; a file whose last whole
// line is unreadable is set aside, as before.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Journal files: journalExt is the current form (JSON lines); legacyExt the single JSON document
// of the builds before it, read and written anew as JSON lines at Open.
const (
	journalExt = ".jsonl"
	legacyExt  = ".json"
)

// maxJournalFile is how long a journal file grows by appends before it is written anew with
// only its last journal.
const maxJournalFile = 256 << 10

// journalPath is the file of session's journal in dir.
func journalPath(dir, session string) string {
	return filepath.Join(dir, hex.EncodeToString([]byte(session))+journalExt)
}

// journalSession is the session whose journal file name is (ok false: not a journal of this
// form, ext being the form).
func journalSession(name, ext string) (string, bool) {
	base, ok := strings.CutSuffix(name, ext)
	if !ok {
		return "", false
	}
	raw, err := hex.DecodeString(base)
	if err != nil {
		return "", false
	}
	return string(raw), true
}

// lastJournal is the journal a journal file says: its last whole line (one that ends in a
// newline; a cut-off line after it is a save that was never answered).
func lastJournal(data []byte) (journal, error) {
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return journal{}, errors.New("no whole journal in the file")
	}
	line := data[bytes.LastIndexByte(data[:end], '\n')+1 : end]
	var j journal
	if err := json.Unmarshal(line, &j); err != nil {
		return journal{}, fmt.Errorf("last journal: %w", err)
	}
	return j, nil
}

// appendJournal appends one line to a journal file that exists (one write: never a partial
// line the next append would run on into; should the write fail, the file is written anew).
func appendJournal(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}
