package receipt

import (
	"errors"
	"os"
	"testing"
	"time"
)

// Only the header at the very start of a prompt names a message; Claude Code's paste wrapper
// before it counts as the start.
func TestParse(t *testing.T) {
	for prompt, want := range map[string]string{
		DeliveryHeader + "7 chat=42 from=42: hi":                             "42/7",
		ReminderHeader + "7 chat=-100: hi":                                   "-100/7",
		"\n\n<pasted_content id=\"p1\">\n" + DeliveryHeader + "8 chat=42\nx": "42/8",
		"quoted: " + DeliveryHeader + "7 chat=42: hi":                        "",
		DeliveryHeader + "7 chat=":                                           "",
		DeliveryHeader + " chat=42: hi":                                      "",
		"<pasted_content id=\"p\nx\">\n" + DeliveryHeader + "7 chat=42: hi":  "",
	} {
		chat, msg, ok := Parse(prompt)
		got := ""
		if ok {
			got = chat + "/" + msg
		}
		if got != want {
			t.Errorf("Parse(%q) = %q, want %q", prompt, got, want)
		}
	}
}

// A typed block is recorded privately, found by its header, and binds one agent only.
func TestRecordLookupClaim(t *testing.T) {
	dir := t.TempDir() + "/typed-blocks"
	block := DeliveryHeader + "7 chat=42: hi"
	if err := Record(dir, "not a block", Typed{Session: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Lookup(dir, block); !errors.Is(err, ErrNotTyped) {
		t.Fatalf("before its typing: %v", err)
	}
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	if err := Record(dir, block, Typed{Session: "work", Pane: "%3", Socket: "/tmp/tmux-1/default", At: at}); err != nil {
		t.Fatal(err)
	}
	got, err := Lookup(dir, "\n\n<pasted_content id=\"x\">\n"+block)
	if err != nil || got.Session != "work" || got.Pane != "%3" || !got.At.Equal(at) {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, _ := e.Info(); info.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want private", e.Name(), info.Mode().Perm())
		}
	}
	for _, c := range []struct {
		agent string
		ok    bool
	}{{"claude/a", true}, {"claude/a", true}, {"claude/b", false}} {
		if ok, err := Claim(dir, block, c.agent); ok != c.ok || err != nil {
			t.Errorf("Claim(%s) = %v, %v; want %v", c.agent, ok, err, c.ok)
		}
	}
}
