package ingest

import (
	"bytes"
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

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/intent"
)

// secretText is a text that must never show up in an error.
const secretText = "TOPSECRET payload 🙂 do not echo"

func TestDecodeIntent(t *testing.T) {
	sec := time.Unix(1700000000, 0).UTC()
	tests := []struct {
		name string
		body string
		want intent.Message
		// errField is the InvalidError's Field when decoding must fail.
		errField  string
		errReason string // a substring of the reason
	}{
		{
			name: "string ids, ts in seconds",
			body: `{"chat_id":"-1001234567890","message_id":"42","text":"hello","user":"kento","ts":1700000000}`,
			want: intent.Message{ChatID: "-1001234567890", MessageID: "42", Text: "hello", User: "kento", SentAt: sec},
		},
		{
			name: "numeric ids, no ts",
			body: `{"chat_id":-1001234567890,"message_id":7,"text":"hi"}`,
			want: intent.Message{ChatID: "-1001234567890", MessageID: "7", Text: "hi"},
		},
		{
			name:     "chat_id with an exponent",
			body:     `{"chat_id":1e3,"message_id":0,"text":"x"}`,
			errField: "chat_id", errReason: "string or an integer",
		},
		{
			name: "ts with a fraction of a second",
			body: `{"chat_id":"1","message_id":"2","text":"t","ts":1700000000.25}`,
			want: intent.Message{ChatID: "1", MessageID: "2", Text: "t", SentAt: sec.Add(250 * time.Millisecond)},
		},
		{
			name: "ts in milliseconds",
			body: `{"chat_id":"1","message_id":"2","text":"t","ts":1700000000123}`,
			want: intent.Message{ChatID: "1", MessageID: "2", Text: "t", SentAt: time.UnixMilli(1700000000123).UTC()},
		},
		{
			name: "ts RFC 3339 with an offset",
			body: `{"chat_id":"1","message_id":"2","text":"t","ts":"2024-01-02T03:04:05+02:00"}`,
			want: intent.Message{ChatID: "1", MessageID: "2", Text: "t", SentAt: time.Date(2024, 1, 2, 1, 4, 5, 0, time.UTC)},
		},
		{
			name: "ts RFC 3339 with nanoseconds",
			body: `{"chat_id":"1","message_id":"2","text":"t","ts":"2024-01-02T03:04:05.123456789Z"}`,
			want: intent.Message{ChatID: "1", MessageID: "2", Text: "t", SentAt: time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)},
		},
		{
			name: "ts null",
			body: `{"chat_id":"1","message_id":"2","text":"t","ts":null}`,
			want: intent.Message{ChatID: "1", MessageID: "2", Text: "t"},
		},
		{
			name: "empty text is decoded (Prepare rejects it)",
			body: `{"chat_id":"1","message_id":"2","text":""}`,
			want: intent.Message{ChatID: "1", MessageID: "2", Text: ""},
		},
		{
			name: "unknown fields are ignored, trailing whitespace is fine",
			body: "{\"chat_id\":\"1\",\"message_id\":\"2\",\"text\":\"t\",\"extra\":{\"a\":[1]}}\n\t ",
			want: intent.Message{ChatID: "1", MessageID: "2", Text: "t"},
		},
		{
			name: "escapes and unicode in the text",
			body: `{"chat_id":"1","message_id":"2","text":"line\nnext \"quoted\" \u00e9 🎉"}`,
			want: intent.Message{ChatID: "1", MessageID: "2", Text: "line\nnext \"quoted\" é 🎉"},
		},
		{name: "ts as a word", body: `{"chat_id":"1","message_id":"2","text":"t","ts":"yesterday"}`, errField: "ts", errReason: "RFC 3339"},
		{name: "ts negative", body: `{"chat_id":"1","message_id":"2","text":"t","ts":-1}`, errField: "ts", errReason: "out of range"},
		{name: "ts too large", body: `{"chat_id":"1","message_id":"2","text":"t","ts":1e16}`, errField: "ts", errReason: "out of range"},
		{name: "ts beyond float64", body: `{"chat_id":"1","message_id":"2","text":"t","ts":1e400}`, errField: "ts"},
		{name: "ts boolean", body: `{"chat_id":"1","message_id":"2","text":"t","ts":true}`, errField: "ts"},
		{name: "ts object", body: `{"chat_id":"1","message_id":"2","text":"t","ts":{"s":1}}`, errField: "ts"},
		{name: "chat_id missing", body: `{"message_id":"2","text":"t"}`, errField: "chat_id", errReason: "missing"},
		{name: "chat_id null", body: `{"chat_id":null,"message_id":"2","text":"t"}`, errField: "chat_id", errReason: "missing"},
		{name: "chat_id fractional", body: `{"chat_id":1.5,"message_id":"2","text":"t"}`, errField: "chat_id", errReason: "string or an integer"},
		{name: "chat_id beyond int64", body: `{"chat_id":123456789012345678901234567890,"message_id":"2","text":"t"}`, errField: "chat_id"},
		{name: "chat_id boolean", body: `{"chat_id":true,"message_id":"2","text":"t"}`, errField: "chat_id"},
		{name: "chat_id object", body: `{"chat_id":{"id":1},"message_id":"2","text":"t"}`, errField: "chat_id"},
		{name: "chat_id array", body: `{"chat_id":["1"],"message_id":"2","text":"t"}`, errField: "chat_id"},
		{name: "message_id missing", body: `{"chat_id":"1","text":"t"}`, errField: "message_id", errReason: "missing"},
		{name: "message_id fractional", body: `{"chat_id":"1","message_id":2.5,"text":"t"}`, errField: "message_id"},
		{name: "text missing", body: `{"chat_id":"1","message_id":"2"}`, errField: "text", errReason: "missing"},
		{name: "text null", body: `{"chat_id":"1","message_id":"2","text":null}`, errField: "text", errReason: "missing"},
		{name: "text a number", body: `{"chat_id":"1","message_id":"2","text":5}`, errField: "body", errReason: "text"},
		{name: "text an object", body: `{"chat_id":"1","message_id":"2","text":{"t":"x"}}`, errField: "body", errReason: "text"},
		{name: "user a number", body: `{"chat_id":"1","message_id":"2","text":"t","user":5}`, errField: "body", errReason: "user"},
		{name: "empty body", body: ``, errField: "body", errReason: "empty"},
		{name: "whitespace body", body: " \n", errField: "body", errReason: "empty"},
		{name: "not JSON", body: `chat_id=1&text=hi`, errField: "body", errReason: "syntax error"},
		{name: "truncated", body: `{"chat_id":"1","message_id":"2","text":"t`, errField: "body"},
		{name: "array", body: `[{"chat_id":"1","message_id":"2","text":"t"}]`, errField: "body", errReason: "array"},
		{name: "string", body: `"hello"`, errField: "body"},
		{name: "null", body: `null`, errField: "chat_id", errReason: "missing"},
		{name: "second object", body: `{"chat_id":"1","message_id":"2","text":"t"}{"chat_id":"3"}`, errField: "body", errReason: "after the JSON object"},
		{name: "trailing word", body: `{"chat_id":"1","message_id":"2","text":"t"} x`, errField: "body", errReason: "after the JSON object"},
		{name: "trailing brace", body: `{"chat_id":"1","message_id":"2","text":"t"}}`, errField: "body", errReason: "after the JSON object"},
		{name: "trailing bracket", body: `{"chat_id":"1","message_id":"2","text":"t"}]`, errField: "body", errReason: "after the JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeIntent([]byte(tc.body))
			if tc.errField != "" {
				var invalid *intent.InvalidError
				if !errors.As(err, &invalid) {
					t.Fatalf("DecodeIntent(%s) = %+v, %v; want an InvalidError on %s", tc.body, got, err, tc.errField)
				}
				if invalid.Field != tc.errField || !strings.Contains(invalid.Reason, tc.errReason) {
					t.Errorf("error = %q (field %q), want field %q and a reason with %q", err, invalid.Field, tc.errField, tc.errReason)
				}
				if invalid.TooLarge {
					t.Errorf("error %q is marked TooLarge", err)
				}
				if strings.Contains(err.Error(), "intentRequest") {
					t.Errorf("error %q names a Go type", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeIntent(%s): %v", tc.body, err)
			}
			tc.want.Source = "ingest"
			if got != tc.want {
				t.Errorf("DecodeIntent(%s)\n got %+v\nwant %+v", tc.body, got, tc.want)
			}
			if !got.SentAt.IsZero() && got.SentAt.Location() != time.UTC {
				t.Errorf("SentAt %v is not UTC", got.SentAt)
			}
		})
	}
}

