package hookdesk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// signals records what the desk passes on; fail, while set, makes the server refuse.
type signals struct {
	mu       sync.Mutex
	got      []string
	fail     error
	attempts int
}

func (s *signals) send(_ context.Context, id, signal string, arg any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.fail != nil {
		return s.fail
	}
	w := arg.(workflows.HookWords)
	if signal != workflows.SignalHookWords {
		return fmt.Errorf("signal %s", signal)
	}
	for _, ev := range w.Events {
		s.got = append(s.got, id+" event "+ev.Event)
	}
	for _, t := range w.Taken {
		s.got = append(s.got, id+" standing-taken "+t.Key+" by "+t.Hook)
	}
	for _, c := range w.Commits {
		s.got = append(s.got, id+" taken "+c)
	}
	for _, c := range w.Contexts {
		s.got = append(s.got, id+" context "+c.ID+" "+c.Kind)
	}
	return nil
}

func (s *signals) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func (s *signals) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !containsAll(s.list(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("signals %q, want %q among them", s.list(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func containsAll(got, want []string) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			return false
		}
	}
	return true
}

func msgs(n ...string) []workflows.DeliveryRequest {
	var out []workflows.DeliveryRequest
	for _, id := range n {
		out = append(out, workflows.DeliveryRequest{ID: "intent/42/" + id + "#1", ReplyTo: "intent/42/" + id, Kind: workflows.KindMessage, Text: "text " + id})
	}
	return out
}

func run(t *testing.T, d *Desk) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Issue 26: a standing offer goes to one hook run, once; a withdrawal then says who took it, and
// the desk tells the session and passes the commit on, in order.
func TestDeskOfferTakenOnceAndWithdrawalSaysBy(t *testing.T) {
	sig := &signals{}
	d, err := Open(t.TempDir(), sig.send, nil)
	require.NoError(t, err)
	run(t, d)
	ctx := context.Background()
	require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: "s", Key: "standing/r/1", Messages: msgs("1", "2")}))
	require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: "s", Key: "standing/r/1", Messages: msgs("1", "2")}), "the same offer again")

	other, err := d.Take("other", workflows.TakeRequest{Key: "post-tool-use/a", Event: workflows.EventPostToolUse})
	require.NoError(t, err)
	require.Empty(t, other.Messages, "another session's hook gets nothing")
	// A Stop that only asks whether its reminder is due (issue 35) takes nothing.
	stop, err := d.Take("s", workflows.TakeRequest{Key: "stop/x", Event: workflows.EventStop, RemindOnly: true, RemindEvery: time.Minute})
	require.NoError(t, err)
	require.Empty(t, stop.Messages)
	require.True(t, stop.RemindDue)
	res, err := d.Take("s", workflows.TakeRequest{Key: "post-tool-use/b", Event: workflows.EventPostToolUse})
	require.NoError(t, err)
	require.Equal(t, "standing/r/1", res.Key)
	require.Len(t, res.Messages, 2)
	again, err := d.Take("s", workflows.TakeRequest{Key: "post-tool-use/b", Event: workflows.EventPostToolUse})
	require.NoError(t, err)
	require.Empty(t, again.Messages, "the same hook run takes once")
	next, err := d.Take("s", workflows.TakeRequest{Key: "post-tool-use/c", Event: workflows.EventPostToolUse})
	require.NoError(t, err)
	require.Empty(t, next.Messages, "taken: no other hook gets it")

	w, err := d.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "s", Key: "standing/r/1"})
	require.NoError(t, err)
	require.False(t, w.Withdrawn)
	require.Equal(t, "post-tool-use/b", w.Taken.Hook)
	require.Equal(t, workflows.EventPostToolUse, w.Taken.Event)

	require.NoError(t, d.Commit("s", "standing/r/1"))
	sig.waitFor(t, "session/s standing-taken standing/r/1 by post-tool-use/b", "session/s taken standing/r/1")
	got := sig.list()
	require.Less(t, indexOf(got, "session/s standing-taken standing/r/1 by post-tool-use/b"), indexOf(got, "session/s taken standing/r/1"), "the word before the commit")
	require.Less(t, indexOf(got, "session/s event post-tool-use"), indexOf(got, "session/s standing-taken standing/r/1 by post-tool-use/b"), "the report before the word")
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// Issue 26: a withdrawn offer is no hook's; only hook events that deliver take. Issue 38: an
// offer the desk never got may be at another worker's desk, in a hook's hands: it counts as
// taken (its lease then runs), never as withdrawn.
func TestDeskWithdrawnOfferIsNoHooks(t *testing.T) {
	d, err := Open(t.TempDir(), (&signals{}).send, nil)
	require.NoError(t, err)
	ctx := context.Background()
	w, err := d.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "s", Key: "standing/r/9"})
	require.NoError(t, err)
	require.False(t, w.Withdrawn)
	require.NotNil(t, w.Taken)
	require.Equal(t, "standing/r/9", w.Taken.Key)
	require.Equal(t, workflows.HookUnknown, w.Taken.Hook)
	require.False(t, w.Taken.At.IsZero())
	require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: "s", Key: "standing/r/1", Messages: msgs("1")}))
	res, err := d.Take("s", workflows.TakeRequest{Key: "pre-tool-use/a", Event: workflows.EventPreToolUse})
	require.NoError(t, err)
	require.Empty(t, res.Messages, "pre-tool-use hands nothing over")
	w, err = d.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "s", Key: "standing/r/1"})
	require.NoError(t, err)
	require.True(t, w.Withdrawn)
	res, err = d.Take("s", workflows.TakeRequest{Key: "stop/a", Event: workflows.EventStop})
	require.NoError(t, err)
	require.Empty(t, res.Messages)
}

