package fakebot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/intentq/intentq/internal/testkit/fakebot"
)

const token = "123456:TEST-fake-token"

func start(t *testing.T) (*fakebot.Server, *tgbotapi.BotAPI) {
	t.Helper()
	s := fakebot.New(token)
	t.Cleanup(s.Close)
	bot, err := tgbotapi.NewBotAPIWithClient(token, s.Endpoint(), http.DefaultClient)
	if err != nil {
		t.Fatalf("NewBotAPIWithClient: %v", err)
	}
	return s, bot
}

func apiError(t *testing.T, err error) *tgbotapi.Error {
	t.Helper()
	var e *tgbotapi.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *tgbotapi.Error", err, err)
	}
	return e
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestGetMe(t *testing.T) {
	s, bot := start(t)
	if bot.Self.ID != 123456 || !bot.Self.IsBot || bot.Self.UserName != s.Bot().Username {
		t.Fatalf("Self = %+v", bot.Self)
	}
	if n := s.Calls("getMe"); n != 1 {
		t.Fatalf("Calls(getMe) = %d, want 1", n)
	}
}

func TestBadToken(t *testing.T) {
	s := fakebot.New(token)
	defer s.Close()
	_, err := tgbotapi.NewBotAPIWithClient("654321:wrong", s.Endpoint(), http.DefaultClient)
	if err == nil {
		t.Fatal("no error for a wrong token")
	}
	if e := apiError(t, err); e.Code != 401 || e.Message != "Unauthorized" {
		t.Fatalf("error = %+v, want 401 Unauthorized", e)
	}
	if s.Calls("") != 0 {
		t.Fatal("a request with a wrong token was counted")
	}
}

func TestMessagesArriveInOrder(t *testing.T) {
	s, bot := start(t)
	texts := []string{"first", "second", "third ünïcode 🎉"}
	var ids []int
	for i, text := range texts {
		ids = append(ids, s.AddMessage(42, 42, 10+i, text))
	}
	if ids[0] != fakebot.FirstUpdateID || ids[1] != ids[0]+1 || ids[2] != ids[1]+1 {
		t.Fatalf("update ids = %v", ids)
	}
	if s.Pending() != 3 {
		t.Fatalf("Pending = %d", s.Pending())
	}

	before := time.Now()
	ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 3 {
		t.Fatalf("got %d updates, want 3", len(ups))
	}
	for i, u := range ups {
		m := u.Message
		if u.UpdateID != ids[i] || m == nil || m.Text != texts[i] || m.MessageID != 10+i {
			t.Fatalf("update %d = %+v / %+v", i, u, m)
		}
		if m.From == nil || m.From.ID != 42 || m.From.IsBot || m.From.FirstName == "" || m.From.UserName == "" {
			t.Fatalf("from = %+v", m.From)
		}
		if m.Chat == nil || m.Chat.ID != 42 || m.Chat.Type != "private" || !m.Chat.IsPrivate() {
			t.Fatalf("chat = %+v", m.Chat)
		}
		if m.Date == 0 || m.Time().After(time.Now().Add(time.Second)) {
			t.Fatalf("date = %d", m.Date)
		}
		if at := s.Served(u.UpdateID); at.Before(before) || at.After(time.Now()) {
			t.Fatalf("Served(%d) = %v", u.UpdateID, at)
		}
	}
	// Nothing was confirmed: offset 0 serves them again, first-served times stay.
	first := s.Served(ids[0])
	ups, err = bot.GetUpdates(tgbotapi.UpdateConfig{})
	if err != nil || len(ups) != 3 || ups[0].UpdateID != ids[0] {
		t.Fatalf("second call: %d updates, %v", len(ups), err)
	}
	if !s.Served(ids[0]).Equal(first) {
		t.Fatal("Served changed on a second delivery")
	}
	if s.Served(ids[2]+1) != (time.Time{}) {
		t.Fatal("Served of an unknown update is not zero")
	}
}

