package hooks

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// goneDesk is a desk that answered a take and then died (its worker was killed).
type goneDesk struct{ offer []workflows.DeliveryRequest }

var errGone = errors.New("dial unix hooks.sock: connect: connection refused")

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