// Issue 26: a worker that restarts answers as the one before: the journal says who took an
// offer, and what the session had not been told yet is told after the restart.
func TestDeskJournalSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	sig := &signals{fail: errors.New("Temporal is down")}
	d, err := Open(dir, sig.send, nil)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: "s", Key: "standing/r/1", Messages: msgs("1")}))
	res, err := d.Take("s", workflows.TakeRequest{Key: "stop/a", Event: workflows.EventStop})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	require.NoError(t, d.Commit("s", "standing/r/1"))
	// The worker dies before anything was passed on.
	fi, err := os.Stat(filepath.Join(dir, "73.jsonl"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the journal holds message text: private")

	sig2 := &signals{}
	d2, err := Open(dir, sig2.send, nil)
	require.NoError(t, err)
	run(t, d2)
	w, err := d2.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "s", Key: "standing/r/1"})
	require.NoError(t, err)
	require.NotNil(t, w.Taken, "the restarted desk knows the offer was taken")
	sig2.waitFor(t, "session/s standing-taken standing/r/1 by stop/a", "session/s taken standing/r/1")
}

// Issue 26: a session that no longer runs needs no word; a refused signal is retried until the
// server takes it.
func TestDeskPassesOnUntilTaken(t *testing.T) {
	sig := &signals{fail: serviceerror.NewUnavailable("busy")}
	d, err := Open(t.TempDir(), sig.send, nil)
	require.NoError(t, err)
	run(t, d)
	require.NoError(t, d.Report("s", workflows.AgentEvent{Event: workflows.EventPreToolUse}))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		sig.mu.Lock()
		refused := sig.attempts
		sig.mu.Unlock()
		if refused >= 2 {
			break
		}
		require.False(t, time.Now().After(deadline), "the desk did not try again")
	}
	sig.mu.Lock()
	sig.fail = nil
	sig.mu.Unlock()
	sig.waitFor(t, "session/s event pre-tool-use")

	gone := &signals{fail: serviceerror.NewNotFound("workflow not found")}
	d2, err := Open(t.TempDir(), gone.send, nil)
	require.NoError(t, err)
	run(t, d2)
	require.NoError(t, d2.Report("gone", workflows.AgentEvent{Event: workflows.EventStop}))
	require.NoError(t, d2.Report("gone", workflows.AgentEvent{Event: workflows.EventStop}))
	deadline := time.Now().Add(10 * time.Second)
	for {
		d2.mu.Lock()
		left := len(d2.out)
		d2.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d words still wait for a session that is gone", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Security (issue 26): the socket answers only with the access token, is private to this user,
// and a request too large is refused; a hook with the token takes.
func TestDeskSocketNeedsTheToken(t *testing.T) {
	dir := t.TempDir()
	sig := &signals{}
	d, err := Open(filepath.Join(dir, "desk"), sig.send, nil)
	require.NoError(t, err)
	run(t, d)
	srv, err := desksocket.Listen(desksocket.SocketPath(dir), d, reader{}, "s3cret", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	fi, err := os.Stat(srv.Addr())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	_, err = desksocket.Listen(desksocket.SocketPath(dir), d, reader{}, "s3cret", nil)
	require.ErrorContains(t, err, "served by another worker")

	require.NoError(t, d.Publish(context.Background(), workflows.DeskPublishRequest{Session: "s", Key: "standing/r/1", Messages: msgs("1")}))
	ctx := context.Background()
	take := workflows.TakeRequest{Key: "post-tool-use/a", Event: workflows.EventPostToolUse}
	for _, tok := range []string{"", "wrong", "s3cret "} {
		_, err := desksocket.Client{Path: srv.Addr(), Token: tok}.Take(ctx, "s", take)
		require.ErrorContains(t, err, "access token required", "token %q", tok)
	}
	big := desksocket.Client{Path: srv.Addr(), Token: "s3cret"}
	_, err = big.Take(ctx, "s", workflows.TakeRequest{Key: strings.Repeat("k", desksocket.MaxRequest), Event: workflows.EventPostToolUse})
	require.Error(t, err, "a request over the limit")
	res, err := desksocket.Client{Path: srv.Addr(), Token: "s3cret"}.Take(ctx, "s", take)
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	require.NoError(t, desksocket.Client{Path: srv.Addr(), Token: "s3cret"}.Taken(ctx, "s", res.Key))
	require.NoError(t, desksocket.Client{Path: srv.Addr(), Token: "s3cret"}.Report(ctx, "s", workflows.AgentEvent{Event: workflows.EventStop}))
	require.NoError(t, desksocket.Client{Path: srv.Addr(), Token: "s3cret"}.CommitContext(ctx, "s", "session-start/x", "listed"))
	sig.waitFor(t, "session/s event post-tool-use", "session/s taken standing/r/1", "session/s event stop", "session/s context session-start/x context")
	takes := 0
	for _, w := range sig.list() {
		if w == "session/s event post-tool-use" {
			takes++
		}
	}
	require.Equal(t, 1, takes, "only the take with the token reached the session")

	_, err = desksocket.Client{Path: filepath.Join(dir, "none.sock"), Token: "s3cret"}.Take(ctx, "s", take)
	require.ErrorIs(t, err, desksocket.ErrNoDesk, "no worker: the hook goes the slow way")
	// Garbage on the socket gets an error, never a panic.
	c, err := net.Dial("unix", srv.Addr())
	require.NoError(t, err)
	_, _ = fmt.Fprintf(c, "{not json\n")
	buf := make([]byte, 512)
	n, _ := c.Read(buf)
	_ = c.Close()
	require.Contains(t, string(buf[:n]), "not the expected JSON")
}

// The socket is data_dir/hooks.sock whatever data_dir's length: nothing under a shared folder.
func TestSocketPathIsInDataDir(t *testing.T) {
	require.Equal(t, "/home/me/.intentq/hooks.sock", desksocket.SocketPath("/home/me/.intentq"))
	long := "/" + strings.Repeat("d", 120)
	require.Equal(t, long+"/hooks.sock", desksocket.SocketPath(long))
}

// longDataDir is a data_dir whose socket path is too long for a socket address (107 bytes).
func longDataDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	require.Greater(t, len(desksocket.SocketPath(dir)), 107)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	return dir
}

// Issue 33, item 8: a data_dir too long for a socket address works end to end (the desk binds,
// its hooks connect, through a descriptor of data_dir), and the socket is private and goes with
// the desk.
func TestDeskLongDataDirEndToEnd(t *testing.T) {
	dir := longDataDir(t)
	sig := &signals{}
	d, err := Open(filepath.Join(dir, "desk"), sig.send, nil)
	require.NoError(t, err)
	run(t, d)
	path := desksocket.SocketPath(dir)
	srv, err := desksocket.Listen(path, d, reader{}, "s3cret", nil)
	require.NoError(t, err)
	require.Equal(t, path, srv.Addr())
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSocket, "a socket at %s", path)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	_, err = desksocket.Listen(path, d, reader{}, "s3cret", nil)
	require.ErrorContains(t, err, "served by another worker")

	require.NoError(t, d.Publish(context.Background(), workflows.DeskPublishRequest{Session: "s", Key: "standing/r/1", Messages: msgs("1")}))
	ctx := context.Background()
	c := desksocket.Client{Path: path, Token: "s3cret"}
	_, err = desksocket.Client{Path: path, Token: "wrong"}.Take(ctx, "s", workflows.TakeRequest{Key: "post-tool-use/evil", Event: workflows.EventPostToolUse})
	require.ErrorContains(t, err, "access token required")
	res, err := c.Take(ctx, "s", workflows.TakeRequest{Key: "post-tool-use/a", Event: workflows.EventPostToolUse})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	require.NoError(t, c.Taken(ctx, "s", res.Key))
	require.NoError(t, c.Report(ctx, "s", workflows.AgentEvent{Event: workflows.EventStop}))
	sig.waitFor(t, "session/s event post-tool-use", "session/s taken standing/r/1", "session/s event stop")

	require.NoError(t, srv.Close())
	_, err = os.Lstat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "the socket goes with the desk")
	_, err = c.Take(ctx, "s", workflows.TakeRequest{Key: "post-tool-use/b", Event: workflows.EventPostToolUse})
	require.ErrorIs(t, err, desksocket.ErrNoDesk)
	// A desk again after the first: the socket is free.
	srv, err = desksocket.Listen(path, d, reader{}, "s3cret", nil)
	require.NoError(t, err)
	require.NoError(t, srv.Close())
}

