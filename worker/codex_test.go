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
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // reads Codex's state database

	"github.com/intentq/intentq/internal/agentcli"

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
	return startCodex(t, env, home, api, approval, sandbox, false)
}

// startCodex is codexAgent; byHand starts Codex as a person would instead: `codex` in the
// session's tmux session, with its default shared daemon and no intentq environment.
func startCodex(t testing.TB, env []string, home string, api *fakeopenai.Server, approval, sandbox string, byHand bool) func() string {
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
	if byHand {
		run = exec.Command("tmux", "new-session", "-d", "-s", "secretary", "-x", "200", "-y", "50", "-c", work, "--", "codex")
	}
	run.Env, run.Dir = env, work
	if out, err := run.CombinedOutput(); err != nil || !byHand && !strings.Contains(string(out), "started codex") {
		t.Fatalf("start codex: %v\n%s", err, out)
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
	if byHand {
		// Codex 0.169.0 with its shared daemon loses a prompt submitted about a second after its
		// input line appears (seen here, typed by a person too: the prompt shows, its composer
		// goes, no turn starts, ever). It has finished starting once its state database is
		// there: only then does the person (or intentq) type.
		eventually(t, "Codex's state database", 30*time.Second, func() bool {
			dbs, _ := filepath.Glob(filepath.Join(codexHome, "state_*.sqlite"))
			for _, path := range dbs {
				db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
				if err != nil {
					continue
				}
				var n int
				err = db.QueryRow("select count(*) from threads").Scan(&n)
				db.Close()
				if err == nil {
					return true
				}
			}
			return false
		}, capture)
	}
	if strings.Contains(pane, "Hooks need review") {
		t.Fatalf("Codex asks to review the hooks setup trusted:\n%s", pane)
	}
	if got := tmux("show-options", "-pqv", "-t", "=secretary:", "@agent_id"); !byHand && got != "secretary" || byHand && got != "" {
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

	submitTyped(t, env, capture, "start the long job", func() bool { return n.Load() >= 1 })
	for deadline := time.Now().Add(60 * time.Second); n.Load() < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not go on; pane:\n%s", capture())
		}
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
	run, _, _ := codexIdleStart(t, "321:codexidle", "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	return run
}

// codexIdleStart starts a worker (its settings extra) and the real Codex, idle, whose model
// answers "Noted."; it returns the run, the stand-in and the worker's log lines.
func codexIdleStart(t testing.TB, token string, extra ...string) (*agentRun, *fakeopenai.Server, <-chan map[string]any) {
	t.Helper()
	bin := binaries(t)
	bot := fakebot.New(token)
	t.Cleanup(bot.Close)
	api := fakeopenai.New(func(fakeopenai.Request) fakeopenai.Turn { return fakeopenai.Turn{Text: "Noted."} })
	t.Cleanup(api.Close)
	env, home := codexEnv(t, bot, token, extra...)
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := codexAgent(t, env, home, api, "never", "danger-full-access")
	reqs, conv := codexRequests(api)
	return &agentRun{cli: "codex", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: &turnEnd{}}, api, lines
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
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
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
	paths := codexMessagePaths(run.api, n)
	byPath := map[string]int{}
	for i, p := range paths {
		for _, one := range p {
			byPath[one.how]++
		}
		// By the message's own words, as the person would look: a Stop hook's list of owed
		// answers quotes a message without intentq's header (5 of 20 were listed there
		// before the session typed them).
		if len(p) != 1 {
			t.Errorf("message %d reached the model %d times: %v", 101+i, len(p), p)
		}
	}
	t.Logf("Telegram update -> model request while Codex works: p50 %s, max %s; %d handed over as context after a tool call, %d by the Stop hook, %d typed",
		res.p50(), res.max(), byPath[pathToolCall], byPath[pathStop], byPath[pathTyped])
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
	} else if b, _ := os.ReadFile(threads[0]); !strings.HasPrefix(string(b), "secretary\n") {
		t.Errorf("thread %s bound to %q", filepath.Base(threads[0]), b)
	}
}

// How a message reached the model: as context after a tool call (a developer message), in a
// Stop hook's block (a user message inside <hook_prompt>), or typed (any other user message).
const (
	pathToolCall = "hook after a tool call"
	pathStop     = "Stop hook's block"
	pathTyped    = "typed"
)

// messagePath is one time a message's words reached the model: how, and the request's time.
type messagePath struct {
	how string
	at  time.Time
}

func (p messagePath) String() string { return p.how + " at " + p.at.Format("15:04:05.000") }

// codexMessagePaths finds, for the working-agent scenario's messages 1..n ("message number i
// while you work"), every time its words were added to the conversation, in request order.
func codexMessagePaths(api *fakeopenai.Server, n int) [][]messagePath {
	paths := make([][]messagePath, n)
	for _, r := range api.Requests() {
		for _, role := range []string{"developer", "user"} {
			for _, item := range r.Added(role) {
				how := pathToolCall
				if role == "user" {
					how = map[bool]string{true: pathStop, false: pathTyped}[strings.Contains(item, "<hook_prompt")]
				}
				for i := 1; i <= n; i++ {
					for range strings.Count(item, fmt.Sprintf("message number %d while you work", i)) {
						paths[i-1] = append(paths[i-1], messagePath{how: how, at: r.At})
					}
				}
			}
		}
	}
	return paths
}

// Issue 25: the real Codex, idle: messages are typed into its empty input line, one at a time
// once the previous turn has ended, and each reaches the model exactly once (a new thread's
// SessionStart, which Codex runs at its first prompt, does not present the message being typed
// a second time).
func TestCodexIdleMessagesTypedOnce(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
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
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
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
	// The phone is not asked for long (issue 36): after 3 s the hook steps aside and Codex's
	// own prompt opens, which only the person at the terminal answers.
	env, home := codexEnv(t, bot, "321:approve", "INTENTQ_NTFY_URL="+ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone",
		"INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s", "INTENTQ_DELIVERY_WAITS_FOR_YOU_AFTER=3s",
		"INTENTQ_HOOKS_CODEX_APPROVAL_WAIT=3s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := codexAgent(t, env, home, api, "on-request", "read-only")

	tmuxKeys(t, env, "-l", "please run the tests")
	// Enter once the text shows (one Enter only: a second one could answer the approval prompt).
	waitPane(t, capture, "the typed prompt", 30*time.Second, func(p string) bool { return strings.Contains(p, "please run the tests") })
	time.Sleep(300 * time.Millisecond) // the paste's end, before the Enter that submits it
	tmuxKeys(t, env, "Enter")
	waitPane(t, capture, "the approval prompt", 60*time.Second, func(p string) bool {
		return strings.Contains(p, "Would you like to run the following command?") && strings.Contains(p, "Yes, proceed (y)")
	})
	prompt := watchPane(t, capture, "You approved", "Ran touch")
	// The card said the phone was asked, and now says the terminal asks.
	eventually(t, "the card saying the terminal asks", 30*time.Second, func() bool {
		for _, e := range bot.Edits() {
			if strings.Contains(e.Text, "answer at the terminal") && !e.Buttons {
				return true
			}
		}
		return false
	}, capture)
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

// Issue 36 with the real Codex 0.169.0: its PermissionRequest hook runs before the approval
// prompt and holds it ("Working ... · Running hook"; the terminal cannot answer meanwhile),
// so the hook waits for the phone at most hooks.codex_approval_wait. A card comes at once; Allow
// from the phone runs the command and no prompt ever opens; Deny refuses the next one and the
// model is told. Nothing is typed into the pane.
func TestCodexApprovalsFromThePhone(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	bin := binaries(t)
	bot := fakebot.New("321:codexok")
	t.Cleanup(bot.Close)
	dir := t.TempDir()
	marker := func(n int) string { return filepath.Join(dir, fmt.Sprintf("ran-%d", n)) }
	api := fakeopenai.New(func(r fakeopenai.Request) fakeopenai.Turn {
		if r.AfterCall() {
			return fakeopenai.Turn{Text: "Done."}
		}
		for n := 1; n <= 2; n++ {
			if slices.ContainsFunc(r.Added("user"), func(s string) bool { return strings.Contains(s, fmt.Sprintf("please do step %d", n)) }) {
				return fakeopenai.Turn{Call: "exec_command", Arguments: map[string]any{"cmd": "touch " + marker(n),
					"sandbox_permissions": "require_escalated", "justification": fmt.Sprintf("step %d", n)}}
			}
		}
		return fakeopenai.Turn{Text: "OK."}
	})
	t.Cleanup(api.Close)
	env, home := codexEnv(t, bot, "321:codexok", "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	capture := codexAgent(t, env, home, api, "on-request", "read-only")
	prompt := watchPane(t, capture, "Would you like to run the following command?")
	card := func(n int) fakebot.SentMessage {
		t.Helper()
		tmuxKeys(t, env, "-l", fmt.Sprintf("please do step %d", n))
		waitPane(t, capture, "the typed prompt", 30*time.Second, func(p string) bool { return strings.Contains(p, fmt.Sprintf("please do step %d", n)) })
		time.Sleep(300 * time.Millisecond) // the paste's end, before the Enter that submits it
		tmuxKeys(t, env, "Enter")
		var c fakebot.SentMessage
		eventually(t, fmt.Sprintf("the card of step %d", n), 60*time.Second, func() bool {
			for _, m := range bot.Sent() {
				if strings.Contains(m.Text, marker(n)) && m.Params.Get("reply_markup") != "" {
					c = m
					return true
				}
			}
			return false
		}, capture)
		return c
	}
	answer := func(id string) string { t.Helper(); return pressAnswer(t, bot, id, capture) }

	c := card(1)
	if b := bot.Buttons(42, c.MessageID); b["Allow for this session"] != "" || b["Allow once"] == "" || b["Deny"] == "" {
		t.Errorf("Codex's card offers %v (Codex takes allow or deny only)", b)
	}
	waitPane(t, capture, "Codex showing the hook at work", 30*time.Second, func(p string) bool { return strings.Contains(p, "Running hook") })
	if a := answer(bot.Press(42, 42, c.MessageID, "Allow once")); !strings.Contains(a, "Allowed once") {
		t.Errorf("Allow was answered %q", a)
	}
	eventually(t, "step 1 to run", 60*time.Second, func() bool { _, err := os.Stat(marker(1)); return err == nil }, capture)

	c = card(2)
	if a := answer(bot.Press(42, 42, c.MessageID, "Deny")); !strings.Contains(a, "Denied") {
		t.Errorf("Deny was answered %q", a)
	}
	eventually(t, "the model told of the denial", 60*time.Second, func() bool { return sawOpenAI(api, "denied this from their phone") }, capture)
	if _, err := os.Stat(marker(2)); err == nil {
		t.Error("step 2 ran after Deny")
	}
	if p := prompt(); p != "" {
		t.Errorf("Codex's own prompt opened although the phone answered:\n%s", p)
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
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
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
	configFile := writeConfig(t, env, home, "telegram:\n  allowed_chat_ids: [42]\n"+
		"sessions:\n  secretary: {tmux_target: \"secretary:0\", cli: codex, default: true}\n")
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
	waitIntentClosed(t, env, "42/7", 30*time.Second)
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

// codexInput is the input line of an idle Codex pane: the last of the bottom 4 lines that begins
// with "›" (4th from the bottom with the hints line under it; 3rd while a draft hides the
// hints), trailing blanks dropped.
func codexInput(pane string) string {
	lines := strings.Split(strings.TrimRight(pane, "\n"), "\n")
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-agentcli.Builtin()["codex"].Lines(); i-- {
		if strings.HasPrefix(lines[i], "›") {
			return strings.TrimRight(lines[i], " ")
		}
	}
	return ""
}

// codexIdle reports whether a Codex pane is idle with an empty input line.
func codexIdle(p string) bool {
	in := codexInput(p)
	return !strings.Contains(p, "esc to interrupt") && strings.HasPrefix(in, "› ") &&
		slices.Contains(agentcli.Builtin()["codex"].InputPlaceholders, strings.TrimPrefix(in, "› "))
}

// codexTurnOver reports whether a Codex pane shows a turn's end: "Worked for ..." after the last
// output item (a line that begins with "•"), the input line idle. Between the rounds of a turn a Stop hook keeps going (a
// block: the model answers again) the pane looks idle too, but without that line.
func codexTurnOver(p string) bool {
	at := strings.LastIndex(p, "Worked for")
	return at >= 0 && !strings.Contains(p[at:], "\n•") && codexIdle(p)
}

// watchInput captures the pane every 150 ms until stop is called; stop returns the first
// capture whose input line was not want or that showed bad ("" when none did).
func watchInput(t testing.TB, capture func() string, want, bad string) (stop func() string) {
	return watchInputOf(t, capture, codexInput, want, bad)
}

// watchInputOf is watchInput for the input line that input reads from the pane.
func watchInputOf(t testing.TB, capture func() string, input func(string) string, want, bad string) (stop func() string) {
	done, result := make(chan struct{}), make(chan string, 1)
	go func() {
		seen := ""
		for {
			select {
			case <-done:
				result <- seen
				return
			case <-time.After(150 * time.Millisecond):
			}
			if p := capture(); seen == "" && (input(p) != want || bad != "" && strings.Contains(p, bad)) {
				seen = p
			}
		}
	}()
	var once sync.Once
	var seen string
	stop = func() string {
		once.Do(func() { close(done); seen = <-result })
		return seen
	}
	t.Cleanup(func() { stop() })
	return stop
}

// codexSessionView is the secretary session as `starter session show --json` shows it.
type codexSessionView struct {
	Queued    []string   `json:"queued"`
	BusySince *time.Time `json:"busy_since"`
	Delivered int        `json:"delivered"`
	Agent     *struct {
		State  string `json:"state"`
		Event  string `json:"event"`
		Detail string `json:"detail"`
	} `json:"agent"`
}

func sessionShow(t testing.TB, env []string) codexSessionView {
	t.Helper()
	var v codexSessionView
	out := starterRun(t, env, 0, "session", "show", "secretary", "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("session show: %v\n%s", err, out)
	}
	return v
}

// waitHeldBack waits until the session has held a delivery back (its pane not typable) for at
// least d: several looks at the pane (delivery.busy_wait 1s) found it so.
func waitHeldBack(t testing.TB, env []string, capture func() string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		v := sessionShow(t, env)
		if v.BusySince != nil && len(v.Queued) > 0 && time.Since(*v.BusySince) >= d {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session does not hold the delivery back: %+v, agent %+v; pane:\n%s", v, v.Agent, capture())
		}
	}
}

// Issue 25: a person's draft in the real Codex's input line is never touched. A Telegram message
// that arrives while the draft is there waits (the session holds it back, the person is told),
// nothing is typed, the draft stays exactly as typed; once the person submits the draft, the
// message reaches the model exactly once (beside the prompt, through a hook), and the draft
// intact. A second draft that the person clears (C-u): the message is then typed into the empty
// input line, once, and the cleared draft never reaches the model.
func TestCodexDraftIsNeverTouched(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Codex")
	}
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	run, api, _ := codexIdleStart(t, "321:codexdraft", "INTENTQ_NTFY_URL="+ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone",
		"INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s", "INTENTQ_DELIVERY_WAITS_FOR_YOU_AFTER=3s")
	keys := func(args ...string) { t.Helper(); tmuxKeys(t, run.env, args...) }
	sawID := func(id string) bool { return sawOpenAI(api, "msg_id="+id+" chat=42") }

	// 1. A draft, then the person's Enter.
	draft := "my half-typed question"
	keys("-l", draft)
	waitPane(t, run.capture, "the draft", 10*time.Second, func(p string) bool { return codexInput(p) == "› "+draft })
	stop := watchInput(t, run.capture, "› "+draft, "msg_id=7")
	bot := run.bot
	bot.AddMessage(42, 42, 7, "hello while you type")
	waitHeldBack(t, run.env, run.capture, 3*time.Second)
	for deadline := time.Now().Add(60 * time.Second); !slices.ContainsFunc(ntfy.Messages(), func(m fakentfy.Message) bool { return strings.Contains(m.Title, "waits for you") }); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the person was not told; pane:\n%s", run.capture())
		}
	}
	if p := stop(); p != "" {
		t.Fatalf("the draft was touched or the message typed into it:\n%s", p)
	}
	if p := run.capture(); codexInput(p) != "› "+draft || sawID("7") {
		t.Fatalf("the draft was touched or the message delivered while it was there:\n%s", p)
	}
	keys("Enter")
	waitPane(t, run.capture, "the message delivered after the draft", 60*time.Second, func(string) bool { return sawID("7") })
	waitPane(t, run.capture, "the turn's end", 60*time.Second, codexTurnOver)
	intact := false
	for _, r := range api.Requests() {
		for _, u := range r.Added("user") {
			if strings.Contains(u, draft) {
				intact = intact || strings.TrimSpace(u) == draft
				if strings.Contains(u, "msg_id=") {
					t.Errorf("the draft reached the model mixed with the message: %q", u)
				}
			}
		}
		if strings.Contains(r.SinceAssistant(), "msg_id=7 chat=42") {
			t.Logf("after the draft the message reached the model %s", map[bool]string{true: "typed", false: "through a hook"}[codexTyped(r, newHeader)])
		}
	}
	if !intact {
		t.Error("the person's draft never reached the model as typed")
	}

	// 2. A draft the person clears: the message is typed into the empty line. The draft begins
	// once the turn is over (a Stop hook of the turn that finds a message waiting hands it over,
	// draft or not; the pane looks idle between a Stop block's rounds) and the session has had
	// its Stop.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if v := sessionShow(t, run.env); v.Agent != nil && v.Agent.Event == "stop" && v.Agent.State == "idle" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the session has not seen the turn's Stop: %+v", v.Agent)
		}
	}
	draft2 := "another thought I drop"
	keys("-l", draft2)
	waitPane(t, run.capture, "the second draft", 10*time.Second, func(p string) bool { return codexInput(p) == "› "+draft2 })
	stop = watchInput(t, run.capture, "› "+draft2, "msg_id=8")
	bot.AddMessage(42, 42, 8, "hello while you type again")
	waitHeldBack(t, run.env, run.capture, 3*time.Second)
	if p := stop(); p != "" {
		t.Fatalf("the second draft was touched or the message typed into it:\n%s", p)
	}
	if sawID("8") {
		t.Fatal("the message was delivered while the second draft was there")
	}
	keys("C-u")
	waitPane(t, run.capture, "the message typed after the draft was cleared", 60*time.Second, func(string) bool { return sawID("8") })
	waitPane(t, run.capture, "the turn's end", 60*time.Second, codexTurnOver)
	for _, r := range api.Requests() {
		if strings.Contains(r.SinceAssistant(), draft2) {
			t.Errorf("the cleared draft reached the model: %.300q", r.SinceAssistant())
		}
		if strings.Contains(r.SinceAssistant(), "msg_id=8 chat=42") && !codexTyped(r, newHeader) {
			t.Errorf("message 8 was not typed into the empty line: %.300q", r.SinceAssistant())
		}
	}
	all := run.conversation()
	for _, id := range []string{"7", "8"} {
		if c := strings.Count(all, "msg_id="+id+" chat=42"); c != 1 {
			t.Errorf("message %s appears %d times in the conversation", id, c)
		}
	}
	historyOnce(t, run.env, 7, 2)
}

