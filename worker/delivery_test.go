package main_test

// The delivery scenarios shared by the end-to-end tests and the benchmark of every real agent
// CLI (Claude Code against fakeanthropic, Codex against fakeopenai): Telegram messages while the
// agent works through a long multi-tool turn, and while it idles. What differs per CLI (how the
// worker and the agent start, how a request reads) is an agentRun; the rest is here once.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/fakeanthropic"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakeopenai"
)

// newHeader and pendingHeader begin a message intentq types into a pane: a new message, and a
// reminder of one.
const (
	newHeader     = "【新着メッセージ】"
	pendingHeader = "【未対応メッセージ】"
)

// modelReq is one model request as the scenarios read it, whichever API the stand-in speaks.
type modelReq struct {
	At time.Time
	// Added is what the request adds after the model's last output (a prompt, tool results, a
	// hook's context).
	Added string
	// Typed: its new user turn is a message intentq typed into the pane (not one a hook handed
	// over).
	Typed bool
}

// agentRun is a worker and a real agent CLI started for a scenario, with the Telegram stand-in
// the worker polls.
type agentRun struct {
	cli     string
	bot     *fakebot.Server
	env     []string
	home    string
	capture func() string
	// requests are the model requests so far; conversation is the text of the longest
	// conversation the model was sent.
	requests     func() []modelReq
	conversation func() string
	// ended is when the long turn ended (nil: no long turn).
	ended *turnEnd
	// settle, when set, waits until the agent's turn has ended on its screen.
	settle func(t testing.TB)
	// lines are the worker's log lines (nil where the run does not keep them).
	lines <-chan map[string]any
	// deliveredBefore counts the messages delivered before a scenario began.
	deliveredBefore int
}

// claudeRequests reads fakeanthropic's requests.
func claudeRequests(api *fakeanthropic.Server) (func() []modelReq, func() string) {
	return func() []modelReq {
			var out []modelReq
			for _, r := range api.Requests() {
				out = append(out, modelReq{At: r.At, Added: r.SinceAssistant(), Typed: typedPrompt(r, newHeader) || typedPrompt(r, pendingHeader)})
			}
			return out
		}, func() string {
			var longest fakeanthropic.Request
			for _, r := range api.Requests() {
				if len(r.Messages) >= len(longest.Messages) {
					longest = r
				}
			}
			all := ""
			for _, m := range longest.Messages {
				all += m.Text() + "\n"
			}
			return all
		}
}

// codexRequests reads fakeopenai's requests as Codex sends them.
func codexRequests(api *fakeopenai.Server) (func() []modelReq, func() string) {
	return openaiRequests(api, strings.TrimSpace)
}

// openaiRequests reads fakeopenai's requests; prompt is a user message as it was typed, without
// what the CLI puts around it.
func openaiRequests(api *fakeopenai.Server, prompt func(string) string) (func() []modelReq, func() string) {
	typed := func(r fakeopenai.Request) bool {
		return slices.ContainsFunc(r.Added("user"), func(s string) bool {
			s = prompt(s)
			return strings.HasPrefix(s, newHeader) || strings.HasPrefix(s, pendingHeader)
		})
	}
	return func() []modelReq {
			var out []modelReq
			for _, r := range api.Requests() {
				out = append(out, modelReq{At: r.At, Added: r.SinceAssistant(), Typed: typed(r)})
			}
			return out
		}, func() string {
			var longest fakeopenai.Request
			for _, r := range api.Requests() {
				if len(r.Input) >= len(longest.Input) {
					longest = r
				}
			}
			return longest.All()
		}
}

