package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/intentq/intentq/internal/testkit/fakentfy"
)

// secretText is a message body that must never show up in an error.
const secretText = "SECRET-7f3a 秘密のメッセージ"

func newFakeNtfy(t *testing.T) *fakentfy.Server {
	t.Helper()
	s := fakentfy.New()
	t.Cleanup(s.Close)
	return s
}

// requireNtfyType checks that err is a non-retryable ApplicationError of type typ whose message
// holds every string in want, and never the secret message text.
func requireNtfyType(t *testing.T, err error, typ string, want ...string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("error %v (%T) is not an ApplicationError", err, err)
	}
	if appErr.Type() != typ || !appErr.NonRetryable() {
		t.Errorf("type %q non-retryable %v, want %q non-retryable", appErr.Type(), appErr.NonRetryable(), typ)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	requireNoSecret(t, err)
}

// requireNoTopic checks that an error does not reveal the topic: whoever knows it can read
// the pushes.
func requireNoTopic(t *testing.T, err error, topic string) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), topic) {
		t.Errorf("error %q reveals the topic %q", err, topic)
	}
}

// requireRetryable checks that err is a plain error, which Temporal retries.
func requireRetryable(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("want an error")
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		t.Fatalf("got ApplicationError %v, want a plain retryable error", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	requireNoSecret(t, err)
}

func requireNoSecret(t *testing.T, err error) {
	t.Helper()
	for _, part := range []string{secretText, "SECRET", "秘密"} {
		if strings.Contains(err.Error(), part) {
			t.Errorf("error %q contains the message text", err)
		}
	}
}

func TestNtfyPublishHeadersAndBody(t *testing.T) {
	fake := newFakeNtfy(t)
	fake.SetToken("tk_right")
	n := &Ntfy{URL: fake.URL(), Token: "tk_right"}
	if !n.Configured() {
		t.Fatal("Configured() = false")
	}
	pushes := []Push{
		{Topic: "intentq", Title: "【未対応メッセージ】 from 太郎 🙂", Message: "hello\nworld 🙂 " + secretText, Priority: 4, Tags: []string{"warning", " envelope ", ""}},
		{Topic: "intentq_2", Title: "Plain title", Message: "ascii", Priority: 5, Tags: []string{"旗"}},
		{Topic: "intentq-3", Title: "line one\r\nX-Injected: yes", Message: "", Priority: 0, Tags: []string{"a\nb"}},
		{Topic: "x", Message: "prio out of range", Priority: 9},
		{Topic: "y", Title: strings.Repeat("長いタイトル", 30), Message: "long title", Priority: 1},
	}
	for _, p := range pushes {
		if err := n.Publish(context.Background(), p); err != nil {
			t.Fatalf("Publish(%s): %v", p.Topic, err)
		}
	}
	got := fake.Messages()
	if len(got) != len(pushes) {
		t.Fatalf("got %d messages, want %d", len(got), len(pushes))
	}

	m := got[0]
	if m.Method != http.MethodPost || m.Topic != "intentq" || m.Message != pushes[0].Message ||
		m.Title != pushes[0].Title || m.Priority != 4 || strings.Join(m.Tags, "|") != "warning|envelope" {
		t.Errorf("message 0 = %+v", m)
	}
	if h := m.Header.Get("Title"); !strings.HasPrefix(h, "=?UTF-8?b?") {
		t.Errorf("non-ASCII Title header %q is not RFC 2047 encoded", h)
	}
	if h := m.Header.Get("Authorization"); h != "Bearer tk_right" {
		t.Errorf("Authorization = %q", h)
	}
	if h := m.Header.Get("Content-Type"); h != "text/plain; charset=utf-8" {
		t.Errorf("Content-Type = %q", h)
	}
	if h := m.Header.Get("Priority"); h != "4" {
		t.Errorf("Priority header = %q", h)
	}

	m = got[1]
	if h := m.Header.Get("Title"); h != "Plain title" {
		t.Errorf("ASCII Title header = %q, want it unencoded", h)
	}
	if len(m.Tags) != 1 || m.Tags[0] != "旗" || m.Priority != 5 {
		t.Errorf("message 1 = %+v", m)
	}

	m = got[2]
	if m.Title != "line one  X-Injected: yes" || m.Header.Get("X-Injected") != "" {
		t.Errorf("CR/LF in title not neutralised: title %q, headers %v", m.Title, m.Header)
	}
	if strings.Join(m.Tags, "|") != "a b" {
		t.Errorf("tags = %q", m.Tags)
	}
	for i := 2; i <= 3; i++ {
		if _, ok := got[i].Header["Priority"]; ok || got[i].Priority != 0 {
			t.Errorf("message %d: priority %d, header %q; want no Priority header", i, got[i].Priority, got[i].Header.Get("Priority"))
		}
	}
	if _, ok := got[3].Header["Title"]; ok {
		t.Errorf("empty title sent a Title header")
	}
	if got[4].Title != pushes[4].Title {
		t.Errorf("long title = %q", got[4].Title)
	}
}

func TestNtfyToken(t *testing.T) {
	fake := newFakeNtfy(t)
	fake.SetToken("tk_right")
	p := Push{Topic: "intentq", Title: "t", Message: secretText}

	for _, tok := range []string{"tk_wrong", ""} {
		err := (&Ntfy{URL: fake.URL(), Token: tok}).Publish(context.Background(), p)
		requireNtfyType(t, err, ErrTypeNtfyRejected, "401", "40101")
		requireNoTopic(t, err, p.Topic)
	}
	if err := (&Ntfy{URL: fake.URL(), Token: "tk_right"}).Publish(context.Background(), p); err != nil {
		t.Fatalf("right token: %v", err)
	}
	if got := len(fake.Messages()); got != 1 {
		t.Errorf("accepted %d messages, want 1", got)
	}
	if got := fake.Requests(); got != 3 {
		t.Errorf("Requests() = %d, want 3 (rejected ones count)", got)
	}
}

func TestNtfyRejections(t *testing.T) {
	fake := newFakeNtfy(t)
	n := &Ntfy{URL: fake.URL()}
	p := Push{Topic: "intentq", Message: secretText}

	fake.DenyTopic("intentq")
	requireNtfyType(t, n.Publish(context.Background(), p), ErrTypeNtfyRejected, "403", "40301")
	fake.AllowTopic("intentq")

	for _, status := range []int{400, 404, 413} {
		fake.FailNext(status, 1)
		requireNtfyType(t, n.Publish(context.Background(), p), ErrTypeNtfyRejected, fmt.Sprint(status))
	}
	if err := n.Publish(context.Background(), p); err != nil {
		t.Fatalf("after the failures: %v", err)
	}
}

func TestNtfyRetryable(t *testing.T) {
	fake := newFakeNtfy(t)
	n := &Ntfy{URL: fake.URL()}
	p := Push{Topic: "intentq", Title: "title", Message: secretText}

	fake.FailNext(500, 1)
	requireRetryable(t, n.Publish(context.Background(), p), "500")
	fake.FailNext(429, 1)
	err := n.Publish(context.Background(), p)
	requireRetryable(t, err, "429", "42901")
	if !errors.Is(err, errNtfyTemporary) {
		t.Errorf("429 error %v does not wrap errNtfyTemporary", err)
	}
	fake.FailAlways(503)
	for range 3 {
		requireRetryable(t, n.Publish(context.Background(), p), "503")
	}
	fake.Recover()
	if err := n.Publish(context.Background(), p); err != nil {
		t.Fatalf("after Recover: %v", err)
	}
	if got, want := len(fake.Messages()), 1; got != want {
		t.Errorf("accepted %d messages, want %d", got, want)
	}
	if got, want := fake.Requests(), 6; got != want {
		t.Errorf("Requests() = %d, want %d", got, want)
	}

	fake.Down()
	err = n.Publish(context.Background(), p)
	requireRetryable(t, err, topicRef)
	requireNoTopic(t, err, p.Topic)
}

func TestNtfyTimeoutIsRetryable(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := (&Ntfy{URL: srv.URL}).Publish(ctx, Push{Topic: "intentq", Message: secretText})
	requireRetryable(t, err, topicRef)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if defaultNtfyClient.Timeout != 10*time.Second {
		t.Errorf("default client timeout %v, want 10s", defaultNtfyClient.Timeout)
	}
}

func TestNtfyErrorNeverQuotesMessage(t *testing.T) {
	// A server whose error text repeats the message: the error must leave it out.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/trunc":
			body = body[5:20] // part of the message, cut mid-rune
		case "/static":
			body = []byte("not UTF-8")
		}
		status := http.StatusBadRequest
		if r.URL.Path == "/busy" {
			status = http.StatusServiceUnavailable
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": 40099, "http": status, "error": "bad message: " + string(body)})
	}))
	defer srv.Close()
	n := &Ntfy{URL: srv.URL}
	requireNtfyType(t, n.Publish(context.Background(), Push{Topic: "intentq", Message: secretText}), ErrTypeNtfyRejected, "400", "40099")
	requireRetryable(t, n.Publish(context.Background(), Push{Topic: "busy", Message: secretText}), "503", "40099")
	requireNtfyType(t, n.Publish(context.Background(), Push{Topic: "trunc", Message: secretText}), ErrTypeNtfyRejected, "400", "40099")
	// Text that does not quote the message is kept.
	err := n.Publish(context.Background(), Push{Topic: "static", Message: secretText})
	requireNtfyType(t, err, ErrTypeNtfyRejected, "(bad message: not UTF-8)")
}

