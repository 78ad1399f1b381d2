package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// goneDesk is a desk that answered a take and then died (its worker was killed).
type goneDesk struct{ offer []workflows.DeliveryRequest }

var errGone = fmt.Errorf("%w: dial unix hooks.sock: connect: connection refused", desksocket.ErrNoDesk)

func (g *goneDesk) Take(_ context.Context, _ string, req workflows.TakeRequest) (workflows.TakeResult, error) {
	return workflows.TakeResult{Key: "standing/r/1", Messages: g.offer}, nil
}
func (*goneDesk) Taken(context.Context, string, string) error { return errGone }
func (*goneDesk) Report(context.Context, string, workflows.AgentEvent) error {
	return errGone
}
func (*goneDesk) CommitContext(context.Context, string, string, string) error { return errGone }
func (*goneDesk) PendingPage(context.Context, intent.Filter, int) (intent.Page, error) {
	return intent.Page{}, errGone
}
func (*goneDesk) Unread(context.Context, string) (workflows.InboxUnread, error) {
	return workflows.InboxUnread{}, errGone
}
func (*goneDesk) Text(context.Context, string) (string, error)        { return "", errGone }
func (*goneDesk) Close(context.Context, string) error                 { return errGone }
func (*goneDesk) CloseOldest(context.Context, string) (string, error) { return "", errGone }
func (*goneDesk) SendInbox(context.Context, string, workflows.InboxSend) error {
	return errGone
}
func (*goneDesk) Had(context.Context, string, []string) ([]workflows.HadMessage, error) {
	return nil, errGone
}

// deadBackend is Temporal gone with the worker (the embedded server).
type deadBackend struct{ fakeBackend }

func (*deadBackend) Taken(context.Context, string, string) error { return errGone }

// Issue 32: a hook printed what the desk handed it, and the worker died before the commit: the
// commit is recorded on disk (for the next worker to apply), not lost.
func TestCommitRecordedWhenTheWorkerIsGone(t *testing.T) {
	dataDir := t.TempDir()
	v := &ViaDesk{Desk: &goneDesk{offer: []workflows.DeliveryRequest{{ID: "intent/5/1#1", ReplyTo: "intent/5/1", Kind: workflows.KindMessage, Text: "one"}}}, Backend: &deadBackend{}, DataDir: dataDir}
	ctx := context.Background()
	res, err := v.Take(ctx, "secretary", workflows.TakeRequest{Key: "post-tool-use/toolu_1", Event: workflows.EventPostToolUse})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("take: %+v %v", res, err)
	}
	if err := v.Taken(ctx, "secretary", res.Key); err != nil {
		t.Fatalf("commit with the worker gone: %v, want it recorded", err)
	}
	entries, err := os.ReadDir(desksocket.CommitsDir(dataDir))
	if err != nil || len(entries) != 1 {
		t.Fatalf("recorded commits: %v %v", entries, err)
	}
	info, err := entries[0].Info()
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("record mode: %v %v", info, err)
	}
}

// endedDesk is a desk whose worker answers that every intent has ended.
type endedDesk struct{ goneDesk }

func (*endedDesk) Close(_ context.Context, id string) error {
	return fmt.Errorf("hook desk: intent %s: %w", id, intent.ErrNotOpen)
}

// slowDesk is a desk whose worker took the call and did not answer in time: it may have done it.
type slowDesk struct{ goneDesk }

func (*slowDesk) CloseOldest(context.Context, string) (string, error) {
	return "", errors.New("hook desk: no answer: read unix: i/o timeout")
}

// Issue 38: a hook's closes, reads and inbox sends go through the desk (the worker's client, no
// connection of the hook's own); an intent that has ended is the desk's answer, not asked again;
// a desk that is gone sends the call the other way, one that took it and did not answer does
// not.
func TestIntentCallsGoThroughTheDesk(t *testing.T) {
	ctx := context.Background()
	b := &fakeBackend{}
	ended := &ViaDesk{Desk: &endedDesk{}, Backend: b}
	if err := ended.Close(ctx, "intent/5/1"); !errors.Is(err, intent.ErrNotOpen) {
		t.Fatalf("close of an ended intent: %v", err)
	}
	if len(b.closed) != 0 {
		t.Fatalf("an answer of the desk was asked again: %v", b.closed)
	}
	gone := &ViaDesk{Desk: &goneDesk{}, Backend: b}
	if err := gone.Close(ctx, "intent/5/2"); err != nil {
		t.Fatalf("close with the desk gone: %v", err)
	}
	if err := gone.SendInbox(ctx, "boss", workflows.InboxSend{From: "s", Content: "done"}); err != nil {
		t.Fatalf("send with the desk gone: %v", err)
	}
	if len(b.closed) != 1 || b.closed[0] != "intent/5/2" || len(b.sent) != 1 {
		t.Fatalf("the calls did not go the other way: closed %v, sent %v", b.closed, b.sent)
	}
	// A close the desk took and did not answer in time may be done: made again, a chat's
	// "oldest pending" would close a second intent.
	slow := &ViaDesk{Desk: &slowDesk{}, Backend: b}
	if _, err := slow.CloseOldest(ctx, "5"); err == nil {
		t.Fatal("an unanswered close counted as done")
	}
	if len(b.closed) != 1 {
		t.Fatalf("an unanswered close was made again: %v", b.closed)
	}
}

// Issue 38: a starter that intentq-hook handed a hook to has what is left of the hook's time;
// a starter the CLI ran itself has the whole of it.
func TestBudgetIsWhatIsLeft(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	began := strconv.FormatInt(now.Add(-300*time.Millisecond).UnixNano(), 10)
	if got := Budget(5*time.Second, began, now); got != 4700*time.Millisecond {
		t.Errorf("after 300 ms of 5 s: %v", got)
	}
	if got := Budget(0, began, now); got != DefaultTimeout-300*time.Millisecond {
		t.Errorf("the default time: %v", got)
	}
	if got := Budget(time.Minute, began, now); got != MaxTimeout-KillMargin-300*time.Millisecond {
		t.Errorf("over the cap: %v", got)
	}
	if got := Budget(5*time.Second, strconv.FormatInt(now.Add(-time.Hour).UnixNano(), 10), now); got != time.Millisecond {
		t.Errorf("the time gone: %v", got)
	}
	for _, none := range []string{"", "soon", "-5"} {
		if got := Budget(5*time.Second, none, now); got != 5*time.Second {
			t.Errorf("began %q: %v", none, got)
		}
	}
}

// A back-off marked a moment "ahead" (the kernel's clock on another virtual CPU) holds; one from
// the future (the clock was set back) does not; one older than TakeBackoff has ended.
func TestTakeBackoffReadsTheMarksTime(t *testing.T) {
	dir := t.TempDir()
	if err := markTakeUnanswered(dir); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(takeBackoffFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	mark := info.ModTime()
	for _, c := range []struct {
		now  time.Time
		want bool
	}{
		{mark.Add(-100 * time.Millisecond), true},
		{mark.Add(time.Second), true},
		{mark.Add(-time.Hour), false},
		{mark.Add(TakeBackoff + time.Second), false},
	} {
		if got := takeBackingOff(dir, c.now); got != c.want {
			t.Errorf("now = mark %+v: backing off %v, want %v", c.now.Sub(mark), got, c.want)
		}
	}
}
