// Package fakeanthropic is a local stand-in for the Anthropic Messages API that the real Claude
// Code CLI talks to in tests (ANTHROPIC_BASE_URL): POST /v1/messages, streaming (server-sent
// events: message_start, content_block_start/delta/stop with text_delta or input_json_delta,
// message_delta with stop_reason, message_stop) or not. What the model answers is scripted: a
// Script sees each request and returns the turn to play (text, or a tool call).
package fakeanthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Request is a Messages API request as Claude Code sends it (the parts tests look at).
type Request struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []Message       `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
	// Raw is the whole request body; At is when it arrived.
	Raw string    `json:"-"`
	At  time.Time `json:"-"`
}

// Message is one message of a request; Content is a string or a list of blocks.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Text is everything the message says: its text, text blocks and tool results, joined.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(m.Content, &blocks)
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_result":
			parts = append(parts, "tool_result: "+string(b.Content))
		}
	}
	return strings.Join(parts, "\n")
}

// SinceAssistant is the text of the messages after the last assistant message: what this
// request adds to the conversation (a prompt, tool results, hook context).
func (r Request) SinceAssistant() string {
	var parts []string
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "assistant"; i-- {
		parts = append([]string{r.Messages[i].Text()}, parts...)
	}
	return strings.Join(parts, "\n")
}

// Last is the text of the request's last message.
func (r Request) Last() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Text()
}

// HasTool reports whether the request offers the model a tool of that name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Turn is what the model answers: text, or a tool call (ToolName set) with ToolInput.
type Turn struct {
	Text      string
	ToolName  string
	ToolInput any
	// Delay streams slowly, keeping the agent busy this long.
	Delay time.Duration
}

// Script decides the turn for a request.
type Script func(Request) Turn

// Server is the stand-in.
type Server struct {
	srv    *httptest.Server
	script Script
	mu     sync.Mutex
	reqs   []Request
	seq    int
}

// New starts a stand-in answering with script (nil: "OK." to everything).
func New(script Script) *Server {
	if script == nil {
		script = func(Request) Turn { return Turn{Text: "OK."} }
	}
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL for ANTHROPIC_BASE_URL.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the Messages requests so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":100}`)
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error())
		return
	}
	req.Raw, req.At = string(body), time.Now()
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.seq++
	id := s.seq
	s.mu.Unlock()
	turn := s.script(req)
	if req.Stream {
		s.stream(w, req, turn, id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(message(req, turn, id, true))
}

// message is the whole message of a turn (non-streaming), or its start (content empty).
func message(req Request, t Turn, id int, full bool) map[string]any {
	m := map[string]any{
		"id": fmt.Sprintf("msg_%d", id), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 1},
	}
	if full {
		stop := "end_turn"
		var block any = map[string]any{"type": "text", "text": t.Text}
		if t.ToolName != "" {
			stop = "tool_use"
			block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", id), "name": t.ToolName, "input": t.ToolInput}
		}
		m["content"], m["stop_reason"] = []any{block}, stop
	}
	return m
}

func (s *Server) stream(w http.ResponseWriter, req Request, t Turn, id int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": message(req, t, id, false)})
	stop := "end_turn"
	if t.ToolName != "" {
		stop = "tool_use"
		input, _ := json.Marshal(t.ToolInput)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", id), "name": t.ToolName, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		words := strings.SplitAfter(t.Text, " ")
		for _, word := range words {
			if t.Delay > 0 {
				time.Sleep(t.Delay / time.Duration(len(words)))
			}
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": word}})
		}
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	send("message_stop", map[string]any{"type": "message_stop"})
}
