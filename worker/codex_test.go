package main_test

// End-to-end tests with the real Codex CLI (0.169.0, peers.Codex) in tmux, against the Responses
// API stand-in (fakeopenai) and a real intentq worker (issue 25). Codex is set up as a person
// would: its config.toml names the stand-in as its provider, `starter setup --cli codex` installs
// intentq's hooks (trusted, so no review dialog) and MCP server, and `starter run-agent` starts it
// (--no-daemon, INTENTQ_AGENT_ID and the pane's @agent_id).
//
// What these tests cannot do here, and why: Codex's workspace-write sandbox is never used (as root
// on this kind of machine a failed sandboxed spawn replaced /dev/null with a regular file, and
// every later tmux failed: ../shared/FACTS.md). The working agent runs with sandbox_mode
// danger-full-access and approval_policy never; the approval prompt needs a sandbox that asks, so
// that test runs read-only with on-request, and the model only ever asks for an escalated command
// (asked before anything is spawned; it is declined, so nothing runs in or out of a sandbox).

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
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/internal/testkit/fakeopenai"
	"github.com/intentq/intentq/internal/testkit/peers"
)

// codexKeyVar names the environment variable that holds the key Codex sends the stand-in.
const codexKeyVar = "STANDIN_OPENAI_KEY"

// codexSession makes the default session "secretary" a Codex session in tmux session secretary.
var codexSession = []string{"INTENTQ_SESSIONS_SECRETARY_TMUX_TARGET=secretary:0", "INTENTQ_SESSIONS_SECRETARY_CLI=codex",
	"INTENTQ_SESSIONS_SECRETARY_DEFAULT=true"}

// codexEnv is claudeEnv plus Codex: its folder (HOME/.codex), the stand-in's key, the Codex CLI
// first on PATH, the default session a Codex one.
func codexEnv(t testing.TB, bot *fakebot.Server, token string, extra ...string) (env []string, home string) {
	t.Helper()
	codex := peers.Codex(t)
	env, home = claudeEnv(t, bot, token, append(append([]string{}, codexSession...), extra...)...)
	for i, v := range env {
		if strings.HasPrefix(v, "PATH=") {
			env[i] = "PATH=" + filepath.Dir(codex) + string(os.PathListSeparator) + strings.TrimPrefix(v, "PATH=")
		}
	}
	return append(env, "CODEX_HOME="+filepath.Join(home, ".codex"), codexKeyVar+"=sk-intentq-test"), home
}

// codexAgent writes Codex's config.toml (the stand-in as its provider, the work folder trusted,
// the given approval policy and sandbox), runs `starter setup --cli codex`, starts Codex with
// `starter run-agent` in the work folder, and waits for its input line. It returns a function
// that captures the pane.
func codexAgent(t testing.TB, env []string, home string, api *fakeopenai.Server, approval, sandbox string) func() string {
	t.Helper()
	peers.Tmux(t)
	work := filepath.Join(home, "work")
	codexHome := filepath.Join(home, ".codex")
	for _, dir := range []string{work, codexHome} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	config := fmt.Sprintf(`# the person's own settings
model = "gpt-5.1-codex"
model_provider = "standin"
approval_policy = %q
sandbox_mode = %q
check_for_update_on_startup = false

[model_providers.standin]
name = "Responses API stand-in"
base_url = %q
env_key = %q
wire_api = "responses"

[projects.%q]
trust_level = "trusted"
`, approval, sandbox, api.URL(), codexKeyVar, work)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := starterRun(t, env, 0, "setup", "--cli", "codex"); !strings.Contains(out, "trust") {
		t.Errorf("setup --cli codex:\n%s", out)
	}
	run := exec.Command(filepath.Join(binaries(t), "starter"), "run-agent")
	run.Env, run.Dir = env, work
	if out, err := run.CombinedOutput(); err != nil || !strings.Contains(string(out), "started codex") {
		t.Fatalf("run-agent: %v\n%s", err, out)
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
			if syscall.Kill(pid, 0) != nil {
				break
			}
		}
		killCodexDaemons(t, codexHome)
	})
	capture := func() string {
		return tmux("capture-pane", "-p", "-t", "=secretary:")
	}
	pane := waitPane(t, capture, "Codex's input line", 60*time.Second, func(p string) bool {
		return strings.Contains(p, "› Ask Codex to do anything") && strings.Contains(p, "? for shortcuts")
	})
	if strings.Contains(pane, "Hooks need review") {
		t.Fatalf("Codex asks to review the hooks setup trusted:\n%s", pane)
	}
	if got := tmux("show-options", "-pqv", "-t", "=secretary:", "@agent_id"); got != "secretary" {
		t.Errorf("@agent_id = %q", got)
	}
	return capture
}

