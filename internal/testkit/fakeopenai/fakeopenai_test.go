package fakeopenai_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/testkit/fakeopenai"
)

// event is one server-sent event as Codex reads it: the event name and its JSON data.
type event struct {
	name string
	data map[string]any
}

func post(t *testing.T, s *fakeopenai.Server, body string) []event {
	t.Helper()
	res, err := http.Post(s.URL()+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var events []event
	var name string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data of %s: %v", name, err)
			}
			if d["type"] != name {
				t.Errorf("event %s carries type %v", name, d["type"])
			}
			events = append(events, event{name, d})
		}
	}
	return events
}

func names(events []event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.name)
	}
	return out
}

// The stand-in streams what Codex 0.169.0 reads: a text answer as output_text deltas, a tool call
// as function_call_arguments deltas, each item done, then response.completed with usage; a
// thread's title request (json_schema) gets a title; every request is recorded, and what it adds
// since the model's last output is readable.
func TestStreamsTheResponsesWireFormat(t *testing.T) {
	s := fakeopenai.New(func(r fakeopenai.Request) fakeopenai.Turn {
		if strings.Contains(r.SinceAssistant(), "run it") && !r.AfterCall() {
			return fakeopenai.Exec("sleep 1")
		}
		return fakeopenai.Turn{Text: "Done here."}
	})
	t.Cleanup(s.Close)

	text := post(t, s, `{"model":"m","stream":true,"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}]}`)
	want := []string{"response.created", "response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if got := names(text); !reflect.DeepEqual(got, want) {
		t.Fatalf("text events %q", got)
	}
	done := text[len(text)-2].data["item"].(map[string]any)
	if done["type"] != "message" || done["role"] != "assistant" || done["content"].([]any)[0].(map[string]any)["text"] != "Done here." {
		t.Errorf("message item %v", done)
	}
	completed := text[len(text)-1].data["response"].(map[string]any)
	if completed["id"] == "" || completed["usage"].(map[string]any)["total_tokens"] == nil {
		t.Errorf("response.completed %v", completed)
	}

	call := post(t, s, `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]}]}`)
	want = []string{"response.created", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if got := names(call); !reflect.DeepEqual(got, want) {
		t.Fatalf("call events %q", got)
	}
	item := call[4].data["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["arguments"] != `{"cmd":"sleep 1"}` || item["call_id"] == "" {
		t.Errorf("function_call item %v", item)
	}

	after := `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]},` +
		`{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c1"},{"type":"function_call_output","call_id":"c1","output":"exit 0"},` +
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"hook context"}]}]}`
	if got := names(post(t, s, after)); got[len(got)-1] != "response.completed" || got[3] != "response.output_text.delta" {
		t.Errorf("after the call: %q", got)
	}

	title := post(t, s, `{"model":"m","stream":true,"input":[],"text":{"format":{"type":"json_schema","name":"codex_output_schema","schema":{}}}}`)
	var answer map[string]string
	if err := json.Unmarshal([]byte(title[len(title)-1].data["response"].(map[string]any)["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)), &answer); err != nil || answer["title"] == "" {
		t.Errorf("title answer %v (%v)", answer, err)
	}

	reqs := s.Requests()
	if len(reqs) != 3 || len(s.AllRequests()) != 4 {
		t.Fatalf("%d requests recorded (%d with the title)", len(reqs), len(s.AllRequests()))
	}
	last := reqs[2]
	if !last.AfterCall() || !strings.Contains(last.SinceAssistant(), "exit 0") || strings.Contains(last.SinceAssistant(), "run it") {
		t.Errorf("since the call: %q", last.SinceAssistant())
	}
	if got := last.Added("developer"); !reflect.DeepEqual(got, []string{"hook context"}) {
		t.Errorf("developer messages added: %q", got)
	}
	if got := reqs[0].Added("user"); !reflect.DeepEqual(got, []string{"hello"}) {
		t.Errorf("user messages: %q", got)
	}
}

// Codex 0.169.0 offers an MCP server's tools in a namespace tool (mcp__intentq); a call of one
// names its function and the namespace, in the item added and in the item done.
func TestNamespacedCall(t *testing.T) {
	s := fakeopenai.New(func(fakeopenai.Request) fakeopenai.Turn {
		return fakeopenai.Turn{Namespace: "mcp__intentq", Call: "reply", Arguments: map[string]any{"text": "hi"}}
	})
	t.Cleanup(s.Close)
	events := post(t, s, `{"model":"m","stream":true,"tools":[{"type":"namespace","name":"mcp__intentq"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}]}`)
	for _, e := range events {
		if e.name != "response.output_item.added" && e.name != "response.output_item.done" {
			continue
		}
		item := e.data["item"].(map[string]any)
		if item["namespace"] != "mcp__intentq" || item["name"] != "reply" {
			t.Errorf("%s: %v", e.name, item)
		}
	}
	if !s.Requests()[0].HasTool("mcp__intentq") {
		t.Error("the namespace tool is not offered")
	}
}