// escalationSettings are a worker's settings that remind every 8 s and escalate at once: the
// interrupt after 3 s, and with reset its reset after 12 s, once per 10 minutes.
func escalationSettings(reset bool) []string {
	env := []string{"INTENTQ_REMINDERS_FIRST_AFTER=5s", "INTENTQ_REMINDERS_REPEAT_EVERY=8s",
		"INTENTQ_SESSIONS_SECRETARY_ESCALATION_INTERRUPT_AFTER=3s", "INTENTQ_SESSIONS_SECRETARY_ESCALATION_STEP_EVERY=1s",
		"INTENTQ_INGEST_TOKEN=tok"}
	if reset {
		env = append(env, "INTENTQ_SESSIONS_SECRETARY_ESCALATION_RESET=true", "INTENTQ_SESSIONS_SECRETARY_ESCALATION_RESET_AFTER=12s",
			"INTENTQ_SESSIONS_SECRETARY_ESCALATION_RESET_COOLDOWN=10m")
	}
	return env
}

// deliveryResult is what a scenario measured.
type deliveryResult struct {
	// Latencies are, per message, the time from the Telegram update to the first model request
	// that holds it.
	Latencies []time.Duration
	// TypedWhileBusy counts the requests whose prompt intentq typed while the agent worked (the
	// keystrokes that reached a working agent); TypedAfter those typed after its turn ended.
	TypedWhileBusy, TypedAfter int
}