func TestOffsetConfirms(t *testing.T) {
	s, bot := start(t)
	a := s.AddMessage(1, 1, 1, "a")
	b := s.AddMessage(1, 1, 2, "b")
	c := s.AddMessage(1, 1, 3, "c")

	ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{Offset: b})
	if err != nil || len(ups) != 2 || ups[0].UpdateID != b || ups[1].UpdateID != c {
		t.Fatalf("offset b: %v %v", ups, err)
	}
	if s.Confirmed() != b || s.Pending() != 2 {
		t.Fatalf("Confirmed = %d (want %d), Pending = %d", s.Confirmed(), b, s.Pending())
	}
	// a is gone for good, even without an offset.
	ups, _ = bot.GetUpdates(tgbotapi.UpdateConfig{})
	if len(ups) != 2 || ups[0].UpdateID != b {
		t.Fatalf("after confirming a: %+v", ups)
	}
	ups, err = bot.GetUpdates(tgbotapi.UpdateConfig{Offset: c + 1})
	if err != nil || len(ups) != 0 {
		t.Fatalf("offset c+1: %v %v", ups, err)
	}
	if s.Confirmed() != c+1 || s.Pending() != 0 {
		t.Fatalf("Confirmed = %d, Pending = %d", s.Confirmed(), s.Pending())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.WaitConfirmed(ctx, c); err != nil {
		t.Fatal(err)
	}
	_ = a
}

func TestLimit(t *testing.T) {
	s, bot := start(t)
	for i := range 150 {
		s.AddMessage(7, 7, i+1, "m")
	}
	ups, _ := bot.GetUpdates(tgbotapi.UpdateConfig{Limit: 500})
	if len(ups) != 100 {
		t.Fatalf("limit 500: %d updates, want 100", len(ups))
	}
	ups, _ = bot.GetUpdates(tgbotapi.UpdateConfig{Offset: ups[99].UpdateID + 1, Limit: 20})
	if len(ups) != 20 || ups[0].Message.MessageID != 101 {
		t.Fatalf("limit 20: %d updates", len(ups))
	}
	ups, _ = bot.GetUpdates(tgbotapi.UpdateConfig{Offset: ups[19].UpdateID + 1})
	if len(ups) != 30 || ups[29].Message.MessageID != 150 {
		t.Fatalf("rest: %d updates", len(ups))
	}
}

func TestNegativeOffset(t *testing.T) {
	s, bot := start(t)
	for i := range 5 {
		s.AddMessage(7, 7, i+1, "m")
	}
	ups, _ := bot.GetUpdates(tgbotapi.UpdateConfig{Offset: -1})
	if len(ups) != 1 || ups[0].Message.MessageID != 5 {
		t.Fatalf("offset -1: %+v", ups)
	}
	if s.Pending() != 1 {
		t.Fatalf("Pending = %d, want 1 (the others are forgotten)", s.Pending())
	}
}

func TestLongPollWakesOnMessage(t *testing.T) {
	s, bot := start(t)
	type result struct {
		ups []tgbotapi.Update
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{Timeout: 10})
		done <- result{ups, err, time.Now()}
	}()
	waitFor(t, "the long poll", s.Polling)
	select {
	case r := <-done:
		t.Fatalf("long poll returned early: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	added := time.Now()
	id := s.AddMessage(5, 5, 99, "wake up")
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("long poll did not wake")
	}
	if r.err != nil || len(r.ups) != 1 || r.ups[0].UpdateID != id || r.ups[0].Message.Text != "wake up" {
		t.Fatalf("got %+v, %v", r.ups, r.err)
	}
	if served := s.Served(id); served.Before(added) || served.After(r.at) {
		t.Fatalf("Served = %v, added %v, received %v", served, added, r.at)
	}
	if s.Polling() {
		t.Fatal("still polling after the answer")
	}
}

func TestLongPollTimesOut(t *testing.T) {
	_, bot := start(t)
	t0 := time.Now()
	ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{Timeout: 1})
	if err != nil || len(ups) != 0 {
		t.Fatalf("got %v, %v", ups, err)
	}
	if d := time.Since(t0); d < 900*time.Millisecond || d > 3*time.Second {
		t.Fatalf("timeout 1 took %v", d)
	}
}

