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

// Issue 24: a part whose answer was lost after Telegram accepted it (a timeout, a reset, a
// crash) cannot be told from one Telegram never got: the Bot API has no idempotency key. It
// goes again, labelled as possibly repeated, rather than being lost; a part Telegram refused
// or never saw goes again unlabelled, and parts already answered are never sent again.
func TestTelegramSendLabelsAPartWhoseAnswerWasLost(t *testing.T) {
	bot := fakebot.New("1:send")
	defer bot.Close()
	tg := &Telegram{Token: "1:send", Endpoint: bot.Endpoint(), SentDir: t.TempDir()}
	a, b, c := strings.Repeat("a", TelegramMaxChars), strings.Repeat("b", TelegramMaxChars), strings.Repeat("c", 10)
	req := SendRequest{ChatID: "42", ReplyTo: "7", Text: a + b + c, Key: "intent/42/7/lost"}
	ctx := context.Background()
	bot.FailNextMethod("sendMessage", http.StatusBadGateway, 1) // refused: surely not sent
	if _, err := tg.Send(ctx, req); err == nil {
		t.Fatal("a refused part, yet Send succeeded")
	}
	if _, err := tg.Send(ctx, SendRequest{ChatID: "42", ReplyTo: "7", Text: a, Key: req.Key}); err != nil {
		t.Fatal(err)
	}
	lose := func(req SendRequest) {
		t.Helper()
		bot.LoseAnswerNext("sendMessage", 1)
		if _, err := tg.Send(ctx, req); err == nil {
			t.Fatal("a lost answer, yet Send succeeded")
		}
	}
	lose(req) // part 2 reaches the chat, its answer is lost
	if ids, err := tg.Send(ctx, req); err != nil || len(ids) != 3 {
		t.Fatalf("retry: %v %v", ids, err)
	}
	short := SendRequest{ChatID: "42", Text: c, Key: "intent/42/8/lost"}
	lose(short)
	if ids, err := tg.Send(ctx, short); err != nil || len(ids) != 1 {
		t.Fatalf("retry: %v %v", ids, err)
	}
	var got []string
	for _, m := range bot.Sent() {
		got = append(got, m.Text)
	}
	// A full part has no room for the label: a notice goes before it.
	want := []string{a, b, strings.TrimSpace(resentLabel), b, c, c, resentLabel + c}
	if len(got) != len(want) {
		t.Fatalf("Telegram got %d messages, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d = %.80q, want %.80q", i+1, got[i], want[i])
		}
	}
}

// Issue 61: a card goes as one HTML message, and is recorded as its approval's card: CardOf names
// the approval for that message and for no other.
func TestTelegramSendRecordsTheCard(t *testing.T) {
	bot := fakebot.New("1:card")
	defer bot.Close()
	tg := &Telegram{Token: "1:card", Endpoint: bot.Endpoint(), SentDir: t.TempDir()}
	text := "🔐 <b>command</b>:\n<pre>" + strings.Repeat("&amp;", 1500) + "</pre>" // over 4,096 as sent, 1,500 as shown
	ids, err := tg.Send(context.Background(), SendRequest{ChatID: "42", Text: text, HTML: true, Key: "approval/s/tok/card", Card: "approval/s/tok",
		Buttons: []Button{{Text: "Deny", Data: "tok:d"}}})
	if err != nil || len(ids) != 1 {
		t.Fatalf("sent %v: %v", ids, err)
	}
	if got := tg.CardOf("42", ids[0]); got != "approval/s/tok" {
		t.Errorf("CardOf the card: %q", got)
	}
	other, err := tg.Send(context.Background(), SendRequest{ChatID: "42", Text: "an answer", Key: "intent/42/1/r", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.CardOf("42", other[0]); got != "" {
		t.Errorf("CardOf another message: %q", got)
	}
	if got := tg.CardOf("43", ids[0]); got != "" {
		t.Errorf("CardOf the same ID in another chat: %q", got)
	}
}