// killCodexDaemons ends the app-server daemons a Codex TUI started (none with --no-daemon; the
// PIDs are in CODEX_HOME/app-server-daemon/*.pid, JSON).
func killCodexDaemons(t testing.TB, codexHome string) {
	files, _ := filepath.Glob(filepath.Join(codexHome, "app-server-daemon", "*.pid"))
	for _, f := range files {
		var p struct {
			PID int `json:"pid"`
		}
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &p) == nil && p.PID > 1 {
			t.Logf("killing Codex daemon %d (%s)", p.PID, f)
			_ = syscall.Kill(p.PID, syscall.SIGTERM)
		}
	}
}

// codexLongTurn plays a model that answers "start the long job" with a turn of `calls` shell
// calls, each sleeping a second, and everything else with a short text.
func codexLongTurn(calls int32) (fakeopenai.Script, *atomic.Int32, *turnEnd) {
	var n atomic.Int32
	end := &turnEnd{}
	return func(r fakeopenai.Request) fakeopenai.Turn {
		switch {
		case !r.AfterCall() && slices.ContainsFunc(r.Added("user"), func(s string) bool { return strings.Contains(s, "start the long job") }):
			n.Store(1)
			return fakeopenai.Exec("sleep 1")
		case r.AfterCall() && n.Load() > 0 && n.Load() < calls:
			n.Add(1)
			return fakeopenai.Exec("sleep 1")
		}
		if r.AfterCall() && n.Load() >= calls {
			end.at.CompareAndSwap(0, time.Now().UnixNano())
		}
		return fakeopenai.Turn{Text: "Noted."}
	}, &n, end
}

// codexRun is an agentRun with the real Codex and its stand-in.
type codexRun struct {
	*agentRun
	api *fakeopenai.Server
}

// codexLongTurnRun starts a worker and the real Codex (set up by `starter setup --cli codex`,
// started by `starter run-agent`) in a long multi-tool turn of calls shell calls, a second each.
func codexLongTurnRun(t testing.TB, calls int) codexRun {
	t.Helper()
	bin := binaries(t)
	bot := fakebot.New("321:codex")
	t.Cleanup(bot.Close)
	script, n, ended := codexLongTurn(int32(calls))
	api := fakeopenai.New(script)
	t.Cleanup(api.Close)
	env, home := codexEnv(t, bot, "321:codex", "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := codexAgent(t, env, home, api, "never", "danger-full-access")

	tmuxKeys(t, env, "-l", "start the long job")
	time.Sleep(300 * time.Millisecond) // Enter right after the text is taken as part of a paste
	tmuxKeys(t, env, "Enter")
	deadline := time.Now().Add(60 * time.Second)
	for n.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not start; pane:\n%s", capture())
		}
		time.Sleep(100 * time.Millisecond)
	}
	reqs, conv := codexRequests(api)
	return codexRun{agentRun: &agentRun{cli: "codex", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: ended,
		// The turn ends (the Stop hook may hand over the last ones): wait for the pane to settle.
		settle: func(t testing.TB) {
			waitPane(t, capture, "the turn's end", 90*time.Second, func(p string) bool {
				return strings.Contains(p, "Worked for") && !strings.Contains(p, "esc to interrupt")
			})
		}}, api: api}
}