func TestCloseEndsLongPoll(t *testing.T) {
	s := fakebot.New(token)
	bot, err := tgbotapi.NewBotAPIWithClient(token, s.Endpoint(), http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := bot.GetUpdates(tgbotapi.UpdateConfig{Timeout: 30})
		done <- err
	}()
	waitFor(t, "the long poll", s.Polling)
	t0 := time.Now()
	s.Close()
	s.Close()
	if err := <-done; err != nil {
		t.Fatalf("long poll at close: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

func TestClientGoneEndsLongPoll(t *testing.T) {
	s, _ := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	bot, err := tgbotapi.NewBotAPIWithClient(token, s.Endpoint(), ctxClient{ctx})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := bot.GetUpdates(tgbotapi.UpdateConfig{Timeout: 30})
		done <- err
	}()
	waitFor(t, "the long poll", s.Polling)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("no error after cancelling")
	}
	waitFor(t, "the poll to end", func() bool { return !s.Polling() })
	// An update added now is not marked served.
	id := s.AddMessage(1, 1, 1, "x")
	if !s.Served(id).IsZero() {
		t.Fatal("served to a departed client")
	}
}

type ctxClient struct{ ctx context.Context }

func (c ctxClient) Do(r *http.Request) (*http.Response, error) {
	return http.DefaultClient.Do(r.WithContext(c.ctx))
}

func TestRedeliver(t *testing.T) {
	s, bot := start(t)
	id := s.AddMessage(3, 3, 77, "do it once")
	ups, _ := bot.GetUpdates(tgbotapi.UpdateConfig{})
	if len(ups) != 1 {
		t.Fatalf("%d updates", len(ups))
	}
	ups, _ = bot.GetUpdates(tgbotapi.UpdateConfig{Offset: id + 1})
	if len(ups) != 0 || s.Pending() != 0 {
		t.Fatalf("after confirming: %d updates, Pending %d", len(ups), s.Pending())
	}

	s.Redeliver(id)
	if s.Pending() != 1 {
		t.Fatalf("Pending after Redeliver = %d", s.Pending())
	}
	next := s.AddMessage(3, 3, 78, "new one")
	ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{Offset: id + 1, Timeout: 5})
	if err != nil || len(ups) != 2 {
		t.Fatalf("redelivery: %+v, %v", ups, err)
	}
	if ups[0].UpdateID != id || ups[0].Message.MessageID != 77 || ups[0].Message.Text != "do it once" || ups[1].UpdateID != next {
		t.Fatalf("redelivered %+v then %+v", ups[0], ups[1])
	}
	// The next call confirms the redelivery.
	ups, _ = bot.GetUpdates(tgbotapi.UpdateConfig{Offset: next + 1})
	if len(ups) != 0 {
		t.Fatalf("served again: %+v", ups)
	}

	// A redelivery wakes a waiting long poll.
	done := make(chan []tgbotapi.Update, 1)
	go func() {
		ups, _ := bot.GetUpdates(tgbotapi.UpdateConfig{Offset: next + 1, Timeout: 10})
		done <- ups
	}()
	waitFor(t, "the long poll", s.Polling)
	s.Redeliver(next)
	select {
	case ups := <-done:
		if len(ups) != 1 || ups[0].UpdateID != next {
			t.Fatalf("woken with %+v", ups)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Redeliver did not wake the long poll")
	}
}

func TestDuplicate(t *testing.T) {
	s, bot := start(t)
	id := s.AddMessage(3, 3, 77, "same message")
	dup := s.Duplicate(id)
	if dup != id+1 {
		t.Fatalf("Duplicate = %d", dup)
	}
	ups, _ := bot.GetUpdates(tgbotapi.UpdateConfig{})
	if len(ups) != 2 || ups[1].UpdateID != dup || ups[1].Message.MessageID != 77 || ups[1].Message.Text != "same message" {
		t.Fatalf("%+v", ups)
	}
}

func TestFailNext429(t *testing.T) {
	s, bot := start(t)
	id := s.AddMessage(1, 1, 1, "x")
	s.FailNext(http.StatusTooManyRequests, 1)
	_, err := bot.GetUpdates(tgbotapi.UpdateConfig{Offset: id + 1})
	e := apiError(t, err)
	if e.Code != 429 || e.RetryAfter != 1 || !strings.HasPrefix(e.Message, "Too Many Requests") {
		t.Fatalf("error = %+v", e)
	}
	if s.Confirmed() != 0 {
		t.Fatal("a failed getUpdates confirmed its offset")
	}
	ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{})
	if err != nil || len(ups) != 1 {
		t.Fatalf("after the failure: %v, %v", ups, err)
	}
}