// TestDecodeIntentErrorsNeverQuoteText puts a recognisable text in every kind of bad body.
func TestDecodeIntentErrorsNeverQuoteText(t *testing.T) {
	q, _ := json.Marshal(secretText)
	text := string(q)
	bodies := []string{
		`{"chat_id":true,"message_id":"2","text":` + text + `}`,
		`{"chat_id":"1","message_id":[],"text":` + text + `}`,
		`{"chat_id":"1","message_id":"2","text":` + text + `,"ts":"` + secretText + `"}`,
		`{"chat_id":"1","message_id":"2","text":` + text + `,"ts":-5}`,
		`{"chat_id":"1","message_id":"2","text":` + text + `,"user":{"name":` + text + `}}`,
		`{"chat_id":"1","message_id":"2","text":` + text + `} ` + text,
		`{"chat_id":"1","message_id":"2","text":` + text,
		`{"chat_id":"1","message_id":"2","text":` + text + `,}`,
		`{"chat_id":"1","message_id":"2","text":"` + secretText + "\x01\"}",
		`{"chat_id":"1","message_id":"2","text":["` + secretText + `"]}`,
		`{"chat_id":"1","message_id":"2","text":` + text + `,"text":5}`,
		`{"chat_id":` + text + `5,"message_id":"2","text":` + text + `}`,
		`{"chat_id":"1","message_id":"2","` + secretText + `":1,"text":` + text + `,"ts":[]}`,
	}
	for _, body := range bodies {
		_, err := DecodeIntent([]byte(body))
		if err == nil {
			t.Errorf("DecodeIntent(%s) succeeded", body)
			continue
		}
		var invalid *intent.InvalidError
		if !errors.As(err, &invalid) {
			t.Errorf("DecodeIntent(%s): %T %v is not an InvalidError", body, err, err)
		}
		if strings.Contains(err.Error(), "TOPSECRET") || strings.Contains(err.Error(), "payload") {
			t.Errorf("DecodeIntent(%s): error %q quotes the text", body, err)
		}
	}
}

