package main_test

// End-to-end tests with the real Gemini CLI (0.61.0, peers.Gemini) in tmux, against the Gemini
// API stand-in (fakegemini) and a real intentq worker (issue 25). Gemini is set up as a person
// would: its settings.json names the API-key login, the stand-in is GOOGLE_GEMINI_BASE_URL, the
// work folder is trusted (GEMINI_CLI_TRUST_WORKSPACE), a user policy lets the shell tool run
// without asking, `starter setup --cli gemini` installs intentq's hooks and MCP server, and
// `starter run-agent` starts it (INTENTQ_AGENT_ID and the pane's @agent_id).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakegemini"
	"github.com/intentq/intentq/internal/testkit/peers"
)

// geminiSession makes the default session "secretary" a Gemini CLI session in tmux session
// secretary.
var geminiSession = []string{"INTENTQ_SESSIONS_SECRETARY_TMUX_TARGET=secretary:0", "INTENTQ_SESSIONS_SECRETARY_CLI=gemini",
	"INTENTQ_SESSIONS_SECRETARY_DEFAULT=true"}

// geminiEnv is claudeEnv plus Gemini CLI: the stand-in as its API (GOOGLE_GEMINI_BASE_URL, a
// key), the folder trusted, the Gemini CLI first on PATH, the default session a Gemini one.
func geminiEnv(t testing.TB, bot *fakebot.Server, token string, api *fakegemini.Server, extra ...string) (env []string, home string) {
	t.Helper()
	gemini := peers.Gemini(t)
	env, home = claudeEnv(t, bot, token, append(append([]string{}, geminiSession...), extra...)...)
	for i, v := range env {
		if strings.HasPrefix(v, "PATH=") {
			env[i] = "PATH=" + filepath.Dir(gemini) + string(os.PathListSeparator) + strings.TrimPrefix(v, "PATH=")
		}
	}
	return append(env, "GEMINI_API_KEY=intentq-test-key", "GOOGLE_GEMINI_BASE_URL="+api.URL(), "GEMINI_CLI_TRUST_WORKSPACE=true"), home
}

// geminiSettings are the person's own Gemini CLI settings: the API-key login, no update checks,
// no usage statistics or telemetry.
const geminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}
`

// geminiShellPolicy is the person's policy that lets the shell tool run without asking.
const geminiShellPolicy = `[[rule]]
toolName = "run_shell_command"
decision = "allow"
priority = 100
`

// geminiAgent writes the person's Gemini CLI settings and shell policy, runs `starter setup
// --cli gemini`, starts Gemini with `starter run-agent` in the work folder, and waits for its
// input line. It returns a function that captures the pane.
func geminiAgent(t testing.TB, env []string, home string) func() string {
	t.Helper()
	return startGemini(t, env, home, true)
}

// startGemini is geminiAgent; without allowShell the person's policy is not written, so Gemini
// asks before it runs a shell command.
func startGemini(t testing.TB, env []string, home string, allowShell bool) func() string {
	t.Helper()
	return startGeminiBy(t, env, home, allowShell, false)
}

