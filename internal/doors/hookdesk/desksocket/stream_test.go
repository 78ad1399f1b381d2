package desksocket

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/hookapi"
)

// helperEnv makes the test binary a child that answers the protocol (TestMain).
const helperEnv = "DESKSOCKET_HELPER_STREAM"

// fakeBackend answers as Temporal would: a take hands over one message named after its
// session, "ended" has ended, "slow" takes longer than any hook waits.
type fakeBackend struct{}

func (fakeBackend) Take(_ context.Context, session string, req hookapi.TakeRequest) (hookapi.TakeResult, error) {
	return hookapi.TakeResult{Key: req.Key, Messages: []hookapi.DeliveryRequest{{ID: "m", ReplyTo: "intent/1/" + session, Kind: hookapi.KindMessage}}}, nil
}
func (fakeBackend) Taken(context.Context, string, string) error                 { return nil }
func (fakeBackend) Report(context.Context, string, hookapi.AgentEvent) error    { return nil }
func (fakeBackend) CommitContext(context.Context, string, string, string) error { return nil }
func (fakeBackend) PendingPage(context.Context, hookapi.Filter, int) (hookapi.Page, error) {
	return hookapi.Page{Intents: []hookapi.Summary{{ID: "intent/1/2", Text: "full"}}}, nil
}
func (fakeBackend) Unread(context.Context, string) (hookapi.InboxUnread, error) {
	return hookapi.InboxUnread{Count: 2}, nil
}
func (fakeBackend) Text(ctx context.Context, id string) (string, error) {
	if id == "slow" {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return "text of " + id, nil
}
func (fakeBackend) Close(_ context.Context, id string) error {
	if id == "ended" {
		return fmt.Errorf("close %s: %w", id, hookapi.ErrNotOpen)
	}
	return nil
}
func (fakeBackend) Had(_ context.Context, _ string, intents []string) ([]hookapi.HadMessage, error) {
	return []hookapi.HadMessage{{Intent: intents[0]}}, nil
}
func (fakeBackend) CloseOldest(context.Context, string) (string, error) {
	return "", hookapi.ErrNotFound
}
func (fakeBackend) SendInbox(context.Context, string, hookapi.InboxSend) error {
	return errors.New("Temporal is down")
}

// TestMain makes the test binary, started with helperEnv set, the child the tests talk to: it
// answers the protocol on its stdin and stdout with fakeBackend.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		if err := ServeStream(os.Stdin, os.Stdout, fakeBackend{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startHelper(t *testing.T) *Child {
	child, err := StartChild(func() *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=1")
		return cmd
	})
	if err != nil {
		t.Fatal(err)
	}
	return child
}

// Issue 38: a hook without the Temporal SDK makes its calls through a starter child in the
// desk's own protocol: answers and the errors a hook acts on arrive as the desk gives them; a
// call whose context ended before it was made ends nothing; a call that outlives its deadline
// ends the process (its answer would reach the next call), and the next call, the commit after
// a read that ran out of time, gets a new one.
func TestChildAnswersTheProtocol(t *testing.T) {
	child := startHelper(t)
	c := child.Client()
	ctx := context.Background()
	res, err := c.Take(ctx, "s1", hookapi.TakeRequest{Key: "stop/1", Event: hookapi.EventStop})
	if err != nil || res.Key != "stop/1" || len(res.Messages) != 1 || res.Messages[0].ReplyTo != "intent/1/s1" {
		t.Fatalf("take: %+v %v", res, err)
	}
	page, err := c.PendingPage(ctx, hookapi.Filter{Session: "s1"}, 5)
	if err != nil || len(page.Intents) != 1 || page.Intents[0].Text != "full" {
		t.Fatalf("page (its texts carried beside it): %+v %v", page, err)
	}
	if u, err := c.Unread(ctx, "a"); err != nil || u.Count != 2 {
		t.Fatalf("unread: %+v %v", u, err)
	}
	if text, err := c.Text(ctx, "intent/1/2"); err != nil || text != "text of intent/1/2" {
		t.Fatalf("text: %q %v", text, err)
	}
	if err := c.Close(ctx, "ended"); !errors.Is(err, hookapi.ErrNotOpen) {
		t.Fatalf("close of an ended intent: %v", err)
	}
	if _, err := c.CloseOldest(ctx, "1"); !errors.Is(err, hookapi.ErrNotFound) {
		t.Fatalf("close oldest of none: %v", err)
	}
	if err := c.SendInbox(ctx, "boss", hookapi.InboxSend{}); err == nil || errors.Is(err, hookapi.ErrNotFound) {
		t.Fatalf("send with Temporal down: %v", err)
	}
	for _, err := range []error{
		c.Taken(ctx, "s1", "stop/1"),
		c.Report(ctx, "s1", hookapi.AgentEvent{Event: hookapi.EventStop}),
		c.CommitContext(ctx, "s1", "session-start/x", "listed"),
	} {
		if err != nil {
			t.Fatalf("word: %v", err)
		}
	}
	first := child.proc
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	if _, err := c.Text(done, "intent/1/3"); !errors.Is(err, context.Canceled) || child.proc != first {
		t.Fatalf("a call whose context had ended: %v (process ended: %v)", err, child.proc != first)
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Text(tctx, "slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past the hook's deadline: %v", err)
	}
	select {
	case <-first.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the process of the call that ran out of time still runs")
	}
	if err := c.Taken(ctx, "s1", "stop/2"); err != nil {
		t.Fatalf("the commit after a call that ran out of time: %v", err)
	}
	if child.proc == first || child.proc == nil {
		t.Fatal("the commit was not answered by a new process")
	}
	if err := child.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// The child ends when its hook closes it, and a line that is not a request gets an error
// answer, never a crash.
func TestChildEndsWithItsInput(t *testing.T) {
	child := startHelper(t)
	if _, err := child.send(context.Background(), request{Op: "no-such-call"}); !errors.Is(err, ErrUnknownCall) {
		t.Fatalf("an unknown call: %v", err)
	}
	// A desk of an older build names an unknown call without a code.
	if err := (response{Error: `unknown call "close"`}).err(); !errors.Is(err, ErrUnknownCall) {
		t.Fatalf("an older desk's unknown call: %v", err)
	}
	p := child.proc
	if _, err := p.in.Write([]byte("{not json\n")); err != nil {
		t.Fatal(err)
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil || !strings.Contains(string(line), "not the expected JSON") {
		t.Fatalf("garbage: %q %v", line, err)
	}
	if err := child.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not end with its input")
	}
}
