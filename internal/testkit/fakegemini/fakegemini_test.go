package fakegemini_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/testkit/fakegemini"
)

// chunk is the part of a GenerateContentResponse the test reads.
type chunk struct {
	Candidates []struct {
		Content      fakegemini.Content `json:"content"`
		FinishReason string             `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		TotalTokenCount int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
}

// stream posts a streamGenerateContent request as Gemini CLI does (alt=sse) and reads its events.
func stream(t *testing.T, s *fakegemini.Server, body string) []chunk {
	t.Helper()
	res, err := http.Post(s.URL()+"/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var out []chunk
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var c chunk
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatalf("data %q: %v", data, err)
			}
			out = append(out, c)
		}
	}
	return out
}

// Issue 25: the stand-in speaks the Gemini API as Gemini CLI 0.61.0 reads it: a turn streams
// GenerateContentResponse chunks (text parts, or a functionCall part), the last with
// finishReason STOP and usageMetadata; the script sees what the request adds after the model's
// last turn (a prompt, a function response with a hook's context); a utility generateContent
// request gets the router's JSON and stays out of Requests.
func TestStandInSpeaksGeminiAPI(t *testing.T) {
	s := fakegemini.New(func(r fakegemini.Request) fakegemini.Turn {
		if r.AfterCall() {
			return fakegemini.Turn{Text: "Done after " + r.Responses()[0]}
		}
		if strings.Contains(r.SinceModel(), "run it") && r.HasTool("run_shell_command") {
			return fakegemini.Shell("echo hi")
		}
		return fakegemini.Turn{Text: "Hello there friend."}
	})
	defer s.Close()
	tools := `"tools":[{"functionDeclarations":[{"name":"run_shell_command"},{"name":"mcp_intentq_reply"}]}]`
	chunks := stream(t, s, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],`+tools+`}`)
	var text string
	for i, c := range chunks {
		text += c.Candidates[0].Content.Parts[0].Text
		if last := i == len(chunks)-1; last != (c.Candidates[0].FinishReason == "STOP") || last != (c.UsageMetadata != nil) {
			t.Errorf("chunk %d of %d: finishReason %q, usage %v", i, len(chunks), c.Candidates[0].FinishReason, c.UsageMetadata)
		}
	}
	if text != "Hello there friend." || len(chunks) != 3 {
		t.Errorf("streamed %q in %d chunks", text, len(chunks))
	}
	chunks = stream(t, s, `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"Hello"}]},{"role":"user","parts":[{"text":"run it"}]}],`+tools+`}`)
	call := chunks[0].Candidates[0].Content.Parts[0].FunctionCall
	if len(chunks) != 1 || call == nil || call.Name != "run_shell_command" || !strings.Contains(string(call.Args), `"command":"echo hi"`) {
		t.Fatalf("function call: %+v", chunks)
	}
	after := `{"contents":[{"role":"user","parts":[{"text":"run it"}]},{"role":"model","parts":[{"functionCall":{"id":"call_2","name":"run_shell_command","args":{"command":"echo hi"}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"call_2","name":"run_shell_command","response":{"output":"hi\n\n<hook_context>ctx</hook_context>"}}}]}],` + tools + `}`
	chunks = stream(t, s, after)
	if got := chunks[len(chunks)-1].Candidates[0].Content.Parts[0].Text; !strings.Contains(got, "<hook_context>ctx</hook_context>") {
		t.Errorf("after the call the script saw %q", got)
	}
	res, err := http.Post(s.URL()+"/v1beta/models/gemini-3.5-flash-lite:generateContent", "application/json",
		strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"route"}]}],"generationConfig":{"responseMimeType":"application/json"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var c chunk
	if err := json.Unmarshal(b, &c); err != nil || !strings.Contains(c.Candidates[0].Content.Parts[0].Text, `"model_choice": "flash"`) {
		t.Errorf("utility answer %s (%v)", b, err)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || len(s.AllRequests()) != 4 || reqs[0].Model != "gemini-3.1-pro-preview" || reqs[2].UserTexts() != nil || !reqs[2].AfterCall() {
		t.Errorf("requests: %d (all %d); %+v", len(reqs), len(s.AllRequests()), reqs)
	}
	if !strings.Contains(reqs[2].All(), "functionCall run_shell_command") || !reqs[1].HasTool("mcp_intentq_reply") || reqs[1].UserTexts()[0] != "run it" {
		t.Errorf("request 2: %q / %v", reqs[2].All(), reqs[1].UserTexts())
	}
	if r, err := http.Get(s.URL() + "/v1beta/models"); err != nil || r.StatusCode != http.StatusNotFound || len(s.Other()) != 1 {
		t.Errorf("other request: %v %v %v", r, err, s.Other())
	}
}
