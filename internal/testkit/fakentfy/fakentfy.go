// Package fakentfy is a local stand-in for an ntfy server in tests. It speaks ntfy's publish
// API: POST or PUT /<topic> with the message as the body and the headers Title, Priority, Tags
// and Authorization (RFC 2047 encoded header values are decoded, as ntfy does), and answers
// with ntfy's JSON message or ntfy's JSON error. Tests can demand a token, deny topics, force
// error statuses and take the server down.
package fakentfy

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Message is one accepted publish, as the server understood it.
type Message struct {
	ID       string      // ntfy message id, as in the reply
	Time     time.Time   // when it was accepted
	Method   string      // POST or PUT
	Topic    string      // topic from the path
	Title    string      // Title header, RFC 2047 decoded; empty if absent
	Priority int         // 1-5; 0 when no priority header was sent
	Tags     []string    // Tags header split on commas, decoded and trimmed; nil if absent
	Message  string      // the request body
	Header   http.Header // all request headers as received (not decoded)
}

// Server is a fake ntfy server. Its zero value is not usable; call New.
type Server struct {
	srv *httptest.Server

	mu        sync.Mutex
	token     string
	denied    map[string]bool
	failCode  int
	failLeft  int // requests still to fail; -1 means always
	messages  []Message
	requests  int
	closeOnce sync.Once
}

// topicRE is ntfy's rule for topic names.
var topicRE = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// maxBody bounds a request body the fake reads.
const maxBody = 1 << 20

// New starts a fake ntfy server on a local port. Close it when done (t.Cleanup(s.Close)).
func New() *Server {
	s := &Server{denied: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the server's base URL, e.g. "http://127.0.0.1:12345". It stays the same after Down.
func (s *Server) URL() string { return s.srv.URL }

// Close shuts the server down. It is safe to call more than once and after Down.
func (s *Server) Close() { s.closeOnce.Do(s.srv.Close) }

// Down stops answering: the listener and idle connections are closed, so clients get
// connection errors from now on. There is no way back up; start a new Server instead.
func (s *Server) Down() { s.Close() }

// SetToken makes every publish require "Authorization: Bearer <token>"; a missing or different
// token gets 401 with ntfy code 40101. An empty token turns the requirement off.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// DenyTopic makes publishes to topic fail with 403 and ntfy code 40301, as ntfy does when the
// user has no write access to the topic.
func (s *Server) DenyTopic(topic string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[topic] = true
}

// AllowTopic undoes DenyTopic.
func (s *Server) AllowTopic(topic string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.denied, topic)
}

// FailNext makes the next n requests fail with the given HTTP status (e.g. 500, 429, 413) and
// an ntfy-style JSON error, before any other check.
func (s *Server) FailNext(status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCode, s.failLeft = status, n
}

// FailAlways makes every request fail with the given HTTP status until Recover.
func (s *Server) FailAlways(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCode, s.failLeft = status, -1
}

// Recover cancels FailNext and FailAlways.
func (s *Server) Recover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCode, s.failLeft = 0, 0
}

// Messages returns a copy of every accepted message, in the order they were accepted.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.messages))
	for i, m := range s.messages {
		m.Tags = append([]string(nil), m.Tags...)
		m.Header = m.Header.Clone()
		out[i] = m
	}
	return out
}

// Requests returns how many requests reached the server, rejected ones included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// apiError is ntfy's JSON error body.
type apiError struct {
	Code  int    `json:"code"`
	HTTP  int    `json:"http"`
	Error string `json:"error"`
}

// reply is ntfy's JSON answer to a publish.
type reply struct {
	ID       string   `json:"id"`
	Time     int64    `json:"time"`
	Expires  int64    `json:"expires"`
	Event    string   `json:"event"`
	Topic    string   `json:"topic"`
	Title    string   `json:"title,omitempty"`
	Message  string   `json:"message"`
	Priority int      `json:"priority,omitempty"`
	Tags     []string `json:"tags,omitempty"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	failCode := 0
	if s.failLeft != 0 {
		failCode = s.failCode
		if s.failLeft > 0 {
			s.failLeft--
		}
	}
	token := s.token
	s.mu.Unlock()

	if failCode != 0 {
		writeError(w, failCode, failCode*100+1, forcedText(failCode))
		return
	}
	topic := strings.TrimPrefix(r.URL.Path, "/")
	if !topicRE.MatchString(topic) {
		writeError(w, http.StatusNotFound, 40401, "page not found")
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		writeError(w, http.StatusMethodNotAllowed, 40501, "method not allowed")
		return
	}
	if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
		writeError(w, http.StatusUnauthorized, 40101, "unauthorized")
		return
	}
	s.mu.Lock()
	denied := s.denied[topic]
	s.mu.Unlock()
	if denied {
		writeError(w, http.StatusForbidden, 40301, "forbidden")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, 40000, "bad request")
		return
	}
	if len(body) > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, 41301, "request entity too large")
		return
	}
	prio, ok := parsePriority(header(r, "X-Priority", "Priority", "prio", "p"))
	if !ok {
		writeError(w, http.StatusBadRequest, 40007, "invalid priority")
		return
	}
	m := Message{
		ID:       newID(),
		Time:     time.Now(),
		Method:   r.Method,
		Topic:    topic,
		Title:    decode(header(r, "X-Title", "Title", "t")),
		Priority: prio,
		Tags:     splitTags(decode(header(r, "X-Tags", "Tags", "Tag", "ta"))),
		Message:  string(body),
		Header:   r.Header.Clone(),
	}
	s.mu.Lock()
	s.messages = append(s.messages, m)
	s.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply{
		ID: m.ID, Time: m.Time.Unix(), Expires: m.Time.Add(12 * time.Hour).Unix(), Event: "message",
		Topic: topic, Title: m.Title, Message: m.Message, Priority: m.Priority, Tags: m.Tags,
	})
}

// header returns the first non-empty value among names (ntfy accepts several spellings).
func header(r *http.Request, names ...string) string {
	for _, n := range names {
		if v := r.Header.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// decode undoes RFC 2047 encoding of a header value, as ntfy does; undecodable values stay
// as they are.
func decode(v string) string {
	d, err := new(mime.WordDecoder).DecodeHeader(v)
	if err != nil {
		return v
	}
	return d
}

// parsePriority accepts ntfy's numbers and names; "" is 0 (not given).
func parsePriority(v string) (int, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return 0, true
	case "1", "min":
		return 1, true
	case "2", "low":
		return 2, true
	case "3", "default":
		return 3, true
	case "4", "high":
		return 4, true
	case "5", "max", "urgent":
		return 5, true
	}
	return 0, false
}

func splitTags(v string) []string {
	var tags []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}

func forcedText(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "limit reached: too many requests; increase your limits with a paid plan"
	case http.StatusInternalServerError:
		return "internal server error"
	}
	if t := http.StatusText(status); t != "" {
		return strings.ToLower(t)
	}
	return "status " + strconv.Itoa(status)
}

func writeError(w http.ResponseWriter, status, code int, text string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiError{Code: code, HTTP: status, Error: text})
}

// newID returns a 12-character id like ntfy's.
func newID() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("fakentfy: %v", err))
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
