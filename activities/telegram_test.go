package activities

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/testkit/fakebot"
)

// Issue 24: each part of a long answer is recorded as sent before the next goes out, so an
// attempt after a crash (or a failure after part 2) resumes after the last part Telegram
// accepted: the person never reads a part twice.
func TestTelegramSendResumesAfterTheLastPartSent(t *testing.T) {
	bot := fakebot.New("1:send")
	defer bot.Close()
	tg := &Telegram{Token: "1:send", Endpoint: bot.Endpoint(), SentDir: t.TempDir()}
	text := strings.Repeat("a", TelegramMaxChars) + strings.Repeat("b", TelegramMaxChars) + "c"
	req := SendRequest{ChatID: "42", ReplyTo: "7", Text: text, Key: "intent/42/7/k"}
	ctx := context.Background()
	// Parts 1 and 2 go out, part 3 fails (the worker would retry the activity).
	sent, err := tg.Send(ctx, SendRequest{ChatID: "42", ReplyTo: "7", Text: text[:2*TelegramMaxChars], Key: req.Key})
	if err != nil || len(sent) != 2 {
		t.Fatalf("first two parts: %v %v", sent, err)
	}
	bot.FailNextMethod("sendMessage", http.StatusBadGateway, 1)
	if _, err := tg.Send(ctx, req); err == nil {
		t.Fatal("part 3 failed, yet Send succeeded")
	}
	ids, err := tg.Send(ctx, req) // the retry: a new attempt, no heartbeat details
	if err != nil || len(ids) != 3 || ids[0] != sent[0] || ids[1] != sent[1] {
		t.Fatalf("retry: %v %v (first %v)", ids, err, sent)
	}
	if n := len(bot.Sent()); n != 3 {
		t.Fatalf("Telegram got %d messages, want 3 (each part once)", n)
	}
	// Another answer (another key) is sent in full.
	if ids, err := tg.Send(ctx, SendRequest{ChatID: "42", Text: "short", Key: "other"}); err != nil || len(ids) != 1 || len(bot.Sent()) != 4 {
		t.Fatalf("another answer: %v %v", ids, err)
	}
}
