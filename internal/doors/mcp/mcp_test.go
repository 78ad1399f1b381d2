package mcp

import (
	"context"
	"testing"

	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// stubBackend records which intent a reply went to.
type stubBackend struct {
	Backend
	oldest   string
	replied  []string
	unlinked int
}

func (s *stubBackend) Reply(_ context.Context, id string, r workflows.ReplyRequest) (workflows.ReplyRecord, error) {
	s.replied = append(s.replied, id+" "+r.Key)
	return workflows.ReplyRecord{Key: r.Key, MessageIDs: []int{1}}, nil
}

func (s *stubBackend) OldestPending(context.Context, string) (string, error) {
	if s.oldest == "" {
		return "", intent.ErrNotFound
	}
	return s.oldest, nil
}

func (s *stubBackend) SendUnlinked(context.Context, string, string, string) ([]int, error) {
	s.unlinked++
	return []int{2}, nil
}

// The intent a reply answers: named, or chat and reply_to, or the chat's oldest pending one;
// with nothing pending the answer is a follow-up, sent as it is. The key is the answer's.
func TestReplyTarget(t *testing.T) {
	b := &stubBackend{oldest: "intent/42/5"}
	ctx := context.Background()
	for _, a := range []ReplyArgs{
		{Intent: "42/7", Text: "a"},
		{ChatID: "42", ReplyTo: "8", Text: "b"},
		{ChatID: "42", Text: "c"},
	} {
		if _, err := reply(ctx, b, a); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"intent/42/7 " + workflows.ReplyKey("a"), "intent/42/8 " + workflows.ReplyKey("b"), "intent/42/5 " + workflows.ReplyKey("c")}
	for i := range want {
		if b.replied[i] != want[i] {
			t.Errorf("reply %d went to %q, want %q", i, b.replied[i], want[i])
		}
	}
	b.oldest = ""
	if res, err := reply(ctx, b, ReplyArgs{ChatID: "42", Text: "follow-up"}); err != nil || b.unlinked != 1 || res.Closed {
		t.Errorf("follow-up: %+v %v", res, err)
	}
	for _, a := range []ReplyArgs{{ChatID: "42"}, {Text: "x"}, {ChatID: "4/2", ReplyTo: "1", Text: "x"}, {Intent: "nope", Text: "x"}} {
		if _, err := reply(ctx, b, a); err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
	if _, err := reply(ctx, b, ReplyArgs{ChatID: "42", ReplyTo: "9", Text: "   "}); err == nil {
		t.Error("a blank answer was accepted")
	}
}