func TestNtfyURLJoin(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
	}))
	defer srv.Close()
	for _, base := range []string{srv.URL, srv.URL + "/", srv.URL + "/ntfy", srv.URL + "/ntfy/"} {
		if err := (&Ntfy{URL: base}).Publish(context.Background(), Push{Topic: "in-tent_q", Message: "m"}); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
	}
	want := "/in-tent_q|/in-tent_q|/ntfy/in-tent_q|/ntfy/in-tent_q"
	if got := strings.Join(paths, "|"); got != want {
		t.Errorf("paths %s, want %s", got, want)
	}
}

func TestNtfyNotConfiguredAndBadTopic(t *testing.T) {
	fake := newFakeNtfy(t)
	p := Push{Topic: "intentq", Message: secretText}

	var empty Ntfy
	if empty.Configured() {
		t.Error("zero Ntfy says it is configured")
	}
	requireNtfyType(t, empty.Publish(context.Background(), p), ErrTypeNtfyNotConfigured)
	for _, u := range []string{"ntfy.sh", "ftp://ntfy.sh", "http://"} {
		requireNtfyType(t, (&Ntfy{URL: u}).Publish(context.Background(), p), ErrTypeNtfyNotConfigured)
	}
	n := &Ntfy{URL: fake.URL()}
	for _, topic := range []string{"", "a/b", "../x", "with space", strings.Repeat("t", 65), "ü"} {
		p.Topic = topic
		requireNtfyType(t, n.Publish(context.Background(), p), ErrTypeNtfyRejected)
	}
	if fake.Requests() != 0 {
		t.Errorf("invalid pushes reached the server %d times", fake.Requests())
	}
}