// Issue 33, item 8: another user who squats the old shared path ($TMPDIR/intentq-<uid>, a
// folder of theirs, or a link to one) neither turns the desk off nor gets the worker to change
// anything of theirs; a data_dir that is another user's is refused, naming it.
func TestDeskSquattedTempFolderChangesNothing(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("playing another user (uid 65534) needs root: run the tests as root, as CI does")
	}
	const other = 65534
	for _, squat := range []string{"folder", "link"} {
		t.Run(squat, func(t *testing.T) {
			tmp := t.TempDir()
			require.NoError(t, os.Chmod(tmp, 0o1777))
			t.Setenv("TMPDIR", tmp)
			theirs := filepath.Join(t.TempDir(), "theirs")
			require.NoError(t, os.Mkdir(theirs, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(theirs, "keep"), []byte("theirs"), 0o644))
			require.NoError(t, os.Chown(theirs, other, other))
			old := filepath.Join(tmp, fmt.Sprintf("intentq-%d", os.Getuid()))
			if squat == "folder" {
				require.NoError(t, os.Rename(theirs, old))
				theirs = old
			} else {
				require.NoError(t, os.Symlink(theirs, old))
				require.NoError(t, os.Lchown(old, other, other))
			}

			dir := longDataDir(t)
			d, err := Open(filepath.Join(dir, "desk"), (&signals{}).send, nil)
			require.NoError(t, err)
			srv, err := desksocket.Listen(desksocket.SocketPath(dir), d, reader{}, "s3cret", nil)
			require.NoError(t, err, "the desk is on")
			t.Cleanup(func() { _ = srv.Close() })
			_, err = desksocket.Client{Path: desksocket.SocketPath(dir), Token: "s3cret"}.Unread(context.Background(), "secretary")
			require.NoError(t, err)

			fi, err := os.Stat(theirs)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "their folder's mode")
			require.Equal(t, uint32(other), fi.Sys().(*syscall.Stat_t).Uid)
			entries, err := os.ReadDir(theirs)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing of the desk's in their folder")
		})
	}
	t.Run("data_dir of another user", func(t *testing.T) {
		dir := longDataDir(t)
		require.NoError(t, os.Chmod(dir, 0o755))
		require.NoError(t, os.Chown(dir, other, other))
		d, err := Open(t.TempDir(), (&signals{}).send, nil)
		require.NoError(t, err)
		_, err = desksocket.Listen(desksocket.SocketPath(dir), d, reader{}, "s3cret", nil)
		require.ErrorContains(t, err, dir)
		require.ErrorContains(t, err, "uid 65534")
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "their folder's mode")
	})
}

