package activities

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
)

// requireErrType fails unless err is an ApplicationError of type want.
func requireErrType(t *testing.T, err error, want string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != want {
		t.Fatalf("error = %v, want type %s", err, want)
	}
	if !appErr.NonRetryable() {
		t.Fatalf("%v is retryable", err)
	}
}

// Issue 23: the tmux activities act on the pane the worker's config names for a session, never
// on a target, keys or launch line from the request; a session the config does not know is
// refused; requests of older builds may only name a configured pane.
func TestTmuxActsOnlyOnConfiguredSessions(t *testing.T) {
	srv := newTmuxServer(t)
	agent := srv.reader("agent", "-echo")
	other := srv.reader("other", "-echo")
	tm := srv.injector()
	tm.Sessions = NewDirectory(map[string]Endpoint{
		"secretary": {Target: "agent", ProcessNames: []string{"cat"}, Keys: []string{"C-u"}},
	})
	ctx := context.Background()
	waitForeground(t, tm, "agent", "cat")

	// The session's name decides the pane; the request's target is not read.
	if err := discard(tm.Inject(ctx, InjectRequest{Session: "secretary", Target: "other", Text: "to the agent"})); err != nil {
		t.Fatal(err)
	}
	waitFile(t, agent, "to the agent\n")

	// Unknown session: nothing typed.
	requireErrType(t, discard(tm.Inject(ctx, InjectRequest{Session: "evil", Text: "x"})), ErrTypeUnknownSession)
	// An older build's request may name only a configured pane.
	requireErrType(t, discard(tm.Inject(ctx, InjectRequest{Target: "other", Text: "x"})), ErrTypeUnknownSession)
	if err := discard(tm.Inject(ctx, InjectRequest{Target: "agent", Text: "legacy"})); err != nil {
		t.Fatal(err)
	}
	waitFile(t, agent, "to the agent\nlegacy\n")

	// Keys: only those the config names for the session.
	requireErrType(t, tm.SendKeys(ctx, KeysRequest{Session: "secretary", Keys: []string{"C-u", "C-d"}}), ErrTypeUnknownSession)
	if err := tm.SendKeys(ctx, KeysRequest{Session: "secretary", Keys: []string{"C-u"}}); err != nil {
		t.Fatal(err)
	}
	// A relaunch with no launch line configured types nothing.
	requireErrType(t, discard(tm.Inject(ctx, InjectRequest{Session: "secretary", Relaunch: true, Text: "rm -rf ~"})), ErrTypeUnknownSession)
	if got, _ := os.ReadFile(other); len(got) != 0 {
		t.Fatalf("the pane no session names got %q", got)
	}
	if _, err := tm.Capture(ctx, CaptureRequest{Session: "evil"}); err == nil {
		t.Fatal("capture of an unknown session answered")
	}
}

