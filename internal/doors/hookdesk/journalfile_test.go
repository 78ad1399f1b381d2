package hookdesk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/intentq/intentq/workflows"
)

// inode is the file's inode number: the same one means it was appended to, not written anew.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

func lines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return bytes.Count(data, []byte("\n"))
}

// Issue 38: after a session's first save a take appends a line to its journal file, in one
// write to the same file (no new file, no rename); a restarted desk reads the last whole line,
// and a line a crash cut off (never answered) does not count.
func TestJournalAppendsAndReadsTheLastWholeLine(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, (&signals{}).send, nil)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: "s", Key: "standing/s/1", Messages: msgs("1")}))
	path := journalPath(dir, "s")
	before := inode(t, path)
	res, err := d.Take("s", workflows.TakeRequest{Key: "stop/a", Event: workflows.EventStop})
	require.NoError(t, err)
	require.Equal(t, "standing/s/1", res.Key)
	require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: "s", Key: "standing/s/2", Messages: msgs("2")}))
	require.Equal(t, before, inode(t, path), "appended to, not written anew")
	require.Equal(t, 3, lines(t, path))

	// A save cut off by a crash: part of a line, no newline. It says offer 2 was taken, but no
	// hook was told: the line before it counts.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"offers":[{"key":"standing/s/2","state":"taken","taken":{"hook":"stop/b"`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	d2, err := Open(dir, (&signals{}).send, nil)
	require.NoError(t, err)
	w, err := d2.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "s", Key: "standing/s/1"})
	require.NoError(t, err)
	require.Equal(t, "stop/a", w.Taken.Hook, "the take is known after the restart")
	w, err = d2.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "s", Key: "standing/s/2"})
	require.NoError(t, err)
	require.True(t, w.Withdrawn, "the cut-off line said taken; the last whole line said open")
	require.Equal(t, 1, lines(t, path), "the first save after a start writes the file anew, without the cut-off line")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(data), "stop/b")
}

// Issue 38: a journal file of the builds before (one JSON document, .json) is read at Open and
// written as a journal file of JSON lines; the old file goes.
func TestJournalOfTheFormBeforeIsConverted(t *testing.T) {
	dir := t.TempDir()
	old := journal{Offers: []*offer{{Key: "standing/s/1", Messages: msgs("1"), State: stateTaken,
		Taken: &workflows.StandingTaken{Key: "standing/s/1", Hook: "stop/a", Event: workflows.EventStop, IDs: []string{"1"}}, TakenSent: true}}}
	data, err := json.Marshal(old)
	require.NoError(t, err)
	legacy := filepath.Join(dir, "73.json")
	require.NoError(t, os.WriteFile(legacy, data, 0o600))

	d, err := Open(dir, (&signals{}).send, nil)
	require.NoError(t, err)
	_, err = os.Stat(legacy)
	require.ErrorIs(t, err, os.ErrNotExist, "the old file goes")
	require.Equal(t, journalPath(dir, "s"), filepath.Join(dir, "73.jsonl"))
	require.Equal(t, 1, lines(t, filepath.Join(dir, "73.jsonl")))
	w, err := d.Withdraw(context.Background(), workflows.DeskWithdrawRequest{Session: "s", Key: "standing/s/1"})
	require.NoError(t, err)
	require.Equal(t, "stop/a", w.Taken.Hook)
}

// Issue 38: a journal file is written anew with only its last journal once appends would take it
// past maxJournalFile; every state on the way reads back.
func TestJournalFileStaysShort(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, (&signals{}).send, nil)
	require.NoError(t, err)
	ctx := context.Background()
	path := journalPath(dir, "s")
	big := strings.Repeat("x", 4<<10)
	rewritten := false
	for i := range 60 {
		key := "standing/s/" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: "s", Key: key, Messages: []workflows.DeliveryRequest{{ID: key, Text: big}}}))
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.LessOrEqual(t, fi.Size(), int64(maxJournalFile))
		if i > 0 && lines(t, path) == 1 {
			rewritten = true
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		j, err := lastJournal(data)
		require.NoError(t, err)
		require.Equal(t, key, j.Offers[len(j.Offers)-1].Key)
		require.Equal(t, stateOpen, j.Offers[len(j.Offers)-1].State)
	}
	require.True(t, rewritten, "written anew once long")
}

// Issue 38: an append that fails after writing part of its line is written anew whole: the next
// start reads what the desk answered.
func TestJournalFailedAppendIsWrittenAnew(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, (&signals{}).send, nil)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: "s", Key: "standing/s/1", Messages: msgs("1")}))
	d.appendTo = func(path string, line []byte) error {
		require.NoError(t, appendJournal(path, line[:len(line)/2]))
		return errors.New("no space left on device")
	}
	res, err := d.Take("s", workflows.TakeRequest{Key: "stop/a", Event: workflows.EventStop})
	require.NoError(t, err)
	require.Equal(t, "standing/s/1", res.Key)
	require.Equal(t, 1, lines(t, journalPath(dir, "s")), "written anew, whole")

	d2, err := Open(dir, (&signals{}).send, nil)
	require.NoError(t, err)
	w, err := d2.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "s", Key: "standing/s/1"})
	require.NoError(t, err)
	require.Equal(t, "stop/a", w.Taken.Hook)
}

// A journal file whose last whole line is unreadable is set aside, like one of the form before.
func TestJournalUnreadableLastLineSetAside(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "73.jsonl"), []byte("{\"offers\":[]}\n{not json\n"), 0o600))
	d, err := Open(dir, (&signals{}).send, nil)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "73.jsonl.unreadable"))
	require.NoError(t, err, "kept aside")
	require.NoError(t, d.Publish(context.Background(), workflows.DeskPublishRequest{Session: "s", Key: "standing/s/1", Messages: msgs("1")}))
}
