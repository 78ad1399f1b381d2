package spool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// fakeRecorder records messages by intent ID, idempotently; down makes it fail like Temporal.
type fakeRecorder struct {
	mu   sync.Mutex
	down bool
	ids  []string
	seen map[string]bool
}

func (f *fakeRecorder) Record(_ context.Context, m intent.Message) (intent.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return intent.Result{}, errors.New("temporal: connection refused")
	}
	if err := workflows.CheckIDPart("chat_id", m.ChatID); err != nil {
		return intent.Result{}, &intent.InvalidError{Field: "chat_id", Reason: err.Error()}
	}
	id := workflows.IntentID(m.ChatID, m.MessageID)
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	created := !f.seen[id]
	if created {
		f.seen[id] = true
		f.ids = append(f.ids, id)
	}
	return intent.Result{ID: id, Created: created}, nil
}

func (f *fakeRecorder) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ids...)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Every spooled entry is recorded once, in order; a torn last line is repaired (passed over,
// logged), an entry that can never be recorded is dropped with its reason; files are removed
// once drained. With Temporal down nothing is lost: the file stays for the next drain.
func TestDrainRecordsEverythingOnce(t *testing.T) {
	dir := t.TempDir()
	rec := &fakeRecorder{down: true}
	d := &Drainer{Dir: dir, Recorder: rec}
	write(t, dir, "spool-100.jsonl",
		`{"chat_id":"5","message_id":"1","text":"one","user":"kento","ts":1763700000}`+"\n"+
			`{"chat_id":5,"message_id":2,"text":"two"}`+"\n"+
			`{"chat_id":"bad id","message_id":"3","text":"never"}`+"\n"+
			`{"chat_id":"5","message_id":"1","text":"one again"}`+"\n"+
			`{"chat_id":"5","message_id":"4","te`) // the writer died here
	write(t, dir, "events.jsonl", `{"kind":"loaded"}`+"\n")

	if _, err := d.Drain(context.Background()); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("Drain with Temporal down = %v, want ErrNotRecorded", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.draining"))
	if len(left) != 1 {
		t.Fatalf("the spool file is not kept for later: %v", left)
	}
	// The plugin keeps spooling meanwhile, into a new file.
	write(t, dir, "spool-100.jsonl", `{"chat_id":"5","message_id":"5","text":"five"}`+"\n")

	rec.mu.Lock()
	rec.down = false
	rec.mu.Unlock()
	st, err := d.Drain(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Entries of one file are recorded 16 at a time (their order does not matter: spooled
	// messages are not typed); files go oldest first.
	got := rec.recorded()
	if len(got) != 3 || got[2] != "intent/5/5" {
		t.Errorf("recorded %v, want intent/5/1 and intent/5/2 (either order), then intent/5/5", got)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "intent/5/1 intent/5/2 intent/5/5" {
		t.Errorf("recorded %v", got)
	}
	if st.Torn != 1 || st.Invalid != 1 || st.Files != 2 || st.Recorded != 4 {
		t.Errorf("stats = %+v", st)
	}
	rest, _ := os.ReadDir(dir)
	if len(rest) != 1 || rest[0].Name() != EventsFile {
		t.Errorf("left in the spool: %v", rest)
	}
}

// The watcher drains a spool that grows while the worker runs.
func TestRunDrainsWhenTheSpoolGrows(t *testing.T) {
	dir := t.TempDir()
	rec := &fakeRecorder{}
	d := &Drainer{Dir: dir, Recorder: rec}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, time.Hour) }()
	defer func() { cancel(); <-done }()
	time.Sleep(50 * time.Millisecond) // let the watch start; the drain on the write is what counts
	write(t, dir, "spool-7.jsonl", `{"chat_id":"8","message_id":"1","text":"hi"}`+"\n")
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.recorded()) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the new spool file was not drained")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEventsAndLast(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, EventsFile, `{"kind":"loaded","at":"2026-11-23T10:00:00Z","file":"/c/server.ts","pid":3}`+"\n"+
		`{"kind":"error","at":"2026-11-23T10:01:00Z","chat_id":"5","message_id":"9","error":"ReferenceError: chat_id is not defined"}`+"\n"+
		`{"kind":"loa`)
	events, offset, err := Events(dir, 0)
	if err != nil || len(events) != 2 {
		t.Fatalf("Events = %v %v", events, err)
	}
	if again, _, _ := Events(dir, offset); len(again) != 0 {
		t.Errorf("read again from the offset: %v", again)
	}
	loaded, failed, err := Last(dir)
	if err != nil || loaded == nil || loaded.File != "/c/server.ts" || failed == nil || !strings.Contains(failed.Error, "ReferenceError") {
		t.Errorf("Last = %+v %+v %v", loaded, failed, err)
	}
}