// Issue 23: nothing is typed into a pane whose foreground program is not the session's CLI:
// when the agent exits, its pane shows a shell, and `hi;touch pwned` would run there.
func TestTmuxNeverTypesIntoAShell(t *testing.T) {
	srv := newTmuxServer(t)
	pwned := filepath.Join(srv.dir, "pwned")
	srv.tmux("new-session", "-d", "-s", "victim", "-x", "200", "-y", "50", "--", "bash", "--norc", "--noprofile")
	tm := srv.injector()
	tm.Sessions = NewDirectory(map[string]Endpoint{
		"secretary": {Target: "victim", ProcessNames: []string{"claude"}, Keys: []string{"Escape", "C-c"},
			LaunchLine: "touch " + pwned + "-relaunched", Shells: []string{"bash"}},
	})
	ctx := context.Background()
	// Wait until bash is in front (tmux reports the pane's program once it has started).
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := tm.Capture(ctx, CaptureRequest{Session: "secretary"})
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == ErrTypeNotAgent && strings.Contains(appErr.Message(), `"bash"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("capture of a bash pane: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	requireErrType(t, discard(tm.Inject(ctx, InjectRequest{Session: "secretary", Text: "hi;touch " + pwned})), ErrTypeNotAgent)
	requireErrType(t, tm.SendKeys(ctx, KeysRequest{Session: "secretary", Keys: []string{"C-c"}}), ErrTypeNotAgent)
	// The relaunch types into the shell, and only the configured launch line.
	if err := discard(tm.Inject(ctx, InjectRequest{Session: "secretary", Relaunch: true, Text: "touch " + pwned})); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(pwned + "-relaunched"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the launch line did not run")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("text from the request ran in the shell")
	}
	// A relaunch never types into the CLI itself.
	srv.tmux("new-session", "-d", "-s", "cli", "-x", "200", "-y", "50", "--", "/bin/sh", "-c", "exec cat >/dev/null")
	tm.Sessions = NewDirectory(map[string]Endpoint{"s": {Target: "cli", ProcessNames: []string{"cat"}, LaunchLine: "x", Shells: []string{"bash"}}})
	waitForeground(t, tm, "cli", "cat")
	requireErrType(t, discard(tm.Inject(ctx, InjectRequest{Session: "s", Relaunch: true})), ErrTypeNotAgent)
}

// Issue 23: history appends go to the session's configured file, never a path from the request.
func TestHistoryAppendsOnlyToConfiguredFiles(t *testing.T) {
	dir := t.TempDir()
	mine, elsewhere := filepath.Join(dir, "secretary.jsonl"), filepath.Join(dir, "elsewhere")
	h := History{Sessions: NewDirectory(map[string]Endpoint{"secretary": {HistoryPath: mine}})}
	ctx := context.Background()
	if _, err := h.Append(ctx, AppendRequest{Session: "secretary", Path: elsewhere, Entry: HistoryEntry{ID: "a", Session: "secretary", Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(elsewhere); err == nil {
		t.Fatal("appended to the request's path")
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatal(err)
	}
	_, err := h.Append(ctx, AppendRequest{Path: elsewhere, Entry: HistoryEntry{ID: "b"}})
	requireErrType(t, err, ErrTypeUnknownSession)
	_, err = h.Append(ctx, AppendRequest{Session: "evil", Entry: HistoryEntry{ID: "c"}})
	requireErrType(t, err, ErrTypeUnknownSession)
	// An older build's request naming the configured file still works.
	if _, err := h.Append(ctx, AppendRequest{Path: mine, Entry: HistoryEntry{ID: "d"}}); err != nil {
		t.Fatal(err)
	}
}

// Issue 23: a push goes to the topic the worker's config names for its session; a topic from a
// request of an older build must be a configured one.
func TestNtfyPushesOnlyToConfiguredTopics(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	n := &Ntfy{URL: srv.URL, Sessions: NewDirectory(map[string]Endpoint{"secretary": {NtfyTopic: "secret-topic"}, "quiet": {}}, "global-topic")}
	ctx := context.Background()
	if err := n.Publish(ctx, Push{Session: "secretary", Topic: "attacker", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Publish(ctx, Push{Topic: "global-topic", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	requireErrType(t, n.Publish(ctx, Push{Topic: "attacker", Message: "m"}), ErrTypeUnknownSession)
	requireErrType(t, n.Publish(ctx, Push{Session: "evil", Message: "m"}), ErrTypeUnknownSession)
	requireErrType(t, n.Publish(ctx, Push{Session: "quiet", Message: "m"}), ErrTypeNtfyNotConfigured)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(paths, " ") != "/secret-topic /global-topic" {
		t.Fatalf("pushed to %v", paths)
	}
}

// waitForeground waits until target's pane shows program in front (a new pane's shell takes a
// moment to exec it).
func waitForeground(t *testing.T, tm *Tmux, target, program string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		front, err := tm.Foreground(context.Background(), target)
		if err == nil && front == program {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pane %s shows %q (%v), want %s", target, front, err, program)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
