// Package fakeopenai is a local stand-in for the OpenAI Responses API that the real Codex CLI
// (0.169.0) talks to in tests, through a provider in its config.toml (`base_url =
// "<URL>/v1"`, `wire_api = "responses"`): POST /v1/responses with `stream: true`, answered with
// the server-sent events Codex reads (response.created, response.output_item.added,
// response.output_text.delta or response.function_call_arguments.delta/.done,
// response.output_item.done, response.completed with usage). What the model answers is
// scripted: a Script sees each request and returns the turn to play (text, or a function call
// such as Codex's shell tool `exec_command {"cmd": ...}`). A new thread's title request (a
// json_schema text format) is answered by the server itself, unless the script answers it.
package fakeopenai

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

// Request is a Responses API request as Codex sends it (the parts tests look at).
type Request struct {
	Model        string `json:"model"`
	Stream       bool   `json:"stream"`
	Instructions string `json:"instructions"`
	Input        []Item `json:"input"`
	Tools        []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	// Text carries the output format: a title request asks for a json_schema.
	Text struct {
		Format struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
	// Raw is the whole request body; At is when it arrived.
	Raw string    `json:"-"`
	At  time.Time `json:"-"`
}

// Item is one input item: a message (Role, Content), a function call the model made (Name,
// Arguments, CallID) or its output (CallID, Output).
type Item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
}

// Text is everything the item says: a message's text parts, a call's name and arguments, a
// call's output.
func (it Item) Text() string {
	switch it.Type {
	case "function_call", "custom_tool_call":
		return "function_call " + it.Name + " " + it.Arguments
	case "function_call_output", "custom_tool_call_output":
		return "function_call_output: " + rawText(it.Output)
	}
	return rawText(it.Content)
}

// rawText is a string, or the text of a list of content parts.
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// IsTitle reports whether the request asks for a thread's title (a json_schema output).
func (r Request) IsTitle() bool { return r.Text.Format.Type == "json_schema" }

// since is the input after the model's last output (an assistant message or a call).
func (r Request) since() []Item {
	i := len(r.Input)
	for i > 0 {
		it := r.Input[i-1]
		if it.Role == "assistant" || it.Type == "function_call" || it.Type == "custom_tool_call" || it.Type == "reasoning" {
			break
		}
		i--
	}
	return r.Input[i:]
}

// SinceAssistant is the text of the input after the model's last output: what this request adds
// to the conversation (a prompt, call outputs, hook context as developer messages).
func (r Request) SinceAssistant() string {
	var parts []string
	for _, it := range r.since() {
		parts = append(parts, it.Text())
	}
	return strings.Join(parts, "\n")
}

// Added are the messages this request adds after the model's last output, by role (user,
// developer), without call outputs.
func (r Request) Added(role string) []string {
	var out []string
	for _, it := range r.since() {
		if it.Type == "message" || it.Type == "" {
			if it.Role == role {
				out = append(out, rawText(it.Content))
			}
		}
	}
	return out
}

// AfterCall reports whether the request carries the output of a call the model made (the turn
// goes on after a tool ran).
func (r Request) AfterCall() bool {
	for _, it := range r.since() {
		if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
			return true
		}
	}
	return false
}

// All is the text of the whole input, one item a line.
func (r Request) All() string {
	var parts []string
	for _, it := range r.Input {
		parts = append(parts, it.Text())
	}
	return strings.Join(parts, "\n")
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

// Turn is what the model answers: text, or a function call (Call set) with Arguments (JSON).
type Turn struct {
	Text      string
	Call      string
	Arguments any
	// Namespace is the namespace tool a call's function is in: Codex 0.169.0 offers an MCP
	// server's tools as a tool of type "namespace" named mcp__<server>, with the server's tools
	// as its functions (mcp__intentq: reply, pending, ...), and runs a call only with its
	// namespace ({"name": "reply", "namespace": "mcp__intentq"}; "mcp__intentq__reply" as a
	// name is an "unsupported call").
	Namespace string
	// Delay streams slowly, keeping the agent busy this long.
	Delay time.Duration
}

// Exec is a call of Codex's shell tool.
func Exec(cmd string) Turn {
	return Turn{Call: "exec_command", Arguments: map[string]any{"cmd": cmd}}
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

// New starts a stand-in answering with script (nil: "OK." to everything). Title requests are
// answered with a title unless the script returns a turn with text for them.
func New(script Script) *Server {
	if script == nil {
		script = func(Request) Turn { return Turn{Text: "OK."} }
	}
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the provider's base URL for Codex's config (with /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.CloseClientConnections(); s.srv.Close() }

// Requests returns the model requests so far, oldest first (title requests left out).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.reqs {
		if !r.IsTitle() {
			out = append(out, r)
		}
	}
	return out
}

// AllRequests returns every request so far, title requests too.
func (s *Server) AllRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[],"models":[]}`)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"not_found","message":"not found"}}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","message":%q}}`, err.Error())
		return
	}
	req.Raw, req.At = string(body), time.Now()
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.seq++
	id := s.seq
	s.mu.Unlock()
	var turn Turn
	if req.IsTitle() {
		turn = Turn{Text: `{"title":"Test thread"}`}
	} else {
		turn = s.script(req)
	}
	s.stream(w, req, turn, id)
}

func (s *Server) stream(w http.ResponseWriter, req Request, t Turn, id int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	seq := 0
	send := func(event string, data map[string]any) {
		data["type"] = event
		data["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(data)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	respID := fmt.Sprintf("resp_%d", id)
	response := func(status string, output []any) map[string]any {
		m := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": req.Model, "output": output}
		if status == "completed" {
			m["usage"] = map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110}
		}
		return m
	}
	send("response.created", map[string]any{"response": response("in_progress", []any{})})
	var item map[string]any
	if t.Call != "" {
		args, _ := json.Marshal(t.Arguments)
		if t.Arguments == nil {
			args = []byte("{}")
		}
		callID := fmt.Sprintf("call_%d", id)
		itemID := fmt.Sprintf("fc_%d", id)
		added := map[string]any{"type": "function_call", "id": itemID, "call_id": callID, "name": t.Call, "arguments": "", "status": "in_progress"}
		if t.Namespace != "" {
			added["namespace"] = t.Namespace
		}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": 0, "delta": string(args)})
		send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": 0, "arguments": string(args)})
		item = map[string]any{"type": "function_call", "id": itemID, "call_id": callID, "name": t.Call, "arguments": string(args), "status": "completed"}
		if t.Namespace != "" {
			item["namespace"] = t.Namespace
		}
	} else {
		itemID := fmt.Sprintf("msg_%d", id)
		send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "id": itemID, "role": "assistant", "status": "in_progress", "content": []any{}}})
		send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		words := strings.SplitAfter(t.Text, " ")
		for _, word := range words {
			if t.Delay > 0 {
				time.Sleep(t.Delay / time.Duration(len(words)))
			}
			send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": word})
		}
		send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": t.Text})
		part := map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}
		send("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part})
		item = map[string]any{"type": "message", "id": itemID, "role": "assistant", "status": "completed", "content": []any{part}}
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": response("completed", []any{item})})
}