// p50 and max of the latencies.
func (d deliveryResult) p50() time.Duration { return quantile(d.Latencies, 0.5) }
func (d deliveryResult) max() time.Duration { return quantile(d.Latencies, 1) }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q * float64(len(s)))
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// workingAgentScenario sends n Telegram messages (ids 101...) while the agent of run is in its
// long multi-tool turn, waits until every one reached the model, and checks that each did so
// exactly once, that none was typed while the agent worked, that each was committed once to the
// session's history and counted delivered once, and that the session knows the agent's state.
func workingAgentScenario(t testing.TB, run *agentRun, n int) deliveryResult {
	t.Helper()
	began := time.Now()
	sentAt := map[string]time.Time{}
	var mu sync.Mutex
	for i := 1; i <= n; i++ {
		mu.Lock()
		sentAt[fmt.Sprint(100+i)] = time.Now()
		mu.Unlock()
		run.bot.AddMessage(42, 42, 100+i, fmt.Sprintf("message number %d while you work", i))
		time.Sleep(300 * time.Millisecond)
	}
	firstSeen := map[string]time.Time{}
	deadline := time.Now().Add(120 * time.Second)
	for len(firstSeen) < n {
		for _, r := range run.requests() {
			for _, m := range msgIDRE.FindAllStringSubmatch(r.Added, -1) {
				if _, ok := sentAt[m[1]]; !ok {
					continue // not one of this scenario's messages
				}
				if _, ok := firstSeen[m[1]]; !ok {
					firstSeen[m[1]] = r.At
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d messages reached the model; pane:\n%s", run.cli, len(firstSeen), n, run.capture())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if run.settle != nil {
		run.settle(t)
	}
	var res deliveryResult
	for _, r := range run.requests() {
		if !r.Typed || r.At.Before(began) {
			continue // not typed, or typed before the scenario (a hand-started agent's first message)
		}
		if run.ended.before(r.At) {
			res.TypedWhileBusy++
			t.Errorf("%s: a message was typed into the pane while the agent worked: %.300q", run.cli, r.Added)
		} else {
			res.TypedAfter++
		}
	}
	// Exactly once: in the conversation the model last saw, every message appears once.
	all := run.conversation()
	for i := 1; i <= n; i++ {
		id := fmt.Sprint(100 + i)
		if c := strings.Count(all, "msg_id="+id+" chat=42"); c != 1 {
			t.Errorf("%s: message %s appears %d times in the conversation", run.cli, id, c)
		}
		res.Latencies = append(res.Latencies, firstSeen[id].Sub(sentAt[id]))
	}
	historyOnce(t, run.env, 101, n)
	// The session knows the agent's state from its hooks, and counted each message once.
	var view struct {
		Agent *struct {
			State string `json:"state"`
			Event string `json:"event"`
		} `json:"agent"`
		Delivered int `json:"delivered"`
	}
	if err := json.Unmarshal([]byte(starterRun(t, run.env, 0, "session", "show", "secretary", "--json")), &view); err != nil || view.Agent == nil || view.Delivered != n+run.deliveredBefore {
		t.Errorf("%s: session view: %+v (%v), want the agent's state and %d delivered", run.cli, view, err, n+run.deliveredBefore)
	}
	if out := starterRun(t, run.env, 0, "sessions"); !strings.Contains(out, "secretary") || !strings.Contains(out, "AGENT") {
		t.Errorf("%s: starter sessions:\n%s", run.cli, out)
	}
	return res
}

// historyOnce waits until messages first ... first+n-1 of chat 42 are each in the session's
// history once (a hook's commit reaches the history a moment after the model has the message).
func historyOnce(t testing.TB, env []string, first, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		history := starterRun(t, env, 0, "history", "secretary")
		var wrong []string
		for id := first; id < first+n; id++ {
			if c := strings.Count(history, fmt.Sprintf("msg_id=%d chat=42", id)); c != 1 {
				wrong = append(wrong, fmt.Sprintf("message %d committed %d times to the history", id, c))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s", strings.Join(wrong, "\n"))
			return
		}
	}
}

// idleText is the text of idle message i (no one's text is part of another's).
func idleText(i int) string { return fmt.Sprintf("idle message %d of the run", i) }

// idleAgentScenario sends n Telegram messages (ids 201...) one after another to the idle agent
// of run, each once the previous turn has ended (the model answers "Noted."), and returns the
// time from each update to the model request holding it. Each is typed once.
func idleAgentScenario(t testing.TB, run *agentRun, n int) deliveryResult {
	t.Helper()
	var res deliveryResult
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("msg_id=%d chat=42", 200+i)
		sent := time.Now()
		run.bot.AddMessage(42, 42, 200+i, idleText(i))
		deadline := time.Now().Add(60 * time.Second)
		var at time.Time
		for at.IsZero() {
			for _, r := range run.requests() {
				if strings.Contains(r.Added, id) {
					at = r.At
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s did not reach the model; pane:\n%s\nthe worker's warnings:\n%s", run.cli, id, run.capture(), warnings(run.lines))
			}
			time.Sleep(20 * time.Millisecond)
		}
		res.Latencies = append(res.Latencies, at.Sub(sent))
		// The turn ends (the answer is on the screen, no busy marker) before the next.
		waitPane(t, run.capture, "the answer", 30*time.Second, func(p string) bool {
			at := strings.LastIndex(p, id)
			return at >= 0 && strings.Contains(p[at:], "Noted.") && !strings.Contains(p, "esc to interrupt")
		})
	}
	all := run.conversation()
	reqs := run.requests()
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("msg_id=%d chat=42", 200+i)
		if c := strings.Count(all, id); c != 1 {
			t.Errorf("%s: idle message %d appears %d times in the conversation", run.cli, 200+i, c)
		}
		// Its text once in the request that brought it: no hook (a SessionStart that comes with
		// the prompt) printed it beside the typed block.
		if at := slices.IndexFunc(reqs, func(r modelReq) bool { return strings.Contains(r.Added, id) }); at >= 0 {
			if c := strings.Count(reqs[at].Added, idleText(i)); c != 1 {
				added := reqs[at].Added
				from := max(0, strings.Index(added, idleText(i))-1500)
				t.Errorf("%s: the request that brought idle message %d shows its text %d times; from 1500 characters before the first: %q", run.cli, 200+i, c, added[from:])
			}
		}
	}
	for _, r := range run.requests() {
		if r.Typed {
			res.TypedAfter++
		}
	}
	return res
}

// warnings are the worker's log lines at warn level and above that lines still holds (nil: none).
func warnings(lines <-chan map[string]any) string {
	var out strings.Builder
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return out.String()
			}
			if level, _ := l["level"].(string); level != "info" && level != "debug" {
				b, _ := json.Marshal(l)
				out.WriteString(string(b) + "\n")
			}
		default:
			return out.String()
		}
	}
}
