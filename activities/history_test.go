package activities

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func appendEntry(t *testing.T, path, id, text string) int64 {
	t.Helper()
	seq, err := History{}.Append(context.Background(), AppendRequest{Path: path, Entry: HistoryEntry{
		Time: time.Now().UTC(), Session: "secretary", Kind: "reminder", ID: id, Text: text,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func readAll(t *testing.T, path string) ([]HistoryEntry, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, skipped, err := ReadHistory(f)
	if err != nil {
		t.Fatal(err)
	}
	return entries, skipped
}

// H1-H3: entries in order, numbered without gaps, texts with their wrappers as given; a retry of
// the same entry writes nothing.
func TestHistoryAppendOrderedExactlyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history", "secretary.jsonl")
	texts := []string{
		"【未対応メッセージ】msg_id=1 chat=2: hi",
		"[Notification] build finished — not a blocking request",
		"<system-reminder>\npending: 2 intents\n</system-reminder>",
	}
	for i, text := range texts {
		if seq := appendEntry(t, path, "req-"+string(rune('a'+i)), text); seq != int64(i+1) {
			t.Fatalf("seq = %d, want %d", seq, i+1)
		}
	}
	if seq := appendEntry(t, path, "req-c", texts[2]); seq != 3 {
		t.Errorf("retry of the last entry: seq %d, want 3 (no new line)", seq)
	}
	entries, skipped := readAll(t, path)
	if len(entries) != 3 || skipped != 0 {
		t.Fatalf("entries %d skipped %d", len(entries), skipped)
	}
	for i, e := range entries {
		if e.Seq != int64(i+1) || e.Text != texts[i] {
			t.Errorf("entry %d = %+v", i, e)
		}
	}
}

// A crash mid-write leaves a torn line; the next append cuts it and continues the numbering.
func TestHistoryTornLineRepaired(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	appendEntry(t, path, "a", "first")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"seq":2,"time":"2026-11-2`)
	f.Close()
	if seq := appendEntry(t, path, "b", "second"); seq != 2 {
		t.Errorf("seq after a torn line = %d, want 2", seq)
	}
	data, _ := os.ReadFile(path)
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if !strings.HasPrefix(line, "{") || !strings.HasSuffix(line, "}") {
			t.Errorf("line %d is not a whole entry: %q", i, line)
		}
	}
	if entries, skipped := readAll(t, path); len(entries) != 2 || skipped != 0 {
		t.Errorf("entries %d skipped %d", len(entries), skipped)
	}
}

// Messages typed together are committed in one write, each its own entry, exactly once: a retry
// after a crash that wrote part of the batch (two whole lines and a torn one) writes the rest.
func TestHistoryAppendAllExactlyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	appendEntry(t, path, "before", "earlier")
	var batch []HistoryEntry
	for _, id := range []string{"m1", "m2", "m3", "m4"} {
		batch = append(batch, HistoryEntry{Session: "secretary", Kind: "message", ID: id, Text: "text of " + id})
	}
	// A first try that died after two lines and part of the third.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString("{\"seq\":2,\"id\":\"m1\"}\n{\"seq\":3,\"id\":\"m2\"}\n{\"seq\":4,\"id\":\"m")
	f.Close()
	for range 2 { // the retry, and a retry of the retry
		seq, err := History{}.AppendAll(context.Background(), AppendAllRequest{Path: path, Entries: batch})
		if err != nil || seq != 5 {
			t.Fatalf("AppendAll = %d, %v; want 5", seq, err)
		}
	}
	entries, skipped := readAll(t, path)
	var ids []string
	for i, e := range entries {
		ids = append(ids, e.ID)
		if e.Seq != int64(i+1) {
			t.Errorf("entry %d has seq %d", i, e.Seq)
		}
	}
	if got := strings.Join(ids, " "); got != "before m1 m2 m3 m4" || skipped != 0 {
		t.Errorf("entries %q (skipped %d), want before m1 m2 m3 m4", got, skipped)
	}
	if _, err := (History{}).AppendAll(context.Background(), AppendAllRequest{Path: path}); err == nil {
		t.Error("AppendAll without entries succeeded")
	}
}

func FuzzHistoryReader(f *testing.F) {
	f.Add([]byte("{\"seq\":1,\"id\":\"a\"}\n{\"seq\":2,\"id\":\"b\"}\n"))
	f.Add([]byte("garbage\n{\"seq\":"))
	f.Add([]byte("\n\n\xff\xfe\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, _, err := ReadHistory(bytes.NewReader(data)); err != nil && len(data) < 16<<20 {
			t.Fatalf("ReadHistory: %v", err)
		}
		// Appending to any existing content leaves the new entry as the file's last, parsable
		// line, numbered after the last good entry before it.
		path := filepath.Join(t.TempDir(), "h.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		before, _, _ := ReadHistory(bytes.NewReader(data))
		seq, err := History{}.Append(context.Background(), AppendRequest{Path: path, Entry: HistoryEntry{ID: "fuzz-new", Text: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		after, _, _ := ReadHistory(bytes.NewReader(must(os.ReadFile(path))))
		if len(after) == 0 || after[len(after)-1].ID != "fuzz-new" || after[len(after)-1].Seq != seq {
			t.Fatalf("last entry after append = %+v (seq %d), before %d entries", after, seq, len(before))
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