// codexIdleRun starts a worker and the real Codex, idle, whose model answers "Noted.".
func codexIdleRun(t testing.TB) *agentRun {
	t.Helper()
	bin := binaries(t)
	bot := fakebot.New("321:codexidle")
	t.Cleanup(bot.Close)
	api := fakeopenai.New(func(fakeopenai.Request) fakeopenai.Turn { return fakeopenai.Turn{Text: "Noted."} })
	t.Cleanup(api.Close)
	env, home := codexEnv(t, bot, "321:codexidle", "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := codexAgent(t, env, home, api, "never", "danger-full-access")
	reqs, conv := codexRequests(api)
	return &agentRun{cli: "codex", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: &turnEnd{}}
}

// codexTyped reports whether a request's new user messages include a message intentq typed into
// the pane (a prompt that begins with its header). A Stop hook's block arrives as a user message
// too, but inside <hook_prompt>.
func codexTyped(r fakeopenai.Request, header string) bool {
	return slices.ContainsFunc(r.Added("user"), func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), header) })
}

// Issue 25: 20 Telegram messages while the real Codex runs a long multi-tool turn: each reaches
// the model exactly once, handed over by intentq's hooks (as context after a tool call, or by
// the Stop hook's block as the turn ends), with no keystroke into the working agent; the session
// counts each delivered once and knows the agent's state from its hooks.
func TestCodexMessagesReachAWorkingAgentThroughItsHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the worker and Codex")
	}
	const n = 20
	run := codexLongTurnRun(t, n+5)
	res := workingAgentScenario(t, run.agentRun, n)
	// Codex takes a Stop block's reason once: nothing waits to be typed after the turn either.
	if res.TypedAfter > 0 {
		t.Errorf("%d messages were typed after the turn: the Stop hook should have handed them over", res.TypedAfter)
	}
	byContext, byStop := 0, 0
	for _, r := range run.api.Requests() {
		for _, d := range r.Added("developer") {
			byContext += len(msgIDRE.FindAllString(d, -1))
		}
		for _, u := range r.Added("user") {
			if strings.Contains(u, "<hook_prompt") {
				byStop += len(msgIDRE.FindAllString(u, -1))
			}
		}
	}
	t.Logf("Telegram update -> model request while Codex works: p50 %s, max %s; %d handed over as context after a tool call, %d by the Stop hook",
		res.p50(), res.max(), byContext, byStop)
	var view struct {
		Agent *struct {
			State string `json:"state"`
			Event string `json:"event"`
		} `json:"agent"`
	}
	if err := json.Unmarshal([]byte(starterRun(t, run.env, 0, "session", "show", "secretary", "--json")), &view); err != nil || view.Agent == nil {
		t.Errorf("session view: %+v (%v)", view, err)
	} else if view.Agent.State != "idle" || view.Agent.Event != "stop" {
		t.Errorf("agent state %+v after the turn, want idle from the Stop hook", *view.Agent)
	}
	// The thread is bound to the agent: its hooks ran in the TUI's own process (--no-daemon).
	threads, _ := filepath.Glob(filepath.Join(run.home, ".intentq", "codex-threads", "*"))
	if len(threads) != 1 {
		t.Errorf("threads bound: %q, want the one thread", threads)
	} else if b, _ := os.ReadFile(threads[0]); strings.TrimSpace(string(b)) != "secretary" {
		t.Errorf("thread %s bound to %q", filepath.Base(threads[0]), b)
	}
}

// Issue 25: the real Codex, idle: messages are typed into its empty input line, one at a time
// once the previous turn has ended, and each reaches the model exactly once (a new thread's
// SessionStart, which Codex runs at its first prompt, does not present the message being typed
// a second time).
func TestCodexIdleMessagesTypedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the worker and Codex")
	}
	res := idleAgentScenario(t, codexIdleRun(t), 3)
	t.Logf("Telegram update -> model request while Codex idles: p50 %s, max %s", res.p50(), res.max())
}