// reader is a worker's client for the hooks' reads.
type reader struct{}

func (reader) PendingPage(_ context.Context, f intent.Filter, limit int) (intent.Page, error) {
	if f.Session == "down" {
		return intent.Page{}, errors.New("Temporal is down")
	}
	return intent.Page{Intents: []intent.Summary{{ID: "intent/42/1", Snippet: "snip", Text: "full text\nsecond line"}}, More: limit < 2}, nil
}

func (reader) Text(_ context.Context, id string) (string, error) {
	if id == "intent/42/none" {
		return "", fmt.Errorf("read %s: %w", id, intent.ErrNotFound)
	}
	return "the text of " + id, nil
}

func (reader) Close(_ context.Context, id string) error {
	if id == "intent/42/ended" {
		return fmt.Errorf("close %s: %w", id, intent.ErrNotOpen)
	}
	return nil
}

func (reader) CloseOldest(_ context.Context, chat string) (string, error) {
	if chat == "0" {
		return "", fmt.Errorf("chat 0: %w", intent.ErrNotFound)
	}
	return "intent/" + chat + "/1", nil
}

func (reader) SendInbox(_ context.Context, agent string, msg workflows.InboxSend) error {
	if agent == "down" {
		return errors.New("Temporal is down")
	}
	return nil
}