// textValues returns the string values of "text" keys of the top-level object in body, as far as
// body is readable JSON (a truncated body still yields the texts before the cut).
func textValues(body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var out []string
	depth := 0
	topObject, expectKey := false, false
	key := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if depth == 0 {
					topObject = d == '{'
					expectKey = topObject
				}
				depth++
			default:
				depth--
				if depth == 1 {
					expectKey = true // a container value of the top-level object ended
				}
			}
			continue
		}
		if depth != 1 || !topObject {
			continue
		}
		if expectKey {
			key, _ = tok.(string)
			expectKey = false
			continue
		}
		if s, ok := tok.(string); ok && key == "text" {
			out = append(out, s)
		}
		expectKey = true
	}
}

func TestTextValues(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":{"text":"inner"},"text":"outer one","b":[{"text":"no"}],"text":"two"}`: "[outer one two]",
		`{"text":"cut before the end","chat_id":`:                                    "[cut before the end]",
		`{"text":5,"x":"text","text":{"text":"deep"}}`:                               "[]",
		`["text","nope"]`: "[]",
	} {
		if got := fmt.Sprint(textValues([]byte(body))); got != want {
			t.Errorf("textValues(%s) = %s, want %s", body, got, want)
		}
	}
}

// errorAlphabet holds every character DecodeIntent's fixed error wording can use: a text made only
// of these could match the wording by chance ("must be a string"), so only texts with some other
// character are checked.
const errorAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 :_,.-()*"