// watchAgent checks, every 150 ms until the test ends, that the real agent CLI of kind stays the
// pane's foreground program (a shell there means it quit) and that none of its dialogs or menus
// opens (Codex's transcript browser that Escape twice opens, Gemini's rewind menu, an approval
// prompt); it returns the first thing it saw wrong, and how many looks it took.
func watchAgent(t testing.TB, kind string, env []string, capture func() string) func() (wrong string, looks int) {
	cli := agentcli.Builtin()[kind]
	var mu sync.Mutex
	wrong, looks := "", 0
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			c := exec.Command("tmux", "display-message", "-p", "-t", "=secretary:", "#{pane_current_command}")
			c.Env = env
			out, err := c.Output()
			front := strings.TrimSpace(string(out))
			p := capture()
			mu.Lock()
			looks++
			if wrong == "" && (err != nil || !slices.Contains(cli.Processes(), front)) {
				wrong = fmt.Sprintf("the pane's foreground program is %q (%v), not %s; pane:\n%s", front, err, kind, p)
			}
			for _, d := range cli.DialogPatterns {
				if wrong == "" && strings.Contains(p, d) {
					wrong = fmt.Sprintf("%q opened:\n%s", d, p)
				}
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() (string, int) {
		mu.Lock()
		defer mu.Unlock()
		return wrong, looks
	}
}

// codexThreadRE finds the thread a Codex request belongs to (its prompt cache key is the thread
// id).
var codexThreadRE = regexp.MustCompile(`"prompt_cache_key"\s*:\s*"([^"]+)"`)

func codexThread(r fakeopenai.Request) string {
	if m := codexThreadRE.FindStringSubmatch(r.Raw); m != nil {
		return m[1]
	}
	return ""
}

// Issue 25: escalation against the real Codex never quits it nor opens a menu: a message left
// unanswered (one the agent received by itself: receivedByItself; one intentq typed with the
// agent's receipt only gets nudges, issue 35) is reminded, the reminders escalate (phase 2 presses C-u, never Escape or C-c: C-c
// on an empty input quits Codex, Escape twice opens its transcript browser), and the reset
// types /new, at most once per cooldown. Codex stays the pane's foreground program throughout.
// /new fires no hook; the next prompt's SessionStart (a new thread) confirms the reset, and
// presents the pending intent to the model exactly once.
func TestCodexEscalationNeverQuitsAndNewIsConfirmedBySessionStart(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Codex")
	}
	run, api, lines := codexIdleStart(t, "321:codexesc", append(escalationSettings(true), "INTENTQ_DELIVERY_BUSY_WAIT=1s")...)
	var logMu sync.Mutex
	var logged []map[string]any
	go func() {
		for e := range lines {
			logMu.Lock()
			logged = append(logged, e)
			logMu.Unlock()
		}
	}()
	logs := func(msg string) (n int) {
		logMu.Lock()
		defer logMu.Unlock()
		for _, e := range logged {
			if e["msg"] == msg {
				n++
			}
		}
		return n
	}
	check := watchAgent(t, "codex", run.env, run.capture)
	const pending = "pending message(s) for session secretary"
	const reminder = pendingHeader + "msg_id=7 chat=42"

	receivedByItself(t, run.env, 7, "are you there?")
	first := ""
	// The reset: a new thread whose first request carries the pending intent and the reminder.
	var reset fakeopenai.Request
	for deadline := time.Now().Add(120 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		reqs := api.Requests()
		if first == "" && len(reqs) > 0 {
			first = codexThread(reqs[0])
		}
		i := slices.IndexFunc(reqs, func(r fakeopenai.Request) bool { return codexThread(r) != first })
		if first != "" && i >= 0 && strings.Contains(reqs[i].SinceAssistant(), reminder) {
			reset = reqs[i]
			break
		}
		if wrong, _ := check(); wrong != "" {
			t.Fatal(wrong)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new thread presented the pending intent (first thread %q, %d requests); pane:\n%s", first, len(reqs), run.capture())
		}
	}
	if first == "" {
		t.Fatal("Codex's requests carry no thread (prompt_cache_key)")
	}
	// Phase 2 came first: a reminder in the first thread, after its keys.
	if !slices.ContainsFunc(api.Requests(), func(r fakeopenai.Request) bool {
		return codexThread(r) == first && strings.Contains(r.SinceAssistant(), reminder)
	}) {
		t.Error("no reminder reached the first thread before the reset")
	}
	added := reset.SinceAssistant()
	if c := strings.Count(added, "intent/42/7"); c != 1 || !strings.Contains(added, pending) {
		t.Errorf("after /new the pending intent is presented %d times:\n%s", c, added)
	}
	if c := strings.Count(added, "msg_id=7 chat=42"); c != 1 {
		t.Errorf("after /new the reminder is typed %d times:\n%s", c, added)
	}
	t.Logf("the reset reached the model %s after the message", reset.At.Sub(api.Requests()[0].At).Round(time.Millisecond))
	// Two more reminders after the reset: interrupts (C-u) again, the cooldown allows no second
	// reset.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		after := 0
		for _, r := range api.Requests() {
			if r.At.After(reset.At) && strings.Contains(r.SinceAssistant(), reminder) {
				after++
			}
		}
		if after >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d reminders after the reset; pane:\n%s", after, run.capture())
		}
	}
	waitPane(t, run.capture, "the last reminder's turn end", 30*time.Second, codexTurnOver)
	if wrong, looks := check(); wrong != "" {
		t.Fatal(wrong)
	} else {
		t.Logf("Codex was in front, no menu open, at each of %d looks", looks)
	}
	threads := map[string]bool{}
	for _, r := range api.Requests() {
		threads[codexThread(r)] = true
		if s := r.SinceAssistant(); strings.Contains(s, "C-u") || strings.Contains(s, "\x15") || strings.Contains(s, "/new") {
			t.Errorf("a key or the reset command reached the model as text: %.200q", s)
		}
	}
	if len(threads) != 2 {
		t.Errorf("%d threads, want the first and the one /new started (one reset per cooldown)", len(threads))
	}
	var shown struct {
		LastPhase int         `json:"last_phase"`
		Resets    []time.Time `json:"resets"`
	}
	if out := starterRun(t, run.env, 0, "show", "42/7", "--json"); json.Unmarshal([]byte(out), &shown) != nil || len(shown.Resets) != 1 || shown.LastPhase != 2 {
		t.Errorf("intent 42/7: %d resets, last phase %d, want 1 reset and the interrupt phase after it:\n%s", len(shown.Resets), shown.LastPhase, out)
	}
	// The new thread's hooks bound it to the agent (its SessionStart ran in the TUI), and the
	// session took that SessionStart as the reset's confirmation.
	bound, _ := filepath.Glob(filepath.Join(run.home, ".intentq", "codex-threads", "*"))
	if len(bound) != 2 {
		t.Errorf("threads bound: %q, want the two", bound)
	}
	if n := logs("session reset"); n != 1 {
		t.Errorf("%d resets logged", n)
	}
	if n := logs("reset not confirmed by the agent's SessionStart hook"); n != 0 {
		t.Errorf("the reset was not confirmed by the next prompt's SessionStart (%d warnings)", n)
	}
	if n := logs("reset confirmed by the agent's SessionStart hook"); n != 1 {
		t.Errorf("%d reset confirmations logged, want 1", n)
	}
}
