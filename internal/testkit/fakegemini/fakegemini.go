// Package fakegemini is a local stand-in for the Gemini API that the real Gemini CLI (0.61.0)
// talks to in tests (issue 25), through GOOGLE_GEMINI_BASE_URL=<URL> with GEMINI_API_KEY and
// settings.json security.auth.selectedType "gemini-api-key". Gemini CLI sends a turn as POST
// /v1beta/models/<model>:streamGenerateContent?alt=sse and reads server-sent events, each a
// GenerateContentResponse chunk (candidates[].content.parts[] of text or functionCall, the last
// with finishReason and usageMetadata); its router and other utility calls are POST
// .../<model>:generateContent asking for JSON (responseMimeType application/json), answered with
// one GenerateContentResponse. What the model answers in a turn is scripted: a Script sees each
// streamed request and returns the turn to play (text, or a function call such as Gemini CLI's
// shell tool `run_shell_command {"command": ...}`). Utility requests are answered by the server
// itself with a JSON that satisfies the router ({"model_choice": "flash"}) and the next-speaker
// check ({"next_speaker": "user"}).
package fakegemini

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

// Request is a generateContent request as Gemini CLI sends it (the parts tests look at).
type Request struct {
	// Model and Method come from the path: /v1beta/models/<Model>:<Method>.
	Model  string `json:"-"`
	Method string `json:"-"`
	// Contents is the conversation, oldest first: user and model turns.
	Contents          []Content `json:"contents"`
	SystemInstruction *Content  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType string `json:"responseMimeType"`
	} `json:"generationConfig"`
	// Raw is the whole request body; At is when it arrived.
	Raw string    `json:"-"`
	At  time.Time `json:"-"`
}

// Content is one turn of the conversation: a role (user, model) and its parts.
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is a piece of a turn: text, a function call the model made, or a function's response.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a call the model made.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is a tool's result as Gemini CLI sends it back.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response,omitempty"`
}

// String is the part as one piece of text.
func (p Part) String() string {
	switch {
	case p.FunctionCall != nil:
		return "functionCall " + p.FunctionCall.Name + " " + string(p.FunctionCall.Args)
	case p.FunctionResponse != nil:
		return "functionResponse " + p.FunctionResponse.Name + ": " + responseText(p.FunctionResponse.Response)
	}
	return p.Text
}

// responseText is a function response's output ({"output": "..."}), else its JSON.
func responseText(raw json.RawMessage) string {
	var r struct {
		Output string `json:"output"`
	}
	if json.Unmarshal(raw, &r) == nil && r.Output != "" {
		return r.Output
	}
	return string(raw)
}

// Text is the content's parts, one a line.
func (c Content) Text() string {
	var out []string
	for _, p := range c.Parts {
		out = append(out, p.String())
	}
	return strings.Join(out, "\n")
}

// IsUtility reports whether the request is not a turn of the conversation the person sees:
// a generateContent call (the router, a next-speaker check, ...), not streamed.
func (r Request) IsUtility() bool { return r.Method != "streamGenerateContent" }

// since is the conversation after the model's last turn.
func (r Request) since() []Content {
	i := len(r.Contents)
	for i > 0 && r.Contents[i-1].Role != "model" {
		i--
	}
	return r.Contents[i:]
}

// SinceModel is the text of what the request adds after the model's last turn: a prompt,
// function responses (with hook context Gemini CLI appends to them), hook context after a
// prompt.
func (r Request) SinceModel() string {
	var parts []string
	for _, c := range r.since() {
		parts = append(parts, c.Text())
	}
	return strings.Join(parts, "\n")
}

// UserTexts are the text parts this request adds after the model's last turn (a prompt, a
// hook's <hook_context> after it, an AfterAgent hook's reason), without function responses.
func (r Request) UserTexts() []string {
	var out []string
	for _, c := range r.since() {
		if c.Role != "user" {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall == nil && p.FunctionResponse == nil && p.Text != "" {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// Responses are the function responses this request adds after the model's last turn, each as
// text (its output and any hook context in it).
func (r Request) Responses() []string {
	var out []string
	for _, c := range r.since() {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				out = append(out, p.String())
			}
		}
	}
	return out
}

// AfterCall reports whether the request carries the response of a call the model made (the turn
// goes on after a tool ran).
func (r Request) AfterCall() bool { return len(r.Responses()) > 0 }

// All is the text of the whole conversation, one part a line.
func (r Request) All() string {
	var parts []string
	for _, c := range r.Contents {
		parts = append(parts, c.Text())
	}
	return strings.Join(parts, "\n")
}

// HasTool reports whether the request offers the model a function of that name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == name {
				return true
			}
		}
	}
	return false
}