func (reader) Unread(_ context.Context, agent string) (workflows.InboxUnread, error) {
	if agent == "down" {
		return workflows.InboxUnread{}, errors.New("Temporal is down")
	}
	return workflows.UnreadOf([]workflows.InboxMessage{{ID: "m1", From: "boss", Content: "for " + agent}}), nil
}

// Had says the agent of session "s" has intent/42/1's message; session "down" has no worker.
func (reader) Had(_ context.Context, session string, intents []string) ([]workflows.HadMessage, error) {
	if session == "down" {
		return nil, errors.New("no worker polls session/down")
	}
	var had []workflows.HadMessage
	for _, id := range intents {
		if id == "intent/42/1" {
			had = append(had, workflows.HadMessage{Intent: id, At: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)})
		}
	}
	return had, nil
}

// A session-start hook asks, through the desk and the worker's client, what the
// session says its agent had; a session without a worker is the hook's error (its memos decide).
func TestDeskAsksWhatTheAgentHad(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(filepath.Join(dir, "desk"), (&signals{}).send, nil)
	require.NoError(t, err)
	srv, err := desksocket.Listen(desksocket.SocketPath(dir), d, reader{}, "s3cret", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ctx := context.Background()
	c := desksocket.Client{Path: srv.Addr(), Token: "s3cret"}
	had, err := c.Had(ctx, "s", []string{"intent/42/1", "intent/42/2"})
	require.NoError(t, err)
	require.Equal(t, []workflows.HadMessage{{Intent: "intent/42/1", At: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}}, had)
	_, err = c.Had(ctx, "down", []string{"intent/42/1"})
	require.ErrorContains(t, err, "no worker polls")
}

// Issue 26: a hook reads pending intents (with their full texts) and an inbox through the desk,
// with the worker's connection; a read the worker cannot make is the hook's error.
func TestDeskReadsWithTheWorkersClient(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(filepath.Join(dir, "desk"), (&signals{}).send, nil)
	require.NoError(t, err)
	srv, err := desksocket.Listen(desksocket.SocketPath(dir), d, reader{}, "s3cret", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ctx := context.Background()
	c := desksocket.Client{Path: srv.Addr(), Token: "s3cret"}
	page, err := c.PendingPage(ctx, intent.Filter{Status: workflows.StatusPending, Session: "s"}, 1)
	require.NoError(t, err)
	require.True(t, page.More)
	require.Len(t, page.Intents, 1)
	require.Equal(t, "full text\nsecond line", page.Intents[0].Text)
	unread, err := c.Unread(ctx, "secretary")
	require.NoError(t, err)
	require.Equal(t, 1, unread.Count)
	require.Equal(t, "for secretary", unread.First[0].Content)
	_, err = c.PendingPage(ctx, intent.Filter{Session: "down"}, 1)
	require.ErrorContains(t, err, "Temporal is down")
	_, err = c.Unread(ctx, "down")
	require.ErrorContains(t, err, "Temporal is down")
	_, err = desksocket.Client{Path: srv.Addr(), Token: "wrong"}.Unread(ctx, "secretary")
	require.ErrorContains(t, err, "access token required")

	// The calls on intents and inboxes a hook makes (its reads of full texts, the closes of its
	// reply tools, its agent's messages): the errors a hook acts on arrive as themselves.
	text, err := c.Text(ctx, "intent/42/7")
	require.NoError(t, err)
	require.Equal(t, "the text of intent/42/7", text)
	_, err = c.Text(ctx, "intent/42/none")
	require.ErrorIs(t, err, intent.ErrNotFound)
	require.NoError(t, c.Close(ctx, "intent/42/7"))
	require.ErrorIs(t, c.Close(ctx, "intent/42/ended"), intent.ErrNotOpen)
	closed, err := c.CloseOldest(ctx, "42")
	require.NoError(t, err)
	require.Equal(t, "intent/42/1", closed)
	_, err = c.CloseOldest(ctx, "0")
	require.ErrorIs(t, err, intent.ErrNotFound)
	require.NoError(t, c.SendInbox(ctx, "boss", workflows.InboxSend{From: "s", Type: "done", Content: "ok"}))
	require.ErrorContains(t, c.SendInbox(ctx, "down", workflows.InboxSend{From: "s"}), "Temporal is down")
}

// Issue 38: what a session said is unread in its agent's inbox is the desk's answer to the
// agent's Stop hook, no read of the server; a word older than the one kept changes nothing; it
// survives a restart of the worker.
func TestDeskAnswersUnreadAsTheSessionSaid(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(filepath.Join(dir, "desk"), (&signals{}).send, nil)
	require.NoError(t, err)
	srv, err := desksocket.Listen(desksocket.SocketPath(dir), d, reader{}, "s3cret", nil)
	require.NoError(t, err)
	ctx := context.Background()
	c := desksocket.Client{Path: srv.Addr(), Token: "s3cret"}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	two := workflows.InboxUnread{Count: 2, First: []workflows.InboxMessage{{ID: "down#1", From: "boss", Content: "a"}, {ID: "down#2", From: "boss", Content: "b"}}}
	_, err = c.Unread(ctx, "down")
	require.ErrorContains(t, err, "Temporal is down", "said nothing yet: the server is read")
	require.NoError(t, d.KnowInbox(ctx, workflows.DeskInboxRequest{Session: "down", Unread: two, At: at}))
	got, err := c.Unread(ctx, "down")
	require.NoError(t, err, "the desk answers without the server")
	require.Equal(t, two, got)
	require.NoError(t, d.KnowInbox(ctx, workflows.DeskInboxRequest{Session: "down", Unread: workflows.InboxUnread{}, At: at.Add(-time.Second)}))
	got, err = c.Unread(ctx, "down")
	require.NoError(t, err)
	require.Equal(t, two, got, "a late attempt of an older word changes nothing")
	require.NoError(t, d.KnowInbox(ctx, workflows.DeskInboxRequest{Session: "down", Unread: workflows.InboxUnread{}, At: at.Add(time.Second)}))
	got, err = c.Unread(ctx, "down")
	require.NoError(t, err)
	require.Equal(t, workflows.InboxUnread{}, got, "read since")
	// A word that names unread messages is read again where the server answers (the agent may
	// have read them since): the reader's one message, not the word's five.
	require.NoError(t, d.KnowInbox(ctx, workflows.DeskInboxRequest{Session: "secretary", Unread: workflows.InboxUnread{Count: 5}, At: at}))
	got, err = c.Unread(ctx, "secretary")
	require.NoError(t, err)
	require.Equal(t, 1, got.Count)
	require.NoError(t, srv.Close())

	d, err = Open(filepath.Join(dir, "desk"), (&signals{}).send, nil)
	require.NoError(t, err)
	u, known := d.UnreadInbox("down")
	require.True(t, known, "kept in the journal")
	require.Equal(t, workflows.InboxUnread{}, u)
	_, known = d.UnreadInbox("nobody")
	require.False(t, known)
	// A desk that serves no hooks is told nothing more: what it knew is forgotten, also by the
	// next worker, whose desk reads the inbox instead.
	d.Refuse()
	err = d.KnowInbox(ctx, workflows.DeskInboxRequest{Session: "down", At: at.Add(time.Minute)})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, workflows.ErrTypeNoDesk, appErr.Type())
	_, known = d.UnreadInbox("down")
	require.False(t, known)
	d, err = Open(filepath.Join(dir, "desk"), (&signals{}).send, nil)
	require.NoError(t, err)
	_, known = d.UnreadInbox("down")
	require.False(t, known, "forgotten on disk too")
}

// An unreadable journal (a disk error, an edit) does not keep the worker from starting: it is
// set aside, said loudly, and the desk serves.
func TestDeskUnreadableJournalSetAside(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "73.json"), []byte("{not json"), 0o600))
	d, err := Open(dir, (&signals{}).send, nil)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "73.json.unreadable"))
	require.NoError(t, err, "kept aside")
	require.NoError(t, d.Publish(context.Background(), workflows.DeskPublishRequest{Session: "s", Key: "standing/r/1", Messages: msgs("1")}))
}