// Issue 25: Codex's approval prompt ("Would you like to run the following command?", answered at
// once by a digit, y or p) is never answered by intentq: a message that arrives while it is open
// waits (the PermissionRequest hook says the agent waits for the person, and the pane shows the
// prompt), the person is told, nothing is typed, the command does not run; once the person
// declines it, the message reaches the model exactly once.
func TestCodexApprovalPromptIsNeverAnswered(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the worker and Codex")
	}
	bin := binaries(t)
	bot := fakebot.New("321:approve")
	t.Cleanup(bot.Close)
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	marker := filepath.Join(t.TempDir(), "approved-by-intentq.txt")
	api := fakeopenai.New(func(r fakeopenai.Request) fakeopenai.Turn {
		if !r.AfterCall() && slices.ContainsFunc(r.Added("user"), func(s string) bool { return strings.Contains(s, "please run the tests") }) {
			// An escalated command: Codex asks the person before it spawns anything.
			return fakeopenai.Turn{Call: "exec_command", Arguments: map[string]any{"cmd": "touch " + marker,
				"sandbox_permissions": "require_escalated", "justification": "run the tests"}}
		}
		return fakeopenai.Turn{Text: "OK."}
	})
	t.Cleanup(api.Close)
	env, home := codexEnv(t, bot, "321:approve", "INTENTQ_NTFY_URL="+ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone",
		"INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s", "INTENTQ_DELIVERY_WAITS_FOR_YOU_AFTER=3s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := codexAgent(t, env, home, api, "on-request", "read-only")

	tmuxKeys(t, env, "-l", "please run the tests")
	time.Sleep(300 * time.Millisecond)
	tmuxKeys(t, env, "Enter")
	waitPane(t, capture, "the approval prompt", 60*time.Second, func(p string) bool {
		return strings.Contains(p, "Would you like to run the following command?") && strings.Contains(p, "Yes, proceed (y)")
	})
	prompt := watchPane(t, capture, "You approved", "Ran touch")
	// The PermissionRequest hook told the session: the agent waits for the person.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var view struct {
			Agent *struct {
				State string `json:"state"`
			} `json:"agent"`
		}
		_ = json.Unmarshal([]byte(starterRun(t, env, 0, "session", "show", "secretary", "--json")), &view)
		if view.Agent != nil && view.Agent.State == "waiting" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session does not know the agent waits for the person: %+v", view.Agent)
		}
	}
	bot.AddMessage(42, 42, 2, "2 hello during the prompt") // a digit first: typed, it would approve for good
	deadline := time.Now().Add(60 * time.Second)
	for {
		told := false
		for _, m := range ntfy.Messages() {
			told = told || strings.Contains(m.Title, "waits for you")
		}
		if told {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the person was not told; pane:\n%s", capture())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a few more looks at the pane
	if p := capture(); !strings.Contains(p, "Would you like to run the following command?") || sawOpenAI(api, "msg_id=2 chat=42") {
		t.Fatalf("the prompt was answered or the message typed into it:\n%s", p)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran: the prompt was approved")
	}
	if p := prompt(); p != "" {
		t.Fatalf("the prompt was answered:\n%s", p)
	}
	tmuxKeys(t, env, "Escape") // the person declines
	waitPane(t, capture, "the message delivered after the prompt", 60*time.Second, func(string) bool { return sawOpenAI(api, "msg_id=2 chat=42") })
	time.Sleep(2 * time.Second)
	count := 0
	var longest fakeopenai.Request
	for _, r := range api.Requests() {
		if len(r.Input) >= len(longest.Input) {
			longest = r
		}
	}
	count = strings.Count(longest.All(), "msg_id=2 chat=42")
	if count != 1 {
		t.Errorf("the message appears %d times in the conversation", count)
	}
	for _, r := range api.Requests() {
		if strings.Contains(r.SinceAssistant(), "msg_id=2 chat=42") {
			t.Logf("after the prompt the message reached the model %s", map[bool]string{true: "typed (the turn had ended)", false: "through a hook"}[codexTyped(r, "【新着メッセージ】")])
			break
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
	if p := prompt(); p != "" {
		t.Errorf("the prompt was approved:\n%s", p)
	}
}

// sawOpenAI reports whether any request adds s to the conversation.
func sawOpenAI(api *fakeopenai.Server, s string) bool {
	for _, r := range api.Requests() {
		if strings.Contains(r.SinceAssistant(), s) {
			return true
		}
	}
	return false
}

// Issue 25: the reply path of a Codex session. A Telegram message is typed into the idle Codex,
// the model (the stand-in) calls mcp__intentq__reply, the MCP server `starter setup --cli codex`
// registered in config.toml, the person's chat receives the answer as a reply to the message,
// the intent closes, and no reminder is typed afterwards.
func TestCodexRepliesThroughMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the worker and Codex")
	}
	bin := binaries(t)
	bot := fakebot.New("321:codexmcp")
	t.Cleanup(bot.Close)
	api := fakeopenai.New(func(r fakeopenai.Request) fakeopenai.Turn {
		if r.AfterCall() {
			return fakeopenai.Turn{Text: "Answered."}
		}
		for _, u := range r.Added("user") {
			if m := deliveredRE.FindStringSubmatch(u); m != nil && r.HasTool("mcp__intentq") {
				return fakeopenai.Turn{Namespace: "mcp__intentq", Call: "reply", Arguments: map[string]any{"chat_id": m[2], "reply_to": m[1], "text": "Hello from Codex"}}
			}
		}
		return fakeopenai.Turn{Text: "OK."}
	})
	t.Cleanup(api.Close)
	env, home := codexEnv(t, bot, "321:codexmcp", "INTENTQ_REMINDERS_FIRST_AFTER=40s")
	// Codex starts an MCP server with a few variables of its environment only: the config the
	// worker reads from INTENTQ_* variables reaches `starter mcp` through a file named by
	// INTENTQ_CONFIG, which setup --cli codex has Codex hand on (env_vars).
	get := func(name string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				return v
			}
		}
		t.Fatalf("%s not in the environment", name)
		return ""
	}
	configFile := filepath.Join(home, "intentq.yaml")
	yaml := fmt.Sprintf("temporal:\n  embedded:\n    port: %s\n    ui_port: %s\ningest:\n  listen: %q\ntelegram:\n  allowed_chat_ids: [42]\n"+
		"sessions:\n  secretary: {tmux_target: \"secretary:0\", cli: codex, default: true}\n",
		get("INTENTQ_TEMPORAL_EMBEDDED_PORT"), get("INTENTQ_TEMPORAL_EMBEDDED_UI_PORT"), get("INTENTQ_INGEST_LISTEN"))
	if err := os.WriteFile(configFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env = append(env, "INTENTQ_CONFIG="+configFile)
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := codexAgent(t, env, home, api, "never", "danger-full-access")

	received := time.Now()
	bot.AddMessage(42, 42, 7, "hello there")
	deadline := time.Now().Add(90 * time.Second)
	for len(bot.Sent()) == 0 {
		if time.Now().After(deadline) {
			for _, r := range api.Requests() {
				var names []string
				for _, tool := range r.Tools {
					names = append(names, tool.Type+":"+tool.Name)
				}
				t.Logf("request: tools %v; added: %.300q", names, r.SinceAssistant())
			}
			t.Fatalf("no reply reached the chat; the pane:\n%s\nrequests: %d", capture(), len(api.Requests()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	sent := bot.Sent()[0]
	if sent.ChatID != 42 || sent.ReplyTo != 7 || sent.Text != "Hello from Codex" {
		t.Errorf("sent = %+v, want the agent's answer as a reply to 7", sent)
	}
	// The tool's result goes back to the model.
	waitPane(t, capture, "the call's output at the model", 30*time.Second, func(string) bool {
		return slices.ContainsFunc(api.Requests(), fakeopenai.Request.AfterCall)
	})
	for _, r := range api.Requests() {
		if r.AfterCall() && strings.Contains(r.SinceAssistant(), "not reachable") {
			t.Errorf("the reply tool failed: %.300q", r.SinceAssistant())
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		out := starterRun(t, env, 0, "show", "42/7", "--json")
		if strings.Contains(out, `"status": "closed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("intent 42/7 after the reply:\n%s", out)
		}
	}
	// Closed: no reminder is typed any more (the first was due 40 s after receipt).
	reminders := strings.Count(starterRun(t, env, 0, "history", "secretary"), "未対応メッセージ")
	time.Sleep(time.Until(received.Add(50 * time.Second)))
	history := starterRun(t, env, 0, "history", "secretary")
	if strings.Count(history, "未対応メッセージ") > reminders {
		t.Errorf("a reminder was typed after the reply:\n%s", history)
	}
	if n := len(bot.Sent()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
	var calls int
	for _, r := range api.Requests() {
		if r.AfterCall() {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("%d requests carried a call's output, want the one reply", calls)
	}
}