func TestFailNextStatuses(t *testing.T) {
	s, bot := start(t)
	for _, tc := range []struct {
		status int
		prefix string
	}{
		{409, "Conflict: terminated by other getUpdates request"},
		{500, "Internal Server Error"},
		{502, "Bad Gateway"},
		{403, "Forbidden"},
	} {
		s.FailNext(tc.status, 2)
		for range 2 {
			_, err := bot.GetUpdates(tgbotapi.UpdateConfig{})
			if e := apiError(t, err); e.Code != tc.status || !strings.HasPrefix(e.Message, tc.prefix) {
				t.Fatalf("FailNext(%d): %+v", tc.status, e)
			}
		}
		if _, err := bot.GetUpdates(tgbotapi.UpdateConfig{}); err != nil {
			t.Fatalf("third call after FailNext(%d, 2): %v", tc.status, err)
		}
	}

	// Only sendMessage fails.
	s.FailNextMethod("sendMessage", 429, 1)
	if _, err := bot.GetUpdates(tgbotapi.UpdateConfig{}); err != nil {
		t.Fatalf("getUpdates: %v", err)
	}
	_, err := bot.Send(tgbotapi.NewMessage(1, "hi"))
	if e := apiError(t, err); e.Code != 429 || e.RetryAfter != 1 {
		t.Fatalf("sendMessage: %+v", e)
	}
	if len(s.Sent()) != 0 {
		t.Fatal("a failed sendMessage was recorded")
	}

	// The HTML 502 page of Telegram's front end is not JSON: tgbotapi fails to decode it.
	s.FailNextRaw("", 502, "<html><head><title>502 Bad Gateway</title></head></html>", 1)
	_, err = bot.GetUpdates(tgbotapi.UpdateConfig{})
	var e *tgbotapi.Error
	if err == nil || errors.As(err, &e) {
		t.Fatalf("HTML 502: %v", err)
	}
}