// Issue 32: a hook took a standing offer, the worker died before the hook could commit, and the
// hook recorded the commit on disk. The next worker's desk applies it before its workflows run
// (Flush): the session gets the take and the commit in one word, the journal keeps it, and the
// record goes once passed on. A commit recorded for a take the desk never answered (through the
// workflow) is passed on as well.
func TestRecordedCommitAppliedAtStart(t *testing.T) {
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "desk")
	first := &signals{fail: errors.New("connection refused")}
	d, err := Open(dir, first.send, nil)
	require.NoError(t, err)
	msgs := []workflows.DeliveryRequest{{ID: "intent/5/1#1", ReplyTo: "intent/5/1", Kind: workflows.KindMessage, Text: "one"}}
	require.NoError(t, d.Publish(context.Background(), workflows.DeskPublishRequest{Session: "s", Key: "standing/r/1", Messages: msgs}))
	res, err := d.Take("s", workflows.TakeRequest{Key: "post-tool-use/toolu_1", Event: workflows.EventPostToolUse})
	require.NoError(t, err)
	require.Equal(t, "standing/r/1", res.Key)
	// The worker dies here; the hook printed the take and records its commit.
	require.NoError(t, desksocket.RecordCommit(dataDir, "s", res.Key))
	require.NoError(t, desksocket.RecordCommit(dataDir, "s", "post-tool-use/through-the-workflow"))
	info, err := os.Stat(desksocket.CommitsDir(dataDir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	next := &signals{}
	d2, err := Open(dir, next.send, nil)
	require.NoError(t, err)
	require.NoError(t, d2.Flush(context.Background()))
	got := next.list()
	require.Contains(t, got, "session/s standing-taken standing/r/1 by post-tool-use/toolu_1")
	require.Contains(t, got, "session/s taken standing/r/1")
	require.Contains(t, got, "session/s taken post-tool-use/through-the-workflow")
	left, err := os.ReadDir(desksocket.CommitsDir(dataDir))
	require.NoError(t, err)
	require.Empty(t, left, "records passed on are removed")
	// A third start passes nothing on again.
	third := &signals{}
	d3, err := Open(dir, third.send, nil)
	require.NoError(t, err)
	require.NoError(t, d3.Flush(context.Background()))
	require.Empty(t, third.list())
	res, err = d3.Take("s", workflows.TakeRequest{Key: "post-tool-use/toolu_2", Event: workflows.EventPostToolUse})
	require.NoError(t, err)
	require.Empty(t, res.Messages, "the committed offer is not handed over again")
}

// Issue 33 (7): a batch the server refuses for good (over its size limit) never wedges the desk:
// it goes again in halves, a single word still refused is set aside loudly, and every other
// word, of that session and of the others, is passed on.
func TestDeskNeverWedgesOnARefusedWord(t *testing.T) {
	sig := &signals{}
	refuse := func(_ context.Context, id, signal string, arg any) error {
		w := arg.(workflows.HookWords)
		size := 0
		for _, c := range w.Contexts {
			size += len(c.Text)
		}
		if size > 1000 || len(w.Events)+len(w.Contexts)+len(w.Commits) > 8 {
			return serviceerror.NewInvalidArgument("Blob data size exceeds limit.")
		}
		return sig.send(context.Background(), id, signal, arg)
	}
	d, err := Open(t.TempDir(), refuse, nil)
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, d.Report("s", workflows.AgentEvent{Event: fmt.Sprintf("e%d", i)}))
	}
	require.NoError(t, d.Context("s", "session-start/huge", strings.Repeat("x", 5000)))
	require.NoError(t, d.Commit("s", "post-tool-use/toolu_1"))
	require.NoError(t, d.Report("other", workflows.AgentEvent{Event: "stop"}))
	require.NoError(t, d.Flush(context.Background()))
	want := []string{"session/s taken post-tool-use/toolu_1", "session/other event stop"}
	for i := range 10 {
		want = append(want, fmt.Sprintf("session/s event e%d", i))
	}
	sig.waitFor(t, want...)
	for _, g := range sig.list() {
		require.NotContains(t, g, "session-start/huge", "the refused word was passed on")
	}
}