func FuzzDecodeIntent(f *testing.F) {
	seeds := []string{
		`{"chat_id":"-1001234567890","message_id":"42","text":"hello there","user":"kento","ts":1700000000}`,
		`{"chat_id":-1001234567890,"message_id":7,"text":"numeric ids","ts":1700000000123}`,
		`{"chat_id":"1","message_id":"2","text":"rfc","ts":"2024-01-02T03:04:05.5+02:00"}`,
		`{"chat_id":"1","message_id":"2","text":"` + secretText + `","ts":null}`,
		`{"chat_id":"1","message_id":"2","text":"` + secretText,
		`{"chat_id":"1","message_id":"2","te`,
		`{"chat_id":"1",`,
		`{`,
		``,
		`null`,
		`[]`,
		`"text"`,
		`{"chat_id":1e999999,"message_id":"2","text":"huge exponent here"}`,
		`{"chat_id":123456789012345678901234567890,"message_id":-99999999999999999999,"text":"huge integers"}`,
		`{"chat_id":"1","message_id":"2","text":"huge ts","ts":1e308}`,
		`{"chat_id":"1","message_id":"2","text":"tiny ts","ts":-0.0000001}`,
		"{\"chat_id\":\"1\",\"message_id\":\"2\",\"text\":\"bad utf8 \xff\xfe\xfd here\"}",
		"{\"chat_id\":\"\xc3\x28\",\"message_id\":\"2\",\"text\":\"ok\"}",
		`{"chat_id":{"a":{"b":[1,2,{"c":3}]}},"message_id":"2","text":"nested ids!"}`,
		`{"chat_id":"1","message_id":"2","text":{"nested":{"text":"inner secret!"}}}`,
		`{"chat_id":"1","message_id":"2","text":"dup one!!","text":"dup two!!"}`,
		`{"chat_id":"1","message_id":"2","text":"trailing stuff!"} {"x":1}`,
		`{"chat_id":"1","message_id":"2","text":"trailing brace!"}}`,
		`{"chat_id":"1","message_id":"2","text":"escaped \u0000 \ud800 \"quote\""}`,
		strings.Repeat("[", 20000),
		`{"chat_id":"1/2","message_id":"../x","text":"ids with slashes"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := DecodeIntent(body)
		if err == nil {
			if m.Source != "ingest" {
				t.Fatalf("Source = %q, want ingest", m.Source)
			}
			if !m.SentAt.IsZero() && m.SentAt.Location() != time.UTC {
				t.Fatalf("SentAt %v is not UTC", m.SentAt)
			}
			return
		}
		var invalid *intent.InvalidError
		if !errors.As(err, &invalid) {
			t.Fatalf("error %T %v is not a *intent.InvalidError", err, err)
		}
		if invalid.Field == "" || invalid.Reason == "" {
			t.Fatalf("InvalidError without field or reason: %+v", invalid)
		}
		for _, text := range textValues(body) {
			if len(text) < 8 || strings.Trim(text, errorAlphabet) == "" {
				continue
			}
			if strings.Contains(err.Error(), text) {
				t.Fatalf("error %q contains the text %q", err, text)
			}
		}
	})
}

// fakeRecorder answers Record with a fixed result or error and keeps what it was given.
type fakeRecorder struct {
	mu  sync.Mutex
	got []intent.Message
	res intent.Result
	err error
}

func (r *fakeRecorder) Record(_ context.Context, m intent.Message) (intent.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, m)
	return r.res, r.err
}

func (r *fakeRecorder) messages() []intent.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]intent.Message(nil), r.got...)
}

const (
	ingestToken  = "ingest-token-0123456789abcdef"
	maxTextBytes = 1024
)

type testServer struct {
	url  string
	rec  *fakeRecorder
	logs *observer.ObservedLogs
	srv  *Server
}

func startServer(t *testing.T, token string, rec *fakeRecorder, health Health) *testServer {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	if health == nil {
		health = func(context.Context) error { return nil }
	}
	s, err := Listen(Options{
		Addr:         "127.0.0.1:0",
		Token:        config.Secret(token),
		MaxTextBytes: maxTextBytes,
		Recorder:     rec,
		Health:       health,
		Logger:       zap.New(core),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &testServer{url: "http://" + s.Addr(), rec: rec, logs: logs, srv: s}
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (ts *testServer) do(t *testing.T, method, path, auth string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, ts.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if ct := resp.Header.Get("Content-Type"); ct == "application/json" {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: answer %q is not a JSON object: %v", method, path, raw, err)
		}
	}
	return r
}

func (ts *testServer) post(t *testing.T, auth, body string) response {
	t.Helper()
	return ts.do(t, http.MethodPost, "/v1/intents", auth, []byte(body))
}

const bearer = "Bearer " + ingestToken

const validBody = `{"chat_id":-1001234567890,"message_id":"42","text":"` + secretText + `","user":"kento","ts":1700000000}`

func TestPostIntentCreated(t *testing.T) {
	rec := &fakeRecorder{res: intent.Result{ID: "intent/-1001234567890/42", Created: true, Session: "main"}}
	ts := startServer(t, ingestToken, rec, nil)
	r := ts.post(t, bearer, validBody)
	if r.status != http.StatusCreated {
		t.Fatalf("status %d, want 201; body %s", r.status, r.raw)
	}
	if r.body["id"] != "intent/-1001234567890/42" || r.body["created"] != true || r.body["session"] != "main" {
		t.Errorf("body = %v", r.body)
	}
	got := rec.messages()
	want := intent.Message{ChatID: "-1001234567890", MessageID: "42", Text: secretText, User: "kento", Source: "ingest",
		SentAt: time.Unix(1700000000, 0).UTC()}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("recorder got %+v, want %+v", got, want)
	}
	logged := ts.logs.FilterMessage("intent recorded").All()
	if len(logged) != 1 || logged[0].ContextMap()["created"] != true {
		t.Errorf("logs = %v", ts.logs.All())
	}
	for _, e := range ts.logs.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()), "TOPSECRET") {
			t.Errorf("a log quotes the text: %v", e.ContextMap())
		}
	}
}

func TestPostIntentAlreadyRecorded(t *testing.T) {
	rec := &fakeRecorder{res: intent.Result{ID: "intent/1/2", Created: false, Session: "main"}}
	ts := startServer(t, ingestToken, rec, nil)
	r := ts.post(t, bearer, `{"chat_id":"1","message_id":"2","text":"again"}`)
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", r.status, r.raw)
	}
	if r.body["id"] != "intent/1/2" || r.body["created"] != false {
		t.Errorf("body = %v", r.body)
	}
}

func TestPostIntentBadInput(t *testing.T) {
	rec := &fakeRecorder{res: intent.Result{ID: "x", Created: true}}
	ts := startServer(t, ingestToken, rec, nil)
	for _, tc := range []struct{ body, reason string }{
		{`{"chat_id":"1","message_id":"2"}`, "text: is missing"},
		{`{"chat_id":1.5,"message_id":"2","text":"` + secretText + `"}`, "chat_id: must be a string or an integer"},
		{`{"chat_id":"1","message_id":"2","text":"` + secretText + `","ts":"` + secretText + `"}`, "ts: must be"},
		{`not json`, "body: is not a JSON object"},
		{``, "body: is not a JSON object: empty body"},
		{`{"chat_id":"1","message_id":"2","text":"t"} trailing`, "body: has data after the JSON object"},
	} {
		r := ts.post(t, bearer, tc.body)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400; body %s", tc.body, r.status, r.raw)
			continue
		}
		reason, _ := r.body["error"].(string)
		if !strings.HasPrefix(reason, tc.reason) {
			t.Errorf("%s: error %q, want it to start with %q", tc.body, reason, tc.reason)
		}
		if strings.Contains(r.raw, "TOPSECRET") {
			t.Errorf("%s: the answer quotes the text: %s", tc.body, r.raw)
		}
	}
	if n := len(rec.messages()); n != 0 {
		t.Errorf("invalid bodies reached the recorder %d times", n)
	}
}

func TestPostIntentRecorderInvalid(t *testing.T) {
	rec := &fakeRecorder{err: &intent.InvalidError{Field: "chat_id", Reason: `must not contain "/"`}}
	ts := startServer(t, ingestToken, rec, nil)
	r := ts.post(t, bearer, `{"chat_id":"a/b","message_id":"2","text":"t"}`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400; body %s", r.status, r.raw)
	}
	if r.body["error"] != `chat_id: must not contain "/"` {
		t.Errorf("body = %v", r.body)
	}
	if ts.logs.FilterMessage("intent rejected").FilterField(zap.String("field", "chat_id")).Len() != 1 {
		t.Errorf("no 'intent rejected' log: %v", ts.logs.All())
	}
}

func TestPostIntentRecorderTooLarge(t *testing.T) {
	rec := &fakeRecorder{err: &intent.InvalidError{Field: "text", TooLarge: true, Reason: "is 2000 bytes, over the 1024-byte limit (ingest.max_text_bytes)"}}
	ts := startServer(t, ingestToken, rec, nil)
	r := ts.post(t, bearer, `{"chat_id":"1","message_id":"2","text":"`+strings.Repeat("x", 2000)+`"}`)
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413; body %s", r.status, r.raw)
	}
	if reason, _ := r.body["error"].(string); !strings.HasPrefix(reason, "text: is 2000 bytes") {
		t.Errorf("body = %v", r.body)
	}
}

func TestPostIntentRecorderUnavailable(t *testing.T) {
	rec := &fakeRecorder{err: errors.New("start intent intent/1/2: context deadline exceeded")}
	ts := startServer(t, ingestToken, rec, nil)
	r := ts.post(t, bearer, `{"chat_id":"1","message_id":"2","text":"`+secretText+`"}`)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503; body %s", r.status, r.raw)
	}
	if reason, _ := r.body["error"].(string); !strings.HasPrefix(reason, "not recorded, try again") || strings.Contains(reason, "TOPSECRET") {
		t.Errorf("body = %v", r.body)
	}
	logged := ts.logs.FilterLevelExact(zapcore.ErrorLevel).FilterField(zap.String("chat", "1")).FilterField(zap.String("message", "2"))
	if logged.Len() != 1 {
		t.Errorf("want one error log naming the message, got %v", ts.logs.All())
	}
}

func TestPostIntentUnauthorized(t *testing.T) {
	rec := &fakeRecorder{res: intent.Result{ID: "x", Created: true}}
	ts := startServer(t, ingestToken, rec, nil)
	for _, auth := range []string{
		"",
		"Bearer wrong-token",
		"Bearer " + ingestToken + "x",
		"Bearer " + ingestToken[:len(ingestToken)-1],
		"Basic " + ingestToken,
		ingestToken,
		"Bearer ",
	} {
		r := ts.post(t, auth, validBody)
		if r.status != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", auth, r.status)
			continue
		}
		if r.body["error"] != "missing or wrong bearer token" {
			t.Errorf("Authorization %q: body %v", auth, r.body)
		}
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: WWW-Authenticate = %q", auth, r.header.Get("WWW-Authenticate"))
		}
		if strings.Contains(r.raw, ingestToken) {
			t.Errorf("the answer shows the token: %s", r.raw)
		}
	}
	if n := len(rec.messages()); n != 0 {
		t.Errorf("unauthorized requests reached the recorder %d times", n)
	}
}

func TestPostIntentNoTokenConfigured(t *testing.T) {
	rec := &fakeRecorder{res: intent.Result{ID: "x", Created: true}}
	ts := startServer(t, "", rec, nil)
	for _, auth := range []string{"", "Bearer ", "Bearer anything"} {
		r := ts.post(t, auth, validBody)
		if r.status != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", auth, r.status)
			continue
		}
		if reason, _ := r.body["error"].(string); !strings.Contains(reason, "no token is configured") {
			t.Errorf("Authorization %q: error %q does not say no token is configured", auth, reason)
		}
	}
	if n := len(rec.messages()); n != 0 {
		t.Errorf("requests reached the recorder %d times with ingest closed", n)
	}
}

// bodyOfSize returns a valid intent body of exactly n bytes.
func bodyOfSize(t *testing.T, n int) string {
	t.Helper()
	const head, tail = `{"chat_id":"1","message_id":"2","text":"`, `"}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("no body of %d bytes", n)
	}
	return head + strings.Repeat("a", pad) + tail
}