func TestConcurrentPollerConflict(t *testing.T) {
	s, bot := start(t)
	s.SetConflictDelay(300 * time.Millisecond)
	other, err := tgbotapi.NewBotAPIWithClient(token, s.Endpoint(), &http.Client{})
	if err != nil {
		t.Fatal(err)
	}

	first := make(chan error, 1)
	go func() {
		_, err := bot.GetUpdates(tgbotapi.UpdateConfig{Timeout: 10})
		first <- err
	}()
	waitFor(t, "the first long poll", s.Polling)

	second := make(chan []tgbotapi.Update, 1)
	go func() {
		ups, err := other.GetUpdates(tgbotapi.UpdateConfig{Timeout: 10})
		if err != nil {
			t.Errorf("the newer poll failed: %v", err)
		}
		second <- ups
	}()
	var e *tgbotapi.Error
	select {
	case err := <-first:
		e = apiError(t, err)
	case <-time.After(3 * time.Second):
		t.Fatal("the older poll was not terminated")
	}
	if e.Code != 409 || !strings.Contains(e.Message, "terminated by other getUpdates request") {
		t.Fatalf("older poll: %+v", e)
	}
	// The newer poll goes on waiting, and gets the next message.
	waitFor(t, "the second long poll", s.Polling)
	id := s.AddMessage(1, 1, 1, "for the survivor")
	select {
	case ups := <-second:
		if len(ups) != 1 || ups[0].UpdateID != id {
			t.Fatalf("newer poll got %+v", ups)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the newer poll did not get the message")
	}

	// A second conflict within 3 s is answered after the conflict delay.
	ups, _ := bot.GetUpdates(tgbotapi.UpdateConfig{Offset: id + 1}) // confirm
	if len(ups) != 0 {
		t.Fatalf("%+v", ups)
	}
	go func() {
		_, err := other.GetUpdates(tgbotapi.UpdateConfig{Offset: id + 1, Timeout: 10})
		first <- err
	}()
	waitFor(t, "a long poll", s.Polling)
	waitFor(t, "the request to be counted", func() bool { return s.Calls("getUpdates") >= 4 })
	t0 := time.Now()
	go func() {
		_, _ = bot.GetUpdates(tgbotapi.UpdateConfig{Offset: id + 1, Timeout: 1})
	}()
	err = <-first
	if e := apiError(t, err); e.Code != 409 {
		t.Fatalf("second conflict: %+v", e)
	}
	if d := time.Since(t0); d < 250*time.Millisecond {
		t.Fatalf("second conflict answered after %v, want the 300ms delay", d)
	}
}

func TestShortPollDoesNotConflict(t *testing.T) {
	s, bot := start(t)
	done := make(chan error, 1)
	go func() {
		_, err := bot.GetUpdates(tgbotapi.UpdateConfig{Timeout: 1})
		done <- err
	}()
	waitFor(t, "the long poll", s.Polling)
	if _, err := bot.GetUpdates(tgbotapi.UpdateConfig{}); err != nil {
		t.Fatalf("short poll: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("long poll after a short poll: %v", err)
	}
}

func TestSendMessage(t *testing.T) {
	s, bot := start(t)
	s.AddMessage(42, 42, 7, "question?")

	before := time.Now()
	msg := tgbotapi.NewMessage(42, "answer")
	msg.ReplyToMessageID = 7
	got, err := bot.Send(msg)
	if err != nil {
		t.Fatal(err)
	}
	if got.MessageID == 0 || got.Text != "answer" || got.Chat == nil || got.Chat.ID != 42 || got.From == nil || !got.From.IsBot {
		t.Fatalf("returned %+v", got)
	}
	if got.ReplyToMessage == nil || got.ReplyToMessage.MessageID != 7 || got.ReplyToMessage.Text != "question?" {
		t.Fatalf("reply_to_message = %+v", got.ReplyToMessage)
	}

	// reply_parameters (Bot API 7.0) is what newer clients send; tgbotapi v5 has no field for it.
	got2, err := bot.MakeRequest("sendMessage", tgbotapi.Params{
		"chat_id": "42", "text": "*bold*", "parse_mode": "MarkdownV2",
		"reply_parameters": `{"message_id":7,"allow_sending_without_reply":true}`,
	})
	if err != nil || !got2.Ok {
		t.Fatalf("reply_parameters: %v", err)
	}

	sent := s.Sent()
	if len(sent) != 2 {
		t.Fatalf("Sent = %+v", sent)
	}
	if m := sent[0]; m.ChatID != 42 || m.Text != "answer" || m.ReplyTo != 7 || m.MessageID != got.MessageID || m.At.Before(before) || m.At.After(time.Now()) {
		t.Fatalf("Sent[0] = %+v", m)
	}
	if m := sent[1]; m.ReplyTo != 7 || m.Params.Get("parse_mode") != "MarkdownV2" || m.MessageID != got.MessageID+1 || m.Params.Get("reply_parameters") == "" {
		t.Fatalf("Sent[1] = %+v", m)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if all, err := s.WaitSent(ctx, 3); err == nil || len(all) != 2 {
		t.Fatalf("WaitSent(3) = %d, %v", len(all), err)
	}
}

func TestSendMessageErrors(t *testing.T) {
	s, bot := start(t)
	for _, tc := range []struct {
		name      string
		text      string
		parseMode string
		want      string
	}{
		{"empty", "", "", "Bad Request: message text is empty"},
		{"too long", strings.Repeat("x", 4097), "", "Bad Request: message is too long"},
	} {
		m := tgbotapi.NewMessage(9, tc.text)
		m.ParseMode = tc.parseMode
		_, err := bot.Send(m)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if e := apiError(t, err); e.Code != 400 || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %+v, want %q", tc.name, e, tc.want)
		}
	}
	if _, err := bot.Send(tgbotapi.NewMessage(9, strings.Repeat("x", 4096))); err != nil {
		t.Errorf("4096 characters: %v", err)
	}
	if n := len(s.Sent()); n != 1 {
		t.Fatalf("%d sent, want 1", n)
	}
}

func TestDeleteWebhook(t *testing.T) {
	s, bot := start(t)
	s.AddMessage(1, 1, 1, "x")
	resp, err := bot.Request(tgbotapi.DeleteWebhookConfig{})
	if err != nil || !resp.Ok || string(resp.Result) != "true" {
		t.Fatalf("%+v, %v", resp, err)
	}
	if s.Pending() != 1 {
		t.Fatal("deleteWebhook dropped updates")
	}
	if _, err := bot.Request(tgbotapi.DeleteWebhookConfig{DropPendingUpdates: true}); err != nil {
		t.Fatal(err)
	}
	if s.Pending() != 0 {
		t.Fatal("drop_pending_updates kept updates")
	}
	info, err := bot.GetWebhookInfo()
	if err != nil || info.URL != "" || info.PendingUpdateCount != 0 {
		t.Fatalf("%+v, %v", info, err)
	}
}

func TestOtherUpdateKinds(t *testing.T) {
	s, bot := start(t)
	orig := fakebot.TextMessage(5, 5, 10, "typo")
	ids := []int{
		s.AddUpdate(fakebot.EditedMessageUpdate(fakebot.Edited(orig, "fixed"))),
		s.AddUpdate(fakebot.MessageUpdate(fakebot.PhotoMessage(5, 5, 11, "look at this"))),
		s.AddUpdate(fakebot.MessageUpdate(fakebot.DocumentMessage(5, 5, 12, "notes.pdf", "application/pdf", ""))),
		s.AddUpdate(fakebot.MessageUpdate(fakebot.StickerMessage(5, 5, 13, "👍"))),
		s.AddUpdate(fakebot.ChannelPostUpdate(fakebot.ChannelPost(-1001234567890, 14, "news"))),
		s.AddUpdate(fakebot.MessageUpdate(fakebot.TextMessage(-1001234567890, 6, 15, "/new@fake_test_bot fix the build"))),
		s.AddUpdate(json.RawMessage(`{"update_id":1,"message_reaction":{"chat":{"id":5,"type":"private"},"message_id":10}}`)),
	}
	ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{})
	if err != nil || len(ups) != len(ids) {
		t.Fatalf("%d updates, %v", len(ups), err)
	}
	for i, u := range ups {
		if u.UpdateID != ids[i] {
			t.Fatalf("update %d has id %d, want %d", i, u.UpdateID, ids[i])
		}
	}
	if m := ups[0].EditedMessage; ups[0].Message != nil || m == nil || m.Text != "fixed" || m.MessageID != 10 || m.EditDate <= m.Date {
		t.Fatalf("edited: %+v", ups[0])
	}
	if m := ups[1].Message; len(m.Photo) != 3 || m.Caption != "look at this" || m.Text != "" || m.Photo[2].Width <= m.Photo[0].Width || m.Photo[0].FileID == "" {
		t.Fatalf("photo: %+v", m)
	}
	if m := ups[2].Message; m.Document == nil || m.Document.FileName != "notes.pdf" || m.Document.MimeType != "application/pdf" || m.Document.FileID == "" {
		t.Fatalf("document: %+v", m)
	}
	if m := ups[3].Message; m.Sticker == nil || m.Sticker.Emoji != "👍" || m.Text != "" {
		t.Fatalf("sticker: %+v", m)
	}
	if u := ups[4]; u.Message != nil || u.ChannelPost == nil || u.ChannelPost.Chat.Type != "channel" || u.ChannelPost.From != nil || u.ChannelPost.SenderChat == nil || u.ChannelPost.Text != "news" {
		t.Fatalf("channel post: %+v", u)
	}
	if m := ups[5].Message; !m.IsCommand() || m.Command() != "new" || m.CommandArguments() != "fix the build" || m.Chat.Type != "supergroup" || m.From.ID != 6 {
		t.Fatalf("command: %+v", m)
	}
	if u := ups[6]; u.Message != nil || u.EditedMessage != nil {
		t.Fatalf("unknown kind: %+v", u)
	}
}

// One update whose fields have the wrong types spoils the whole getUpdates
// answer for tgbotapi: it returns an error, along with what it could decode.
func TestMalformedUpdate(t *testing.T) {
	s, bot := start(t)
	a := s.AddMessage(1, 1, 1, "before")
	bad := s.AddUpdate(`{"message":{"message_id":"not a number","chat":{"id":1,"type":"private"},"date":1,"text":"bad"}}`)
	c := s.AddMessage(1, 1, 3, "after")
	ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{})
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		t.Fatalf("err = %v (%T), want a *json.UnmarshalTypeError", err, err)
	}
	if len(ups) != 3 || ups[0].UpdateID != a || ups[1].UpdateID != bad || ups[2].UpdateID != c || ups[2].Message.Text != "after" {
		t.Fatalf("decoded alongside the error: %+v", ups)
	}
	// A client that skips past it gets on with the rest.
	ups, err = bot.GetUpdates(tgbotapi.UpdateConfig{Offset: bad + 1})
	if err != nil || len(ups) != 1 || ups[0].UpdateID != c {
		t.Fatalf("after skipping: %+v, %v", ups, err)
	}
}