// ToolNames are the functions the request offers the model.
func (r Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		for _, f := range t.FunctionDeclarations {
			out = append(out, f.Name)
		}
	}
	return out
}

// Turn is what the model answers: text, or a function call (Call set) with Args (JSON object).
type Turn struct {
	Text string
	Call string
	Args any
	// Delay streams slowly, keeping the agent busy this long.
	Delay time.Duration
}

// Shell is a call of Gemini CLI's shell tool.
func Shell(command string) Turn {
	return Turn{Call: "run_shell_command", Args: map[string]any{"command": command, "description": "stand-in"}}
}

// Script decides the turn for a streamed request.
type Script func(Request) Turn

// UtilityAnswer is what a utility request (generateContent) gets: a JSON that Gemini CLI
// 0.61.0's router (reasoning, model_choice flash|pro) and next-speaker check (reasoning,
// next_speaker user|model) both accept.
const UtilityAnswer = `{"reasoning": "stand-in", "model_choice": "flash", "next_speaker": "user"}`

// Server is the stand-in.
type Server struct {
	srv    *httptest.Server
	script Script
	mu     sync.Mutex
	reqs   []Request
	other  []string
	seq    int
}

// New starts a stand-in answering turns with script (nil: "OK." to everything).
func New(script Script) *Server {
	if script == nil {
		script = func(Request) Turn { return Turn{Text: "OK."} }
	}
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL for GOOGLE_GEMINI_BASE_URL (no path).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.CloseClientConnections(); s.srv.Close() }

// Requests returns the streamed (turn) requests so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.reqs {
		if !r.IsUtility() {
			out = append(out, r)
		}
	}
	return out
}

// AllRequests returns every generateContent request so far, utility requests too.
func (s *Server) AllRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Other lists the other requests the server got ("METHOD path"), answered 404 or with a stub.
func (s *Server) Other() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.other...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), ":")
	model = model[strings.LastIndex(model, "/")+1:]
	if r.Method != http.MethodPost || !ok || (method != "streamGenerateContent" && method != "generateContent") {
		s.mu.Lock()
		s.other = append(s.other, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost && method == "countTokens" {
			_, _ = io.WriteString(w, `{"totalTokens": 100}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":{"code":400,"message":%q,"status":"INVALID_ARGUMENT"}}`, err.Error())
		return
	}
	req.Model, req.Method, req.Raw, req.At = model, method, string(body), time.Now()
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.seq++
	id := s.seq
	s.mu.Unlock()
	if req.IsUtility() {
		w.Header().Set("Content-Type", "application/json")
		text := "OK."
		if req.GenerationConfig.ResponseMimeType == "application/json" {
			text = UtilityAnswer
		}
		b, _ := json.Marshal(chunk(req.Model, []map[string]any{{"text": text}}, true))
		_, _ = w.Write(b)
		return
	}
	s.stream(w, req, s.script(req), id)
}

// chunk is one GenerateContentResponse; the last carries finishReason and usageMetadata.
func chunk(model string, parts []map[string]any, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	c := map[string]any{"candidates": []any{cand}, "modelVersion": model}
	if last {
		cand["finishReason"] = "STOP"
		c["usageMetadata"] = map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
	}
	return c
}

func (s *Server) stream(w http.ResponseWriter, req Request, t Turn, id int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(c map[string]any) {
		b, _ := json.Marshal(c)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	if t.Call != "" {
		args := t.Args
		if args == nil {
			args = map[string]any{}
		}
		if t.Delay > 0 {
			time.Sleep(t.Delay)
		}
		send(chunk(req.Model, []map[string]any{{"functionCall": map[string]any{"id": fmt.Sprintf("call_%d", id), "name": t.Call, "args": args}}}, true))
		return
	}
	words := strings.SplitAfter(t.Text, " ")
	for i, word := range words {
		if t.Delay > 0 {
			time.Sleep(t.Delay / time.Duration(len(words)))
		}
		send(chunk(req.Model, []map[string]any{{"text": word}}, i == len(words)-1))
	}
}