func TestNtfyConcurrentPublish(t *testing.T) {
	fake := newFakeNtfy(t)
	n := &Ntfy{URL: fake.URL()}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := n.Publish(context.Background(), Push{Topic: "intentq", Message: fmt.Sprint(i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, m := range fake.Messages() {
		seen[m.Message] = true
	}
	if len(seen) != 20 || fake.Requests() != 20 {
		t.Errorf("got %d distinct messages in %d requests, want 20", len(seen), fake.Requests())
	}
}

// TestFakeNtfySpeaksPublishAPI checks the parts of the fake that Publish does not use: PUT,
// header aliases, priority names, the JSON reply and ntfy's error for a bad priority.
func TestFakeNtfySpeaksPublishAPI(t *testing.T) {
	fake := newFakeNtfy(t)
	req, _ := http.NewRequest(http.MethodPut, fake.URL()+"/alerts", strings.NewReader("disk full"))
	req.Header.Set("X-Title", "=?UTF-8?b?5pel5pys?=")
	req.Header.Set("Priority", "urgent")
	req.Header.Set("X-Tags", "warning, skull")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		ID, Event, Topic, Message, Title string
		Time                             int64
		Priority                         int
		Tags                             []string
	}
	err = json.NewDecoder(resp.Body).Decode(&reply)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, decode %v", resp.StatusCode, err)
	}
	if len(reply.ID) != 12 || reply.Event != "message" || reply.Topic != "alerts" || reply.Message != "disk full" ||
		reply.Title != "日本" || reply.Priority != 5 || strings.Join(reply.Tags, ",") != "warning,skull" || reply.Time == 0 {
		t.Errorf("reply = %+v", reply)
	}
	if m := fake.Messages(); len(m) != 1 || m[0].ID != reply.ID || m[0].Method != http.MethodPut {
		t.Errorf("messages = %+v", m)
	}

	req, _ = http.NewRequest(http.MethodPost, fake.URL()+"/alerts", strings.NewReader("x"))
	req.Header.Set("Priority", "7")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var apiErr struct{ Code, HTTP int }
	_ = json.NewDecoder(resp.Body).Decode(&apiErr)
	resp.Body.Close()
	if resp.StatusCode != 400 || apiErr.Code != 40007 || apiErr.HTTP != 400 {
		t.Errorf("bad priority: status %d, body %+v", resp.StatusCode, apiErr)
	}
	if fake.Requests() != 2 || len(fake.Messages()) != 1 {
		t.Errorf("requests %d, messages %d", fake.Requests(), len(fake.Messages()))
	}
}