func TestUnknownMethod(t *testing.T) {
	_, bot := start(t)
	_, err := bot.MakeRequest("frobnicate", nil)
	if e := apiError(t, err); e.Code != 404 || e.Message != "Not Found" {
		t.Fatalf("%+v", e)
	}
	if _, err := bot.Request(tgbotapi.NewChatAction(1, tgbotapi.ChatTyping)); err != nil {
		t.Fatal(err)
	}
}

// JSON bodies, as grammY and most non-Go clients send them.
func TestJSONBody(t *testing.T) {
	s, _ := start(t)
	s.AddMessage(1, 1, 1, "x")
	id := s.AddMessage(1, 1, 2, "y")
	resp, err := http.Post(s.URL()+"/bot"+token+"/getUpdates", "application/json", strings.NewReader(`{"offset":`+itoa(id)+`,"timeout":0,"allowed_updates":["message"]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Ok     bool              `json:"ok"`
		Result []json.RawMessage `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || !r.Ok || len(r.Result) != 1 {
		t.Fatalf("%+v, %v", r, err)
	}
	if s.Confirmed() != id {
		t.Fatalf("Confirmed = %d", s.Confirmed())
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The loop most tgbotapi bots run.
func TestGetUpdatesChan(t *testing.T) {
	s, bot := start(t)
	ch := bot.GetUpdatesChan(tgbotapi.UpdateConfig{Timeout: 1})
	var ids []int
	for i := range 3 {
		ids = append(ids, s.AddMessage(1, 1, i+1, "m"))
	}
	for i := range 3 {
		select {
		case u := <-ch:
			if u.UpdateID != ids[i] {
				t.Fatalf("got %d, want %d", u.UpdateID, ids[i])
			}
		case <-time.After(3 * time.Second):
			t.Fatal("no update")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitConfirmed(ctx, ids[2]); err != nil {
		t.Fatalf("never confirmed: %v", err)
	}
	bot.StopReceivingUpdates()
	s.Close()
	for range ch {
	}
}

func TestConcurrentUse(t *testing.T) {
	s, bot := start(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				s.AddMessage(int64(w+1), int64(w+1), i, "m")
				_ = s.Pending()
				_ = s.Sent()
			}
		})
	}
	got := 0
	offset := 0
	deadline := time.Now().Add(10 * time.Second)
	for got < 200 && time.Now().Before(deadline) {
		ups, err := bot.GetUpdates(tgbotapi.UpdateConfig{Offset: offset, Timeout: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range ups {
			if u.UpdateID < offset {
				t.Fatalf("update %d below offset %d", u.UpdateID, offset)
			}
			offset = u.UpdateID + 1
			got++
			if _, err := bot.Send(tgbotapi.NewMessage(u.Message.Chat.ID, "ok")); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	if got != 200 || len(s.Sent()) != 200 {
		t.Fatalf("got %d updates, sent %d", got, len(s.Sent()))
	}
}

type recordingClient struct {
	mu   sync.Mutex
	reqs []string
}

func (c *recordingClient) Do(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.reqs = append(c.reqs, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(body))
	c.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return http.DefaultClient.Do(r)
}

// What tgbotapi v5.5.1 puts on the wire: form-encoded POSTs, zero values
// left out, and allowed_updates=null and entities=null for nil slices.
func TestWhatTgbotapiSends(t *testing.T) {
	s := fakebot.New(token)
	defer s.Close()
	c := &recordingClient{}
	bot, err := tgbotapi.NewBotAPIWithClient(token, s.Endpoint(), c)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = bot.GetUpdates(tgbotapi.UpdateConfig{})
	_, _ = bot.GetUpdates(tgbotapi.UpdateConfig{Offset: 5, Limit: 10})
	m := tgbotapi.NewMessage(42, "hi")
	m.ReplyToMessageID = 7
	_, _ = bot.Send(m)
	want := []string{
		"POST /bot" + token + "/getMe application/x-www-form-urlencoded ",
		"POST /bot" + token + "/getUpdates application/x-www-form-urlencoded allowed_updates=null",
		"POST /bot" + token + "/getUpdates application/x-www-form-urlencoded allowed_updates=null&limit=10&offset=5",
		"POST /bot" + token + "/sendMessage application/x-www-form-urlencoded chat_id=42&entities=null&reply_to_message_id=7&text=hi",
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.Join(c.reqs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(c.reqs, "\n"), strings.Join(want, "\n"))
	}
}

// Inline keyboards as the Bot API has them: a sent message keeps its buttons, a press comes as
// a callback_query carrying the message as it is now, answerCallbackQuery takes each id once,
// editMessageText without reply_markup takes the buttons away, an edit that changes nothing is
// refused with "message is not modified", and callback_data over 64 bytes is refused.
func TestInlineKeyboardPressAnswerAndEdit(t *testing.T) {
	s, bot := start(t)
	msg := tgbotapi.NewMessage(42, "approve?")
	msg.ReplyMarkup = tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData("Yes", "tok:y"), tgbotapi.NewInlineKeyboardButtonData("No", "tok:n")))
	sent, err := bot.Send(msg)
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Buttons(42, sent.MessageID); b["Yes"] != "tok:y" || b["No"] != "tok:n" {
		t.Fatalf("buttons: %v", b)
	}
	id := s.Press(42, 7, sent.MessageID, "Yes")
	updates, err := bot.GetUpdates(tgbotapi.UpdateConfig{Timeout: 1})
	if err != nil || len(updates) != 1 || updates[0].CallbackQuery == nil {
		t.Fatalf("updates: %+v %v", updates, err)
	}
	q := updates[0].CallbackQuery
	if q.ID != id || q.Data != "tok:y" || q.From.ID != 7 || q.Message.MessageID != sent.MessageID || q.Message.ReplyMarkup == nil {
		t.Errorf("callback query: %+v", q)
	}
	if _, err := bot.Request(tgbotapi.NewCallback(id, "Allowed")); err != nil {
		t.Fatal(err)
	}
	if _, err := bot.Request(tgbotapi.NewCallback(id, "again")); err == nil {
		t.Error("a callback query was answered twice")
	}
	if a := s.CallbackAnswers(); len(a) != 1 || a[0].Text != "Allowed" {
		t.Errorf("answers: %+v", a)
	}
	if _, err := bot.Request(tgbotapi.NewEditMessageText(42, sent.MessageID, "approved")); err != nil {
		t.Fatal(err)
	}
	if b := s.Buttons(42, sent.MessageID); len(b) != 0 || s.Press(42, 7, sent.MessageID, "Yes") != "" {
		t.Errorf("the edit left buttons: %v", b)
	}
	_, err = bot.Request(tgbotapi.NewEditMessageText(42, sent.MessageID, "approved"))
	if e := apiError(t, err); !strings.Contains(e.Message, "message is not modified") {
		t.Errorf("an edit that changes nothing: %v", err)
	}
	long := tgbotapi.NewMessage(42, "x")
	long.ReplyMarkup = tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonData("x", strings.Repeat("d", 65))))
	if _, err := bot.Send(long); err == nil {
		t.Error("callback_data over 64 bytes was taken")
	}
	if e := s.Edits(); len(e) != 1 || e[0].Text != "approved" || e[0].Buttons {
		t.Errorf("edits: %+v", e)
	}
}

// Issue 61: a text in parse_mode HTML comes back as the chat shows it; markup Telegram cannot
// parse is refused as Telegram refuses it, and the limit counts the text without its tags.
func TestHTMLParseMode(t *testing.T) {
	srv, bot := start(t)
	msg := tgbotapi.NewMessage(42, "<b>a &lt;U+202E&gt;</b> &amp; <pre>x &#39;y&#39;</pre>")
	msg.ParseMode = tgbotapi.ModeHTML
	m, err := bot.Send(msg)
	if err != nil || m.Text != "a <U+202E> & x 'y'" {
		t.Fatalf("sent: %q %v", m.Text, err)
	}
	if got := srv.Sent()[0].Text; got != msg.Text {
		t.Errorf("SentMessage.Text %q, want the parameter as sent", got)
	}
	for _, bad := range []string{"<x>a</x>", "<b>a", "<b><i>a</b></i>", "a < b", "a & b", "&nbsp;"} {
		msg := tgbotapi.NewMessage(42, bad)
		msg.ParseMode = tgbotapi.ModeHTML
		if _, err := bot.Send(msg); apiError(t, err).Code != 400 || !strings.Contains(err.Error(), "can't parse entities") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	long := tgbotapi.NewMessage(42, "<pre>"+strings.Repeat("&amp;", 4000)+"</pre>")
	long.ParseMode = tgbotapi.ModeHTML
	if _, err := bot.Send(long); err != nil {
		t.Errorf("4,000 characters as shown, 24,011 as sent: %v", err)
	}
	edit := tgbotapi.NewEditMessageText(42, m.MessageID, "<i>a</i>")
	edit.ParseMode = tgbotapi.ModeHTML
	if _, err := bot.Request(edit); err != nil {
		t.Fatal(err)
	}
	if _, err := bot.Request(edit); err == nil || !strings.Contains(err.Error(), "not modified") {
		t.Errorf("the same edit again: %v", err)
	}
}