func TestPostIntentBodyLimit(t *testing.T) {
	rec := &fakeRecorder{res: intent.Result{ID: "intent/1/2", Created: true}}
	ts := startServer(t, ingestToken, rec, nil)
	limit := maxTextBytes + envelopeBytes

	if r := ts.post(t, bearer, bodyOfSize(t, limit)); r.status != http.StatusCreated {
		t.Fatalf("a body of exactly %d bytes: status %d, want 201; %s", limit, r.status, r.raw)
	}
	for _, n := range []int{limit + 1, 4 * limit} {
		r := ts.post(t, bearer, bodyOfSize(t, n))
		if r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("a body of %d bytes: status %d, want 413; %s", n, r.status, r.raw)
			continue
		}
		if reason, _ := r.body["error"].(string); reason != fmt.Sprintf("body is over %d bytes", limit) {
			t.Errorf("a body of %d bytes: error %q", n, reason)
		}
	}
	if n := len(rec.messages()); n != 1 {
		t.Errorf("recorder called %d times, want 1 (only the body within the limit)", n)
	}
}

func TestMethodsAndRoutes(t *testing.T) {
	rec := &fakeRecorder{res: intent.Result{ID: "x", Created: true}}
	ts := startServer(t, ingestToken, rec, nil)
	if r := ts.do(t, http.MethodGet, "/v1/intents", bearer, nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/intents: status %d, want 405", r.status)
	}
	if r := ts.do(t, http.MethodPost, "/healthz", "", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: status %d, want 405", r.status)
	}
	if r := ts.do(t, http.MethodGet, "/nope", "", nil); r.status != http.StatusNotFound {
		t.Errorf("GET /nope: status %d, want 404", r.status)
	}
}