// startGeminiBy is startGemini; byHand starts Gemini as a person would: `gemini` in the session's
// tmux session, with no intentq environment.
func startGeminiBy(t testing.TB, env []string, home string, allowShell, byHand bool) func() string {
	t.Helper()
	peers.Tmux(t)
	work := filepath.Join(home, "work")
	geminiHome := filepath.Join(home, ".gemini")
	for _, dir := range []string{work, filepath.Join(geminiHome, "policies")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(geminiHome, "settings.json"), []byte(geminiSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	if allowShell {
		if err := os.WriteFile(filepath.Join(geminiHome, "policies", "shell.toml"), []byte(geminiShellPolicy), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out := starterRun(t, env, 0, "setup", "--cli", "gemini"); !strings.Contains(out, "settings.json") {
		t.Errorf("setup --cli gemini:\n%s", out)
	}
	run := exec.Command(filepath.Join(binaries(t), "starter"), "run-agent")
	if byHand {
		run = exec.Command("tmux", "new-session", "-d", "-s", "secretary", "-x", "200", "-y", "50", "-c", work, "--", "gemini")
	}
	run.Env, run.Dir = env, work
	if out, err := run.CombinedOutput(); err != nil || !byHand && !strings.Contains(string(out), "started gemini") {
		t.Fatalf("start gemini: %v\n%s", err, out)
	}
	tmux := func(args ...string) string {
		c := exec.Command("tmux", args...)
		c.Env = env
		out, _ := c.CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	tmux("resize-window", "-t", "=secretary:", "-x", "200", "-y", "50")
	t.Cleanup(func() {
		pid, _ := strconv.Atoi(tmux("display-message", "-p", "-t", "=secretary:", "#{pane_pid}"))
		tmux("kill-server")
		for deadline := time.Now().Add(15 * time.Second); pid > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if !geminiPaneRunning(pid) {
				return
			}
		}
		if pid > 1 {
			// Seen once after a failed run: Gemini (its launcher and the relaunched CLI) outlived
			// the tmux server. End the pane's process group, which this test started.
			t.Logf("Gemini (pane pid %d) outlived tmux; ending its process group", pid)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	capture := func() string {
		return tmux("capture-pane", "-p", "-t", "=secretary:")
	}
	waitPane(t, capture, "Gemini's input line", 60*time.Second, func(p string) bool {
		return strings.Contains(p, "> ") && strings.Contains(p, "Type your message or @path/to/file") && !strings.Contains(p, "Executing Hook")
	})
	if got := tmux("show-options", "-pqv", "-t", "=secretary:", "@agent_id"); !byHand && got != "secretary" || byHand && got != "" {
		t.Errorf("@agent_id = %q", got)
	}
	doctor := exec.Command(filepath.Join(binaries(t), "starter"), "doctor")
	doctor.Env = env
	out, _ := doctor.CombinedOutput() // other checks may fail here (no ntfy); the hooks' line counts
	if !strings.Contains(string(out), "hooks gemini") || !strings.Contains(string(out), "BeforeAgent") {
		t.Errorf("doctor does not show the Gemini hooks installed:\n%s", out)
	}
	return capture
}

// geminiTyped reports whether a request's new user text includes a message intentq typed into
// the pane (a prompt that begins with its header). A hook's context comes as <hook_context>, an
// AfterAgent block's reason as a text that begins with <system-reminder>.
func geminiTyped(r fakegemini.Request, header string) bool {
	return slices.ContainsFunc(r.UserTexts(), func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), header) })
}

// geminiRequests reads fakegemini's turn requests.
func geminiRequests(api *fakegemini.Server) (func() []modelReq, func() string) {
	return func() []modelReq {
			var out []modelReq
			for _, r := range api.Requests() {
				out = append(out, modelReq{At: r.At, Added: r.SinceModel(), Typed: geminiTyped(r, newHeader) || geminiTyped(r, pendingHeader)})
			}
			return out
		}, func() string {
			var longest fakegemini.Request
			for _, r := range api.Requests() {
				if len(r.Contents) >= len(longest.Contents) {
					longest = r
				}
			}
			return longest.All()
		}
}

// geminiLongTurn plays a model that answers "start the long job" with a turn of `calls` shell
// calls, each sleeping a second (each call its own command: Gemini CLI takes five identical
// calls in a row for a loop and stops the turn), and everything else with a short text.
func geminiLongTurn(calls int32) (fakegemini.Script, *atomic.Int32, *turnEnd) {
	var n atomic.Int32
	end := &turnEnd{}
	return func(r fakegemini.Request) fakegemini.Turn {
		switch {
		case !r.AfterCall() && slices.ContainsFunc(r.UserTexts(), func(s string) bool { return strings.Contains(s, "start the long job") }):
			n.Store(1)
			return fakegemini.Shell("sleep 1; echo step 1")
		case r.AfterCall() && n.Load() > 0 && n.Load() < calls:
			return fakegemini.Shell(fmt.Sprintf("sleep 1; echo step %d", n.Add(1)))
		}
		if r.AfterCall() && n.Load() >= calls {
			end.at.CompareAndSwap(0, time.Now().UnixNano())
		}
		return fakegemini.Turn{Text: "Noted."}
	}, &n, end
}

// Issue 25: 20 Telegram messages while the real Gemini CLI runs a long multi-tool turn: each
// reaches the model exactly once, handed over by intentq's hooks (as <hook_context> in a tool's
// functionResponse after AfterTool, or by the AfterAgent block as the turn ends), with no
// keystroke into the working agent; the session counts each delivered once and knows the
// agent's state from its hooks.
func TestGeminiMessagesReachAWorkingAgentThroughItsHooks(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Gemini CLI")
	}
	const n = 20
	bin := binaries(t)
	bot := fakebot.New("321:gemini")
	t.Cleanup(bot.Close)
	script, calls, ended := geminiLongTurn(n + 5)
	api := fakegemini.New(script)
	t.Cleanup(api.Close)
	env, home := geminiEnv(t, bot, "321:gemini", api, "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := geminiAgent(t, env, home)

	submitTyped(t, env, capture, "start the long job", func() bool { return calls.Load() >= 1 })
	for deadline := time.Now().Add(60 * time.Second); calls.Load() < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not go on; pane:\n%s", capture())
		}
	}
	reqs, conv := geminiRequests(api)
	run := &agentRun{cli: "gemini", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: ended}
	// The turn ends (the AfterAgent hook may hand over the last ones, or block the stop while
	// intents wait, and the agent goes on): wait until the model ended the long turn and Gemini
	// has settled.
	run.settle = func(t testing.TB) {
		waitPane(t, capture, "the long turn's end", 90*time.Second, func(string) bool { return ended.at.Load() != 0 })
		geminiSettled(t, run, api)
	}
	res := workingAgentScenario(t, run, n)
	if res.TypedAfter > 0 {
		t.Errorf("%d messages were typed after the turn: the AfterAgent hook should have handed them over", res.TypedAfter)
	}
	byContext, byStop := 0, 0
	for _, r := range api.Requests() {
		for _, resp := range r.Responses() {
			if strings.Contains(resp, "<hook_context>") {
				byContext += len(msgIDRE.FindAllString(resp, -1))
			}
		}
		for _, u := range r.UserTexts() {
			if strings.HasPrefix(u, "<system-reminder>") {
				byStop += len(msgIDRE.FindAllString(u, -1))
			}
		}
	}
	t.Logf("Telegram update -> model request while Gemini works: p50 %s, max %s; %d handed over as context after a tool call, %d by the AfterAgent hook",
		res.p50(), res.max(), byContext, byStop)
	var view struct {
		Agent *struct {
			State string `json:"state"`
			Event string `json:"event"`
		} `json:"agent"`
	}
	if err := json.Unmarshal([]byte(starterRun(t, env, 0, "session", "show", "secretary", "--json")), &view); err != nil || view.Agent == nil {
		t.Errorf("session view: %+v (%v)", view, err)
	} else if view.Agent.State != "idle" || view.Agent.Event != "stop" {
		t.Errorf("agent state %+v after the turn, want idle from the AfterAgent hook", *view.Agent)
	}
}

// geminiSettled waits until the Gemini of run has finished its turn: the session knows the agent
// idle from its AfterAgent hook, the pane shows the empty input line and no busy marker, and no
// model request came for a second (an AfterAgent block continues the turn: Gemini CLI shows
// "Agent execution blocked: <reason>" and asks the model again).
func geminiSettled(t testing.TB, run *agentRun, api *fakegemini.Server) {
	t.Helper()
	// A long turn's remaining calls may take minutes on a loaded machine: the wait moves on while
	// the model is still being asked, and ends 60 s after its last request (5 min at most).
	start, deadline, asked := time.Now(), time.Now().Add(60*time.Second), 0
	for {
		var view struct {
			Agent *struct {
				State string `json:"state"`
			} `json:"agent"`
		}
		_ = json.Unmarshal([]byte(starterRun(t, run.env, 0, "session", "show", "secretary", "--json")), &view)
		reqs := api.AllRequests()
		if len(reqs) > asked {
			asked, deadline = len(reqs), start.Add(min(5*time.Minute, time.Since(start)+60*time.Second))
		}
		quiet := len(reqs) == 0 || time.Since(reqs[len(reqs)-1].At) > time.Second
		p := run.capture()
		if view.Agent != nil && view.Agent.State == "idle" && quiet && !strings.Contains(p, "esc to cancel") && strings.Contains(p, "Type your message") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Gemini did not settle (agent %+v); pane:\n%s", view.Agent, p)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Issue 25: the real Gemini CLI, idle: messages are typed into its empty input line, one at a
// time once the previous turn has ended, each confirmed by the BeforeAgent hook's receipt (no
// fallback to reading the input line, no retyping, unless Gemini dropped the Enter), and each
// reaches the model exactly once, as the prompt intentq typed.
func TestGeminiIdleMessagesTypedOnce(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Gemini CLI")
	}
	const n = 3
	bin := binaries(t)
	bot := fakebot.New("321:geminiidle")
	t.Cleanup(bot.Close)
	api := fakegemini.New(func(fakegemini.Request) fakegemini.Turn { return fakegemini.Turn{Text: "Noted."} })
	t.Cleanup(api.Close)
	env, home := geminiEnv(t, bot, "321:geminiidle", api, "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := geminiAgent(t, env, home)
	reqs, conv := geminiRequests(api)
	run := &agentRun{cli: "gemini", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: &turnEnd{}}
	var latencies []time.Duration
	for i := 1; i <= n; i++ {
		geminiSettled(t, run, api)
		id := fmt.Sprintf("msg_id=%d chat=42", 200+i)
		sent := time.Now()
		bot.AddMessage(42, 42, 200+i, fmt.Sprintf("idle message %d", i))
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			i := slices.IndexFunc(reqs(), func(r modelReq) bool { return strings.Contains(r.Added, id) })
			if i >= 0 {
				r := reqs()[i]
				latencies = append(latencies, r.At.Sub(sent))
				if !r.Typed {
					t.Errorf("%s reached the model, but not as the prompt intentq typed: %.300q", id, r.Added)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not reach the model; pane:\n%s", id, capture())
			}
		}
	}
	geminiSettled(t, run, api)
	all := conv()
	for i := 1; i <= n; i++ {
		if c := strings.Count(all, fmt.Sprintf("msg_id=%d chat=42", 200+i)); c != 1 {
			t.Errorf("idle message %d appears %d times in the conversation", 200+i, c)
		}
	}
	historyOnce(t, env, 201, n)
	res := deliveryResult{Latencies: latencies}
	t.Logf("Telegram update -> model request while Gemini idles: p50 %s, max %s", res.p50(), res.max())
	// Each typing was confirmed by the agent's BeforeAgent receipt, never retyped unless Gemini
	// dropped the Enter (a loaded machine: make test failed so once) and the session found the
	// text on its input line: each "no receipt" is then followed by "not submitted". The same
	// rule as the other typed-with-receipt tests (receiptWatch).
	receipts := &receiptWatch{}
	for drained := false; !drained; {
		select {
		case l, ok := <-lines:
			if ok {
				receipts.note(l)
			}
			drained = !ok
		default:
			drained = true
		}
	}
	receipts.check(t, "Gemini")
}

// Issue 25: the reply path of a Gemini CLI session. A Telegram message is typed into the idle
// Gemini, the model (the stand-in) calls mcp_intentq_reply (Gemini's name of the intentq MCP
// server's reply tool, which `starter setup --cli gemini` registered and allowed), the person's
// chat receives the answer as a reply to the message, and the intent closes.
func TestGeminiRepliesThroughMCP(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Gemini CLI")
	}
	bin := binaries(t)
	bot := fakebot.New("321:geminimcp")
	t.Cleanup(bot.Close)
	api := fakegemini.New(func(r fakegemini.Request) fakegemini.Turn {
		if r.AfterCall() {
			return fakegemini.Turn{Text: "Answered."}
		}
		for _, u := range r.UserTexts() {
			if m := deliveredRE.FindStringSubmatch(u); m != nil && r.HasTool("mcp_intentq_reply") {
				return fakegemini.Turn{Call: "mcp_intentq_reply", Args: map[string]any{"chat_id": m[2], "reply_to": m[1], "text": "Hello from Gemini"}}
			}
		}
		return fakegemini.Turn{Text: "OK."}
	})
	t.Cleanup(api.Close)
	env, home := geminiEnv(t, bot, "321:geminimcp", api, "INTENTQ_REMINDERS_FIRST_AFTER=40s")
	// Gemini CLI starts an MCP server without the variables whose names look secret (*TOKEN*,
	// *KEY*, ...): the worker's settings reach `starter mcp` through a config file named by
	// INTENTQ_CONFIG.
	configFile := writeConfig(t, env, home, "telegram:\n  allowed_chat_ids: [42]\n"+
		"sessions:\n  secretary: {tmux_target: \"secretary:0\", cli: gemini, default: true}\n")
	env = append(env, "INTENTQ_CONFIG="+configFile)
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := geminiAgent(t, env, home)

	bot.AddMessage(42, 42, 7, "hello there")
	deadline := time.Now().Add(90 * time.Second)
	for len(bot.Sent()) == 0 {
		if time.Now().After(deadline) {
			for _, r := range api.Requests() {
				t.Logf("request: tools %v; added: %.300q", r.ToolNames(), r.SinceModel())
			}
			t.Fatalf("no reply reached the chat; the pane:\n%s\nrequests: %d", capture(), len(api.Requests()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	sent := bot.Sent()[0]
	if sent.ChatID != 42 || sent.ReplyTo != 7 || sent.Text != "Hello from Gemini" {
		t.Errorf("sent = %+v, want the agent's answer as a reply to 7", sent)
	}
	// The tool's result goes back to the model.
	waitPane(t, capture, "the call's response at the model", 30*time.Second, func(string) bool {
		return slices.ContainsFunc(api.Requests(), fakegemini.Request.AfterCall)
	})
	for _, r := range api.Requests() {
		if r.AfterCall() && (strings.Contains(r.SinceModel(), "not reachable") || strings.Contains(r.SinceModel(), "error")) {
			t.Errorf("the reply tool failed: %.300q", r.SinceModel())
		}
	}
	waitIntentClosed(t, env, "42/7", 30*time.Second)
	if n := len(bot.Sent()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
	calls := 0
	for _, r := range api.Requests() {
		if r.AfterCall() {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("%d requests carried a call's response, want the one reply", calls)
	}
}

// geminiPaneRunning reports whether process pid runs (exists and is no zombie waiting to be reaped).
func geminiPaneRunning(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // not Linux: existing is running
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}
