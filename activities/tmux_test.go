package activities

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/intentq/intentq/internal/testkit/peers"
)

// tmuxServer is a private tmux server for one test.
type tmuxServer struct {
	t      *testing.T
	socket string
	dir    string
}

// newTmuxServer returns a private server name; the server itself starts with the first
// session. t.Cleanup kills it and removes its socket, which kill-server leaves behind.
func newTmuxServer(t *testing.T) *tmuxServer {
	t.Helper()
	peers.Tmux(t)
	s := &tmuxServer{t: t, socket: randomSocketName(t), dir: t.TempDir()}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-L", s.socket, "kill-server").Run()
		dir := os.Getenv("TMUX_TMPDIR")
		if dir == "" {
			dir = "/tmp"
		}
		_ = os.Remove(filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), s.socket))
	})
	return s
}

func randomSocketName(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "intentq-test-" + hex.EncodeToString(b)
}

// tmux runs a tmux command on the private server (ignoring any ~/.tmux.conf) and fails the
// test if it fails.
func (s *tmuxServer) tmux(args ...string) string {
	s.t.Helper()
	argv := append([]string{"-f", "/dev/null", "-L", s.socket}, args...)
	out, err := exec.Command("tmux", argv...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// injector returns a Tmux for this server with a short EnterDelay.
func (s *tmuxServer) injector() *Tmux {
	return &Tmux{Socket: s.socket, EnterDelay: 20 * time.Millisecond}
}

// reader starts a detached session whose pane appends all it reads to a file, and returns the
// file's path. The tty stays in cooked mode, so Enter (CR) arrives as "\n".
func (s *tmuxServer) reader(session, sttyFlags string) string {
	s.t.Helper()
	out := filepath.Join(s.dir, session+".out")
	s.tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", "--",
		"/bin/sh", "-c", "stty "+sttyFlags+"; exec cat >\"$1\"", "sh", out)
	return out
}

// waitFile polls path until it holds want or a deadline passes.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var got []byte
	for time.Now().Before(deadline) {
		got, _ = os.ReadFile(path)
		if string(got) == want {
			return
		}
		if len(got) > len(want) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("reader got\n%q\nwant\n%q", got, want)
}

func TestTmuxInjectDeliversTextLiterally(t *testing.T) {
	srv := newTmuxServer(t)
	tm := srv.injector()

	long := longTmuxText()
	cases := map[string]string{
		"semicolon":            "echo a; echo b",
		"ends with semicolon":  "rm -rf /;",
		"only semicolon":       ";",
		"escaped semicolon":    `ends with \;`,
		"key names":            "C-c C-d Enter Escape M-x",
		"command substitution": "$(echo pwned) ${HOME} $HOME",
		"quotes":               `'single' "double"`,
		"backticks":            "`id` and `echo pwned`",
		"emoji":                "ok 🙂 👍🏽 ❤️",
		"japanese":             "【未対応メッセージ】テストです",
		"leading option":       "-n",
		"leading double dash":  "-- -t x",
		"trailing backslash":   `path\`,
		"newlines":             "line one\nline two\n\nline four",
		"tmux syntax":          "#{pane_id} { } %1 ~ \\; #[fg=red]",
		"long":                 long,
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			session := "case-" + strings.ReplaceAll(name, " ", "-")
			out := srv.reader(session, "-echo")
			if err := discard(tm.Inject(context.Background(), InjectRequest{Target: session, Text: text})); err != nil {
				t.Fatalf("Inject: %v", err)
			}
			waitFile(t, out, text+"\n")
		})
	}
}

// longTmuxText is several chunks long, has a chunk that ends in ';' and multi-byte runes that
// straddle chunk boundaries, and keeps lines short for the cooked tty (4095 bytes a line).
func longTmuxText() string {
	var b strings.Builder
	b.WriteString(strings.Repeat("x", tmuxChunkBytes-1) + ";")
	b.WriteString("\n")
	for i := 0; b.Len() < 6*tmuxChunkBytes; i++ {
		b.WriteString("ab【未対応】🙂;")
		if i%10 == 9 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestSplitUTF8(t *testing.T) {
	text := longTmuxText()
	chunks := splitUTF8(text, tmuxChunkBytes)
	if len(chunks) < 6 {
		t.Fatalf("got %d chunks, want at least 6", len(chunks))
	}
	if !strings.HasSuffix(chunks[0], ";") {
		t.Errorf("first chunk should end in ';' to exercise escaping")
	}
	for i, c := range chunks {
		if len(c) > tmuxChunkBytes || c == "" || !utf8.ValidString(c) {
			t.Errorf("chunk %d: %d bytes, valid UTF-8 %v", i, len(c), utf8.ValidString(c))
		}
	}
	if strings.Join(chunks, "") != text {
		t.Error("chunks do not join back to the text")
	}
	if got := splitUTF8("short", tmuxChunkBytes); len(got) != 1 || got[0] != "short" {
		t.Errorf("splitUTF8(short) = %q", got)
	}
}

func TestTmuxInjectDoesNotRunShell(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "-echo")
	marker := filepath.Join(srv.dir, "pwned")
	text := "$(touch " + marker + ") `touch " + marker + "2`; touch " + marker + "3"
	if err := discard(srv.injector().Inject(context.Background(), InjectRequest{Target: "reader", Text: text})); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, text+"\n")
	for _, p := range []string{marker, marker + "2", marker + "3"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (or stat failed: %v): the text was run by a shell", p, err)
		}
	}
}

func TestTmuxInjectLeavesCopyMode(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "-echo")
	srv.tmux("copy-mode", "-t", "reader")
	if got := srv.tmux("display-message", "-p", "-t", "reader", "#{pane_in_mode}"); got != "1" {
		t.Fatalf("pane_in_mode = %q, want 1", got)
	}
	// In copy mode "q" would leave the mode and the rest would be copy-mode commands.
	text := "quit? no: jjkk G g q"
	if err := discard(srv.injector().Inject(context.Background(), InjectRequest{Target: "reader", Text: text})); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, text+"\n")
}

func TestTmuxInjectSameTargetTwice(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "-echo")
	tm := srv.injector()
	for _, text := range []string{"first", "second"} {
		if err := discard(tm.Inject(context.Background(), InjectRequest{Target: "reader:0.0", Text: text})); err != nil {
			t.Fatal(err)
		}
	}
	waitFile(t, out, "first\nsecond\n")
}

// A delivery entered once is not typed again by a retry (the worker died before reporting it,
// the next one runs the activity again); its next try (another key) is; old markers go.
func TestTmuxInjectTypedOncePerKey(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "-echo")
	tm := srv.injector()
	tm.TypedDir = filepath.Join(t.TempDir(), "typed")
	for _, req := range []InjectRequest{
		{Target: "reader:0.0", Text: "first", Key: "secretary/intent/1/1#1/try-1"},
		{Target: "reader:0.0", Text: "first", Key: "secretary/intent/1/1#1/try-1"},
		{Target: "reader:0.0", Text: "first", Key: "secretary/intent/1/1#1/try-2"},
		{Target: "reader:0.0", Text: "unkeyed"},
		{Target: "reader:0.0", Text: "unkeyed"},
	} {
		if err := discard(tm.Inject(context.Background(), req)); err != nil {
			t.Fatal(err)
		}
	}
	waitFile(t, out, "first\nfirst\nunkeyed\nunkeyed\n")
	entries, _ := os.ReadDir(tm.TypedDir)
	if len(entries) != 2 {
		t.Fatalf("markers %v", entries)
	}
	old := time.Now().Add(-72 * time.Hour)
	_ = os.Chtimes(filepath.Join(tm.TypedDir, entries[0].Name()), old, old)
	if err := tm.PruneTyped(48 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tm.TypedDir); len(entries) != 1 {
		t.Errorf("after pruning: %v", entries)
	}
}

// A retry clears what an earlier attempt typed without its Enter (the line the cursor is on
// shows it), and leaves anything else on the line (a person's draft) alone.
func TestTmuxRetryClearsItsOwnPartialText(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "echo")
	tm := srv.injector()
	pane := srv.tmux("display-message", "-p", "-t", "=reader:", "#{pane_id}")
	req := InjectRequest{Target: "reader:0.0", Text: "【未対応メッセージ】msg_id=7 chat=42: are you there?"}
	waitCursor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			line, err := tm.cursorLine(context.Background(), req.Target, pane)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(line, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("cursor line %q, want %q", line, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	srv.tmux("send-keys", "-t", pane, "-l", req.Text)
	waitCursor("are you there?")
	if err := tm.clearEarlierAttempt(context.Background(), req, pane); err != nil {
		t.Fatal(err)
	}
	if err := discard(tm.Inject(context.Background(), req)); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, req.Text+"\n")

	srv.tmux("send-keys", "-t", pane, "-l", "my draft ")
	waitCursor("my draft")
	if err := tm.clearEarlierAttempt(context.Background(), req, pane); err != nil {
		t.Fatal(err)
	}
	srv.tmux("send-keys", "-t", pane, "Enter")
	waitFile(t, out, req.Text+"\nmy draft \n")
}

func requireTargetMissing(t *testing.T, err error, target string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("error %v (%T) is not an ApplicationError", err, err)
	}
	if appErr.Type() != ErrTypeTmuxTargetMissing || !appErr.NonRetryable() {
		t.Errorf("type %q non-retryable %v, want %q non-retryable", appErr.Type(), appErr.NonRetryable(), ErrTypeTmuxTargetMissing)
	}
	if !strings.Contains(appErr.Error(), strconv.Quote(target)) {
		t.Errorf("error %q does not name target %q", appErr.Error(), target)
	}
}

func TestTmuxTargetMissing(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "-echo")
	srv.tmux("set-option", "-g", "remain-on-exit", "on")
	srv.tmux("new-window", "-d", "-t", "reader:3", "true")
	deadline := time.Now().Add(5 * time.Second)
	for srv.tmux("display-message", "-p", "-t", "reader:3", "#{pane_dead}") != "1" {
		if time.Now().After(deadline) {
			t.Fatal("pane reader:3 did not die")
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm := srv.injector()

	for _, target := range []string{
		"nosuch",       // missing session
		"reader:7",     // missing window (display-message would answer with pane %0 here)
		"reader:0.5",   // missing pane
		"%999",         // missing pane id
		"=reade",       // exact match only
		"reade",        // a prefix of "reader": tmux alone would take it for "reader"
		"reade:0",      // the same with a window
		"reader:3",     // pane whose program has exited
		"",             // no target at all
		"reader;",      // would end the tmux command early
		"reader\nkill", // control characters
	} {
		err := discard(tm.Inject(context.Background(), InjectRequest{Target: target, Text: "hello"}))
		requireTargetMissing(t, err, target)
		requireTargetMissing(t, tm.TargetExists(context.Background(), target), target)
	}
	if err := tm.TargetExists(context.Background(), "reader"); err != nil {
		t.Errorf("TargetExists(reader) = %v", err)
	}
	if err := tm.TargetExists(context.Background(), "reader:0.0"); err != nil {
		t.Errorf("TargetExists(reader:0.0) = %v", err)
	}
	// Nothing of the failed attempts reached the reader.
	if err := discard(tm.Inject(context.Background(), InjectRequest{Target: "reader", Text: "only this"})); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, "only this\n")
}

func TestTmuxNoServer(t *testing.T) {
	srv := newTmuxServer(t) // never started
	tm := srv.injector()
	err := discard(tm.Inject(context.Background(), InjectRequest{Target: "reader", Text: "hello"}))
	requireTargetMissing(t, err, "reader")
	requireTargetMissing(t, tm.TargetExists(context.Background(), "reader"), "reader")

	// A server that has gone away leaves its socket behind: still "missing", not retryable.
	// While it is still exiting, tmux may say "server exited unexpectedly", a retryable error;
	// retry as Temporal would.
	srv.reader("reader", "-echo")
	srv.tmux("kill-server")
	deadline := time.Now().Add(5 * time.Second)
	err = tm.TargetExists(context.Background(), "reader")
	for ; time.Now().Before(deadline); err = tm.TargetExists(context.Background(), "reader") {
		var appErr *temporal.ApplicationError
		if err == nil || errors.As(err, &appErr) {
			break
		}
		t.Logf("retryable while the server exits: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
	requireTargetMissing(t, err, "reader")
}

func TestTmuxInvalidText(t *testing.T) {
	tm := &Tmux{Bin: "/nonexistent/tmux"} // never reached
	for text, typ := range map[string]string{
		"":          ErrTypeEmptyText,
		"bad \xff!": ErrTypeInvalidText,
	} {
		err := discard(tm.Inject(context.Background(), InjectRequest{Target: "x", Text: text}))
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != typ || !appErr.NonRetryable() {
			t.Errorf("Inject(%q) = %v, want non-retryable %s", text, err, typ)
		}
	}
}

func TestTmuxOtherFailuresAreRetryable(t *testing.T) {
	tm := &Tmux{Bin: filepath.Join(t.TempDir(), "no-tmux-here")}
	err := discard(tm.Inject(context.Background(), InjectRequest{Target: "target-xyz", Text: "hello"}))
	if err == nil {
		t.Fatal("want an error")
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		t.Fatalf("got ApplicationError %v, want a plain retryable error", err)
	}
	if !strings.Contains(err.Error(), "target-xyz") {
		t.Errorf("error %q does not name the target", err)
	}
}

func TestTmuxInjectRespectsContextDuringEnterDelay(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "-echo -icanon") // -icanon: text without Enter still reaches cat
	tm := &Tmux{Socket: srv.socket, EnterDelay: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := discard(tm.Inject(ctx, InjectRequest{Target: "reader", Text: "typed"}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Inject took %v after the context ended", d)
	}
	waitFile(t, out, "typed") // no Enter
}

// A CLI that asked for bracketed paste (as Claude Code does) gets multi-line text as one paste:
// the markers around it, newlines as carriage returns inside, then Enter on its own.
func TestTmuxInjectMultiLineAsOneBracketedPaste(t *testing.T) {
	srv := newTmuxServer(t)
	out := filepath.Join(srv.dir, "paste.out")
	srv.tmux("new-session", "-d", "-s", "cli", "-x", "200", "-y", "50", "--",
		"/bin/sh", "-c", `printf '\033[?2004h'; stty raw -echo; exec cat >"$1"`, "sh", out)
	time.Sleep(200 * time.Millisecond) // let the program switch bracketed paste on
	if err := discard(srv.injector().Inject(context.Background(), InjectRequest{Target: "cli", Text: "line one\nline two; C-c"})); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, "\x1b[200~line one\rline two; C-c\x1b[201~\r")
}

// With the CLI's own newline key, lines are typed one by one with that key between them.
func TestTmuxInjectMultiLineWithNewlineKey(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("keys", "-echo")
	if err := discard(srv.injector().Inject(context.Background(), InjectRequest{Target: "keys", Text: "one\ntwo", NewlineKey: "C-j"})); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, "one\ntwo\n")
}

func TestTmuxCaptureReturnsBottomLines(t *testing.T) {
	srv := newTmuxServer(t)
	srv.tmux("new-session", "-d", "-s", "busy", "-x", "80", "-y", "20", "--",
		"/bin/sh", "-c", `printf 'old line\nmiddle\n✻ Working… (esc to interrupt)\n'; exec sleep 60`)
	tm := srv.injector()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := tm.Capture(context.Background(), CaptureRequest{Target: "busy", Lines: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got == "middle\n✻ Working… (esc to interrupt)" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Capture = %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err := tm.Capture(context.Background(), CaptureRequest{Target: "nosuch", Lines: 2})
	requireTargetMissing(t, err, "nosuch")
}

// discard drops Inject's result where a test only cares about the error.
func discard(_ InjectResult, err error) error { return err }

// With CheckLines, Inject reports the bottom of the pane as it was after Enter: here a CLI that
// took Enter as a newline and left the text on its input line.
func TestTmuxInjectReportsBottomAfterEnter(t *testing.T) {
	srv := newTmuxServer(t)
	srv.tmux("new-session", "-d", "-s", "stuck", "-x", "80", "-y", "10", "--",
		"/bin/sh", "-c", `stty raw; exec cat`) // echoes what is typed; Enter only moves the cursor
	res, err := srv.injector().Inject(context.Background(), InjectRequest{Target: "stuck", Text: "still here", CheckLines: 3, CheckDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Bottom, "still here") {
		t.Errorf("Bottom = %q, want the text still visible", res.Bottom)
	}
}

// Only a session named exactly as the target gets the text: with the default target
// "secretary:0" and only "secretary-old" running, nothing is typed anywhere.
func TestTmuxTargetNeverANeighbour(t *testing.T) {
	srv := newTmuxServer(t)
	old := srv.reader("secretary-old", "-echo")
	tm := srv.injector()
	for _, target := range []string{"secretary:0", "secretary", "secretary:0.0"} {
		requireTargetMissing(t, discard(tm.Inject(context.Background(), InjectRequest{Target: target, Text: "for secretary"})), target)
		requireTargetMissing(t, tm.TargetExists(context.Background(), target), target)
	}
	if err := discard(tm.Inject(context.Background(), InjectRequest{Target: "secretary-old:0", Text: "for the old one"})); err != nil {
		t.Fatal(err)
	}
	waitFile(t, old, "for the old one\n")
}

func TestExactTarget(t *testing.T) {
	for in, want := range map[string]string{
		"secretary:0":   "=secretary:0",
		"secretary":     "=secretary:",
		"secretary:0.1": "=secretary:0.1",
		"work:editor":   "=work:=editor",
		"work:editor.1": "=work:=editor.1",
		"work:@3":       "=work:@3",
		"=exact:0":      "=exact:0",
		"%12":           "%12",
		"@4":            "@4",
		"$1":            "$1",
		":2":            ":2",
		"a-b.c:win-1.2": "=a-b.c:=win-1.2",
	} {
		if got := ExactTarget(in); got != want {
			t.Errorf("ExactTarget(%q) = %q, want %q", in, got, want)
		}
	}
}

// SPEC N3 and hardening: no control character of a message reaches the pane as a key. Each
// one is typed into a plain line reader; the program receives the visible form, on every path
// (one line, bracketed paste, the CLI's newline key), and nothing else.
func TestTmuxControlCharactersNeverActAsKeys(t *testing.T) {
	srv := newTmuxServer(t)
	tm := srv.injector()
	var controls []rune
	for r := rune(0); r < 0x20; r++ {
		if r != '\n' {
			controls = append(controls, r)
		}
	}
	controls = append(controls, 0x7f, 0x80, 0x9b, 0x9f)
	paths := map[string]InjectRequest{
		"line":  {},
		"paste": {Text: "second line"},
		"key":   {Text: "second line", NewlineKey: "C-j"},
	}
	for name, base := range paths {
		t.Run(name, func(t *testing.T) {
			var text strings.Builder
			for _, r := range controls {
				if r == '\r' && base.Text == "" {
					continue // a CR is a line break: the single-line path gets none
				}
				text.WriteString("<")
				text.WriteRune(r)
				text.WriteString(">")
			}
			text.WriteString("\x1b[31mred\x1b[0m \x1b[201~ end")
			if base.Text != "" {
				text.WriteString("\n" + base.Text)
			}
			// A cooked tty: C-c would kill the reader, C-u erase the line, CR end it early.
			out := srv.reader("ctl-"+name, "-echo")
			req := InjectRequest{Target: "ctl-" + name, Text: text.String(), NewlineKey: base.NewlineKey}
			if err := discard(tm.Inject(context.Background(), req)); err != nil {
				t.Fatal(err)
			}
			want := VisibleControls(text.String())
			if base.Text == "" && strings.Contains(want, "\n") {
				t.Fatalf("the single-line case has a line break: %q", want)
			}
			for _, r := range want {
				if r != '\n' && isControlChar(r) {
					t.Fatalf("VisibleControls left %U", r)
				}
			}
			waitFile(t, out, want+"\n")
		})
	}
}

func TestVisibleControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain":              "plain",
		"a\x00b\x1b[31mc":    "a\u2400b\u241b[31mc",
		"crlf\r\nnext\rlast": "crlf\nnext\nlast",
		"tab\there":          "tab here",
		"del\x7f c1\u0085":   "del\u2421 c1\ufffd",
		"日本語\n🙂":             "日本語\n🙂",
	} {
		if got := VisibleControls(in); got != want {
			t.Errorf("VisibleControls(%q) = %q, want %q", in, got, want)
		}
	}
}

// A worker's shutdown (its activities cancelled) does not cut a typing in half: the text and its
// Enter go in, and the typing is marked done, so the retry after the restart types nothing.
func TestTmuxInjectFinishesTypingWhenCancelled(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "")
	tm := &Tmux{Socket: srv.socket, EnterDelay: 3 * time.Second, TypedDir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The cancel comes once the pane shows the text (the tty echoes it), so during the Enter
	// delay, however slow the machine: a timer could fire before the typing began.
	cancelled := make(chan struct{})
	go func() {
		defer close(cancelled)
		for ctx.Err() == nil {
			out, _ := exec.Command("tmux", "-L", srv.socket, "capture-pane", "-p", "-t", "reader").Output()
			if strings.Contains(string(out), "whole line") {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	req := InjectRequest{Target: "reader", Text: "whole line", Key: "secretary/r#1/try-1"}
	if err := discard(tm.Inject(ctx, req)); err != nil {
		t.Fatalf("cancelled during the typing: %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("the typing ended before the pane showed its text: nothing was cancelled")
	}
	<-cancelled
	if err := discard(tm.Inject(context.Background(), req)); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, "whole line\n")
}

// A typing line by line (a CLI's newline key) that an attempt left half done goes on after the
// pieces it typed: nothing twice.
func TestTmuxInjectResumesAfterTypedLines(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "")
	tm := &Tmux{Socket: srv.socket, TypedDir: t.TempDir()}
	req := InjectRequest{Target: "reader", Text: "one\ntwo\nthree", NewlineKey: "C-j", Key: "secretary/r#2/try-1"}
	// The attempt that died had typed "one" and "two" (a line reader took them already).
	srv.tmux("send-keys", "-t", "reader", "-l", "one")
	srv.tmux("send-keys", "-t", "reader", "C-j")
	srv.tmux("send-keys", "-t", "reader", "-l", "two")
	noteTypedPieces(tm.marker(req.Key), 3, false) // "one", the newline key, "two"
	if err := discard(tm.Inject(context.Background(), req)); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out, "one\ntwo\nthree\n")
	if _, err := os.Stat(tm.marker(req.Key) + typingSuffix); !os.IsNotExist(err) {
		t.Errorf("the count of typed lines outlived the typing: %v", err)
	}
}

// Issue 33 (4): a message's text is never on a command line (any local user reads every
// process's argv in /proc): every tmux the injector runs is logged with its arguments by a
// wrapper, and none carries the text, single-line or multi-line; the pane gets it whole.
func TestInjectPutsNoTextInArgv(t *testing.T) {
	srv := newTmuxServer(t)
	out := srv.reader("reader", "-echo")
	real, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	argvLog := filepath.Join(t.TempDir(), "argv")
	wrapper := filepath.Join(t.TempDir(), "tmux")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + argvLog + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	tm := srv.injector()
	tm.Bin = wrapper
	secret := "my bank PIN is 4321; C-c $(id) -x"
	for _, text := range []string{secret, secret + "\nand a second line"} {
		if err := discard(tm.Inject(context.Background(), InjectRequest{Target: "reader:0.0", Text: text})); err != nil {
			t.Fatal(err)
		}
	}
	waitFile(t, out, secret+"\n"+secret+"\nand a second line\n")
	logged, err := os.ReadFile(argvLog)
	if err != nil || len(logged) == 0 {
		t.Fatalf("no tmux run logged: %v", err)
	}
	if strings.Contains(string(logged), "4321") {
		t.Fatalf("the text is on a tmux command line:\n%s", logged)
	}
}

// Issue 38: a worker killed while tmux pastes a piece of a typing never learns that the paste
// went in (the tmux client finishes it without the worker); the next attempt must not paste it
// again, and a pasted block is not always on the screen to be seen (Claude Code shows
// "[Pasted text]"; this pane echoes nothing). A wrapper plays the killed attempt: it runs tmux
// and then fails paste-buffer, after the paste (it went in) or instead of it (it did not).
func TestTmuxRetryAfterAPasteItDidNotSeeEnd(t *testing.T) {
	real, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text string
		pasted     bool // the failing paste went in
	}{
		{"a line pasted", "one line of a message", true},
		{"a block pasted", "【新着メッセージ】msg_id=1\nnote 1\n【新着メッセージ】msg_id=2\nnote 2", true},
		{"a line not pasted", "one line of a message", false},
		{"a block not pasted", "【新着メッセージ】msg_id=1\nnote 1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTmuxServer(t)
			out := srv.reader("reader", "-echo")
			dir := t.TempDir()
			wrapper := filepath.Join(dir, "tmux")
			paste := `"$real" "$@"; exit 1`
			if !tc.pasted {
				paste = "exit 1"
			}
			script := "#!/bin/sh\nreal=" + real + "\nfor a in \"$@\"; do [ \"$a\" = paste-buffer ] && { " + paste + "; }; done\nexec \"$real\" \"$@\"\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
				t.Fatal(err)
			}
			tm := srv.injector()
			tm.TypedDir = filepath.Join(dir, "typed")
			tm.Bin = wrapper
			req := InjectRequest{Target: "reader", Text: tc.text, Key: "secretary/r#3/try-1"}
			if err := discard(tm.Inject(context.Background(), req)); err == nil {
				t.Fatal("the killed attempt's paste did not fail")
			}
			tm.Bin = ""
			if err := discard(tm.Inject(context.Background(), req)); err != nil {
				t.Fatal(err)
			}
			// The reader's tty is cooked and asks for no bracketed paste: a paste's carriage
			// returns arrive as line feeds.
			waitFile(t, out, tc.text+"\n")
			if left := srv.tmux("list-buffers", "-F", "#{buffer_name}"); left != "" {
				t.Errorf("buffers left in tmux: %q", left)
			}
		})
	}
}