// Issue 38: one session's journal write, however slow (ext4 beside SQLite's fsyncs), holds no
// other session's hook; the session's own withdrawal waits for it and answers what it wrote.
func TestDeskSlowJournalHoldsOnlyItsSession(t *testing.T) {
	d, err := Open(t.TempDir(), (&signals{}).send, nil)
	require.NoError(t, err)
	ctx := context.Background()
	for _, s := range []string{"slow", "fast"} {
		require.NoError(t, d.Publish(ctx, workflows.DeskPublishRequest{Session: s, Key: "standing/" + s + "/1", Messages: msgs("1")}))
	}
	slowFile := journalPath(d.dir, "slow")
	started, release := make(chan struct{}), make(chan struct{})
	var written atomic.Bool
	// The slow session's first write waits for release; written says it is done.
	slow := func(path string, write func() error) error {
		if path != slowFile || written.Load() {
			return write()
		}
		close(started)
		<-release
		defer written.Store(true)
		return write()
	}
	d.write = func(path string, data []byte) error {
		return slow(path, func() error { return private.WriteFileAtomic(path, data) })
	}
	d.appendTo = func(path string, line []byte) error {
		return slow(path, func() error { return appendJournal(path, line) })
	}
	took := make(chan workflows.TakeResult, 1)
	go func() {
		res, err := d.Take("slow", workflows.TakeRequest{Key: "stop/slow", Event: workflows.EventStop})
		assert.NoError(t, err)
		took <- res
	}()
	<-started
	withdrawn := make(chan workflows.DeskWithdrawResult, 1)
	go func() {
		w, err := d.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "slow", Key: "standing/slow/1"})
		assert.NoError(t, err)
		assert.True(t, written.Load(), "the withdrawal answered before the take it reports was on disk")
		withdrawn <- w
	}()

	fast := make(chan workflows.TakeResult, 1)
	go func() {
		res, err := d.Take("fast", workflows.TakeRequest{Key: "stop/fast", Event: workflows.EventStop})
		assert.NoError(t, err)
		fast <- res
	}()
	select {
	case res := <-fast:
		require.Equal(t, "standing/fast/1", res.Key, "the other session's hook took its own offer")
	case <-time.After(30 * time.Second):
		t.Fatal("a hook of another session waited for this session's journal write")
	}
	w, err := d.Withdraw(ctx, workflows.DeskWithdrawRequest{Session: "fast", Key: "standing/fast/1"})
	require.NoError(t, err)
	require.Equal(t, "stop/fast", w.Taken.Hook)

	close(release)
	require.Equal(t, "standing/slow/1", (<-took).Key)
	require.Equal(t, "stop/slow", (<-withdrawn).Taken.Hook, "the withdrawal waited for the take and reports it")
}
