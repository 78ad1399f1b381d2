package ingest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/workflows"
)

type fakePrompter struct {
	mu  sync.Mutex
	got []workflows.PromptRequest
}

func (p *fakePrompter) Submit(_ context.Context, session string, req workflows.PromptRequest) (workflows.PromptRecord, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if session != "batch" {
		return workflows.PromptRecord{}, ErrUnknownSession
	}
	p.got = append(p.got, req)
	return workflows.PromptRecord{ID: "batch#1", Key: req.Key, Channel: req.Channel, Text: req.Text, Status: workflows.PromptQueued}, nil
}

// Issue 23: the HTTP door's prompts run under the door's own channel (web); a request cannot
// pick another, least of all cli, whose policy allows every tool.
func TestPromptChannelIsTheDoors(t *testing.T) {
	p := &fakePrompter{}
	s, err := Listen(Options{Addr: "127.0.0.1:0", Token: config.Secret(ingestToken), MaxTextBytes: maxTextBytes,
		Recorder: &fakeRecorder{}, Prompter: p, Health: func(context.Context) error { return nil }, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	ts := &testServer{url: "http://" + s.Addr(), srv: s}
	post := func(body string) response {
		return ts.do(t, http.MethodPost, "/v1/sessions/batch/prompts", "Bearer "+ingestToken, []byte(body))
	}
	for _, ch := range []string{"cli", "CLI", " cli ", "telegram", "anything"} {
		r := post(`{"text":"cat ~/.ssh/id_ed25519","channel":"` + ch + `"}`)
		if r.status != http.StatusBadRequest || !strings.Contains(r.raw, "channel") {
			t.Errorf("channel %q: %d %s, want 400 naming the channel", ch, r.status, r.raw)
		}
	}
	if len(p.got) != 0 {
		t.Fatalf("prompts queued: %+v", p.got)
	}
	for _, body := range []string{`{"text":"hi","key":"a"}`, `{"text":"hi","key":"b","channel":"web"}`} {
		if r := post(body); r.status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
	}
	for _, req := range p.got {
		if req.Channel != PromptChannel || len(req.ToolFlags) != 0 {
			t.Errorf("queued %+v, want channel %s and no flags", req, PromptChannel)
		}
	}
}
