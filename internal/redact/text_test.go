package redact

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSnippetI7(t *testing.T) {
	cases := []struct{ in, want string }{
		{"hello", "hello"},
		{"", ""},
		{"line1\nline2\tx\r\n", "line1 line2 x  "},
		{"bell\a esc\x1b[31m del\x7f", "bell esc[31m del"},
		{strings.Repeat("あ", 40), strings.Repeat("あ", 40)},
		{strings.Repeat("あ", 41), strings.Repeat("あ", 40) + "…"},
		{strings.Repeat("🙂", 45), strings.Repeat("🙂", 40) + "…"},
		{strings.Repeat("a", 39) + "\x00\x00b", strings.Repeat("a", 39) + "b"},
		{"bad \xff byte", "bad \uFFFD byte"},
	}
	for _, tc := range cases {
		if got := Snippet(tc.in, 40); got != tc.want {
			t.Errorf("Snippet(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRepair(t *testing.T) {
	got, changed := Repair("ok \xff\xfe end")
	if !changed || got != "ok \uFFFD\uFFFD end" {
		t.Errorf("Repair = %q %v: want one U+FFFD per invalid byte", got, changed)
	}
	if got, changed := Repair("日本語 ok"); changed || got != "日本語 ok" {
		t.Errorf("valid text changed: %q", got)
	}
	// A truncated multi-byte rune is repaired, the rest kept.
	if got, _ := Repair("あ"[:2] + "x"); got != "\uFFFD\uFFFDx" {
		t.Errorf("truncated rune: %q", got)
	}
}

func FuzzSnippet(f *testing.F) {
	for _, s := range []string{"hello", "a\nb\tc", "\xff\xfe", strings.Repeat("あ", 50), "\x00\x1b[2J", "🙂🙂"} {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 200 {
			max = 40
		}
		out := Snippet(s, max)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		body := strings.TrimSuffix(out, Ellipsis)
		if n := utf8.RuneCountInString(body); n > max {
			t.Fatalf("%d characters > %d", n, max)
		}
		for _, r := range body {
			if unicode.IsControl(r) {
				t.Fatalf("control %U left in %q", r, out)
			}
		}
		if strings.HasSuffix(out, Ellipsis) && utf8.RuneCountInString(body) != max && !strings.HasSuffix(s, Ellipsis) {
			t.Fatalf("cut at %d, not %d: %q", utf8.RuneCountInString(body), max, out)
		}
		rep, _ := Repair(s)
		if !utf8.ValidString(rep) || utf8.RuneCountInString(rep) < utf8.RuneCountInString(strings.ToValidUTF8(s, "")) {
			t.Fatalf("Repair dropped text of %q", s)
		}
	})
}

func BenchmarkSnippet(b *testing.B) {
	text := strings.Repeat("今日のデプロイ確認お願いします\n", 40)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = Snippet(text, 40)
	}
}