func TestHealthz(t *testing.T) {
	var mu sync.Mutex
	var healthErr error
	var sawDeadline bool
	health := func(ctx context.Context) error {
		_, ok := ctx.Deadline()
		mu.Lock()
		defer mu.Unlock()
		sawDeadline = ok
		return healthErr
	}
	ts := startServer(t, "", &fakeRecorder{}, health)

	r := ts.do(t, http.MethodGet, "/healthz", "", nil)
	if r.status != http.StatusOK || r.body["status"] != "ok" {
		t.Fatalf("healthy: status %d, body %s", r.status, r.raw)
	}
	mu.Lock()
	if !sawDeadline {
		t.Errorf("the health check ran without a deadline")
	}
	healthErr = errors.New("temporal: connection refused")
	mu.Unlock()

	r = ts.do(t, http.MethodGet, "/healthz", "", nil)
	if r.status != http.StatusServiceUnavailable || r.body["status"] != "unhealthy" || r.body["error"] != "temporal: connection refused" {
		t.Fatalf("unhealthy: status %d, body %s", r.status, r.raw)
	}
}

// TestHandlerDirect drives routes() through httptest without a listener, with a tiny body limit.
func TestHandlerDirect(t *testing.T) {
	core, _ := observer.New(zapcore.DebugLevel)
	rec := &fakeRecorder{res: intent.Result{ID: "intent/1/2", Created: true, Session: "main"}}
	s := &Server{token: config.Secret(ingestToken), maxBody: 64, recorder: rec, log: zap.New(core),
		health: func(context.Context) error { return nil }}
	h := s.routes()

	serve := func(auth, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/intents", strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := serve(bearer, `{"chat_id":"1","message_id":"2","text":"t"}`); w.Code != http.StatusCreated {
		t.Errorf("status %d, want 201: %s", w.Code, w.Body)
	}
	if w := serve(bearer, `{"chat_id":"1","message_id":"2","text":"`+strings.Repeat("x", 64)+`"}`); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("over maxBody: status %d, want 413: %s", w.Code, w.Body)
	}
	if w := serve("", `{}`); w.Code != http.StatusUnauthorized || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("no token: status %d, Content-Type %q", w.Code, w.Header().Get("Content-Type"))
	}
	req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Errorf("GET /healthz: status %d", w.Code)
	}
	if n := len(rec.messages()); n != 1 {
		t.Errorf("recorder called %d times, want 1", n)
	}
}
