package main_test

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

	"github.com/intentq/intentq/internal/agentcli"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakeopenai"
	"github.com/intentq/intentq/internal/testkit/peers"
	"github.com/intentq/intentq/workflows"
)

// Issue 37, the real Copilot CLI 1.0.102 through its own hooks, installed by `starter setup --cli
// copilot`, started by hand (copilot -p, offline against the Responses API stand-in) in the
// environment of the secretary's agent: three messages wait in the session (its pane shows a
// shell); Copilot's hooks hand them over as its run starts (its SessionStart hook, flat
// additionalContext, which Copilot gives the model as a message), each once, before the tool call
// the model makes; the session counts them delivered, and its agent's end (SessionEnd, "complete"
// for a -p run) is reported.
func TestCopilotHooksHandOverWaitingMessages(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	copilot, cache := peers.Copilot(t)
	bin, env, bot, _ := shellFirst(t, "37:copilot")
	for i := 1; i <= 3; i++ {
		bot.AddMessage(42, 42, i, fmt.Sprintf("for copilot %d", i))
	}
	eventually(t, "three messages waiting in the session", 60*time.Second, func() bool { return waiting(t, bin, env, 3) }, func() string {
		out, _ := run(t, filepath.Join(bin, "starter"), env, "", "session", "show", "secretary")
		return out
	})
	home := envValue(t, env, "HOME")
	copilotHome := filepath.Join(home, ".copilot")
	out := starterRun(t, append(env, "COPILOT_HOME="+copilotHome), 0, "setup", "--cli", "copilot")
	if !strings.Contains(out, "hooks") {
		t.Errorf("setup --cli copilot said:\n%s", out)
	}
	api := fakeopenai.New(func(r fakeopenai.Request) fakeopenai.Turn {
		if !r.AfterCall() {
			return fakeopenai.Turn{Call: "bash", Arguments: map[string]any{"command": "echo tool-ran", "description": "run the job", "mode": "sync", "initial_wait": 10}}
		}
		return fakeopenai.Turn{Text: "Got them."}
	})
	t.Cleanup(api.Close)
	work := t.TempDir()
	cmd := exec.Command(copilot, "-p", "start the job", "--allow-all-tools", "--no-auto-update")
	cmd.Dir = work
	cmd.Env = append(append([]string{}, env...), "COPILOT_HOME="+copilotHome, "XDG_CACHE_HOME="+cache, "COPILOT_OFFLINE=true",
		"COPILOT_PROVIDER_BASE_URL="+api.URL(), "COPILOT_PROVIDER_WIRE_API=responses", "COPILOT_PROVIDER_API_KEY=sk-test", "COPILOT_MODEL=gpt-4.1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copilot -p: %v\n%s", err, b)
	}
	for i := 1; i <= 3; i++ {
		n := 0
		for _, r := range api.Requests() {
			n += strings.Count(r.SinceAssistant(), fmt.Sprintf("【新着メッセージ】msg_id=%d chat=42", i))
		}
		if n != 1 {
			t.Errorf("message %d reached the model %d times", i, n)
		}
	}
	var first int
	for i, r := range api.Requests() {
		if strings.Contains(r.SinceAssistant(), "msg_id=1 chat=42") {
			first = i
			break
		}
	}
	if r := api.Requests(); first != 0 || len(r) < 2 || !strings.Contains(r[1].SinceAssistant(), "tool-ran") {
		t.Errorf("the messages did not come with the run's first request (%d), before the tool's result", first)
	}
	eventually(t, "the session counting them delivered, the run's end reported", 30*time.Second, func() bool {
		out, _ := run(t, filepath.Join(bin, "starter"), env, "", "session", "show", "secretary")
		return strings.Contains(out, "waiting 0,") && strings.Contains(out, "delivered 3,") && strings.Contains(out, "last hook session-end")
	}, func() string {
		out, _ := run(t, filepath.Join(bin, "starter"), env, "", "session", "show", "secretary")
		b, _ := os.ReadFile(filepath.Join(copilotHome, "hooks", "intentq.json"))
		return out + "\n" + string(b)
	})
}

// copilotTUI starts a worker whose secretary session is Copilot CLI, and the real Copilot CLI
// 1.0.102 in the secretary's tmux pane (started by hand in the agent's environment, offline
// against api, the folder trusted, intentq's hooks from setup --cli copilot); it returns the
// environment, the worker's log lines and a capture of the pane once Copilot's input line shows.
func copilotTUI(t testing.TB, bin string, api *fakeopenai.Server, token string, bot *fakebot.Server, flags ...string) (env []string, lines <-chan map[string]any, capture func() string) {
	t.Helper()
	return startCopilot(t, bin, api, token, bot, false, nil, flags...)
}

// startCopilot is copilotTUI with the worker's settings extra; byHand starts Copilot as a person
// would, with no intentq environment (no INTENTQ_AGENT_ID).
func startCopilot(t testing.TB, bin string, api *fakeopenai.Server, token string, bot *fakebot.Server, byHand bool, extra []string, flags ...string) (env []string, lines <-chan map[string]any, capture func() string) {
	t.Helper()
	copilot, cache := peers.Copilot(t)
	peers.Tmux(t)
	agent := "INTENTQ_AGENT_ID=secretary"
	if byHand {
		agent = "INTENTQ_AGENT_ID="
	}
	env, home, _ := ingestEnv(t, append([]string{agent, "INTENTQ_REMINDERS_FIRST_AFTER=1h", "INTENTQ_DELIVERY_BUSY_WAIT=1s",
		"INTENTQ_TELEGRAM_TOKEN=" + token, "INTENTQ_TELEGRAM_API_ENDPOINT=" + bot.Endpoint()}, extra...)...)
	env = append(env, "INTENTQ_CONFIG="+writeConfig(t, env, home, "telegram:\n  allowed_chat_ids: [42]\n  allowed_user_ids: [42]\n"+
		"sessions:\n  secretary: {tmux_target: \"secretary:0\", cli: copilot, chats: [42], default: true}\n"))
	_, lines = startWorker(t, bin, env)
	waitFor(t, lines, "ready", 90*time.Second)
	copilotHome := filepath.Join(home, ".copilot")
	starterRun(t, append(env, "COPILOT_HOME="+copilotHome), 0, "setup", "--cli", "copilot")
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	trusted, _ := json.Marshal(map[string]any{"trustedFolders": []string{work}})
	if err := os.WriteFile(filepath.Join(copilotHome, "config.json"), trusted, 0o600); err != nil {
		t.Fatal(err)
	}
	vars := append(append([]string{}, env...), "COPILOT_HOME="+copilotHome, "XDG_CACHE_HOME="+cache, "COPILOT_OFFLINE=true",
		"COPILOT_PROVIDER_BASE_URL="+api.URL(), "COPILOT_PROVIDER_WIRE_API=responses", "COPILOT_PROVIDER_API_KEY=sk-test",
		"COPILOT_MODEL=gpt-4.1", "TERM=xterm-256color")
	args := append(append([]string{"new-session", "-d", "-s", "secretary", "-x", "200", "-y", "50", "-c", work, "--", "env"}, vars...), copilot, "--no-auto-update")
	args = append(args, flags...)
	tmux := exec.Command("tmux", args...)
	tmux.Env = env
	if out, err := tmux.CombinedOutput(); err != nil {
		t.Fatalf("start copilot in tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		// Copilot (node, and the native binary it starts) writes into HOME as it exits: every
		// process of the pane ends before the temporary HOME is removed.
		pidCmd := exec.Command("tmux", "display-message", "-p", "-t", "=secretary:", "#{pane_pid}")
		pidCmd.Env = env
		out, _ := pidCmd.Output()
		pids := descendants(strings.TrimSpace(string(out)))
		k := exec.Command("tmux", "kill-server")
		k.Env = env
		_ = k.Run()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			alive := 0
			for _, pid := range pids {
				if syscall.Kill(pid, 0) == nil {
					alive++
					if time.Now().After(deadline.Add(-10 * time.Second)) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			if alive == 0 || time.Now().After(deadline) {
				return
			}
		}
	})
	capture = func() string {
		c := exec.Command("tmux", "capture-pane", "-p", "-t", "=secretary:")
		c.Env = env
		out, _ := c.CombinedOutput()
		return strings.ReplaceAll(string(out), "\u00a0", " ")
	}
	waitPane(t, capture, "Copilot's input line", 60*time.Second, func(p string) bool { return strings.Contains(p, "❯") && !strings.Contains(p, "trust") })
	return env, lines, capture
}

// Issue 37: a message to the idle real Copilot CLI, in its TUI, is typed once and reaches the
// model once, confirmed by its UserPromptSubmit hook's receipt: no "no receipt" warning, unless
// Copilot dropped the Enter (a loaded machine, Copilot still starting) and the session found the
// text on the input line and typed it again.
func TestCopilotIdleMessageTypedWithItsReceipt(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	bin := binaries(t)
	bot := fakebot.New("37:idle")
	t.Cleanup(bot.Close)
	api := fakeopenai.New(func(fakeopenai.Request) fakeopenai.Turn { return fakeopenai.Turn{Text: "Noted."} })
	t.Cleanup(api.Close)
	_, lines, capture := copilotTUI(t, bin, api, "37:idle", bot)
	receipts := watchReceipts(lines)
	bot.AddMessage(42, 42, 1, "hello copilot")
	seen := func() (n int) {
		for _, r := range api.Requests() {
			n += strings.Count(r.SinceAssistant(), "msg_id=1 chat=42")
		}
		return n
	}
	eventually(t, "the message at the model", 90*time.Second, func() bool { return seen() > 0 }, capture)
	time.Sleep(6 * time.Second) // past the receipt's wait: a warning, or a second typing, would show by now
	receipts.check(t, "Copilot")
	if n := seen(); n != 1 {
		t.Errorf("the message reached the model %d times", n)
	}
	// Its text once in the request that brought it: the SessionStart hook that Copilot runs with
	// this first prompt names it only (SessionVersion 7); before, it listed it in full too.
	for _, r := range api.Requests() {
		if added := r.SinceAssistant(); strings.Contains(added, "msg_id=1 chat=42") && strings.Count(added, "hello copilot") != 1 {
			t.Errorf("the first prompt's request shows the message %d times: %q", strings.Count(added, "hello copilot"), added)
		}
	}
}

// descendants are pid and every process below it (empty for an empty pid).
func descendants(pid string) []int {
	var out []int
	for queue := []string{pid}; len(queue) > 0; queue = queue[1:] {
		n, err := strconv.Atoi(queue[0])
		if err != nil {
			continue
		}
		out = append(out, n)
		children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", n, n))
		queue = append(queue, strings.Fields(string(children))...)
	}
	return out
}

// Issue 37: ten messages while the real Copilot CLI works through a turn of 25 shell calls (the
// person started it with --allow-all-tools): each reaches the model once, handed over by its
// PostToolUse hook with a tool's result, none typed while it works.
func TestCopilotMessagesReachAWorkingAgentAtToolCalls(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	res := workingAgentScenario(t, copilotLongTurnRun(t, 35), 20)
	if res.TypedAfter > 0 {
		t.Errorf("%d messages were typed after the turn: its agentStop hook should have handed them over", res.TypedAfter)
	}
	t.Logf("Telegram update -> model request while Copilot works: p50 %s, max %s", res.p50(), res.max())
}

// copilotLongTurnRun starts a worker and the real Copilot CLI (tools allowed) in a long turn of
// calls bash calls, a second each; its model answers everything else "Noted.".
func copilotLongTurnRun(t testing.TB, calls int32) *agentRun {
	t.Helper()
	bot := fakebot.New("37:busy")
	t.Cleanup(bot.Close)
	script, n, ended := copilotLongTurn(calls)
	api := fakeopenai.New(script)
	t.Cleanup(api.Close)
	env, lines, capture := copilotTUI(t, binaries(t), api, "37:busy", bot, "--allow-all-tools")
	tmuxKeys(t, env, "-l", "start the long job")
	waitPane(t, capture, "the typed prompt", 30*time.Second, func(p string) bool { return strings.Contains(p, "start the long job") })
	time.Sleep(300 * time.Millisecond) // the paste's end, before the Enter that submits it
	tmuxKeys(t, env, "Enter")
	eventually(t, "the turn's second tool call", 60*time.Second, func() bool { return n.Load() >= 2 }, capture)
	return copilotRun(bot, api, env, lines, capture, ended)
}

// copilotRun is the agentRun of a Copilot CLI against api.
func copilotRun(bot *fakebot.Server, api *fakeopenai.Server, env []string, lines <-chan map[string]any, capture func() string, ended *turnEnd) *agentRun {
	reqs, conv := copilotRequests(api)
	return &agentRun{cli: "copilot", bot: bot, env: env, capture: capture, requests: reqs, conversation: conv, ended: ended, lines: lines,
		settle: func(t testing.TB) {
			eventually(t, "the turn's end", 120*time.Second, func() bool { return ended.at.Load() != 0 }, capture)
		}}
}

// copilotByHandRun starts a worker and the real Copilot CLI by hand (no intentq environment; tools
// allowed), idle, whose model plays the long job of 35 calls.
func copilotByHandRun(t testing.TB) (*agentRun, *atomic.Int32) {
	t.Helper()
	bot := fakebot.New("37:byhand")
	t.Cleanup(bot.Close)
	script, n, ended := copilotLongTurn(35)
	api := fakeopenai.New(script)
	t.Cleanup(api.Close)
	env, lines, capture := startCopilot(t, binaries(t), api, "37:byhand", bot, true, nil, "--allow-all-tools")
	return copilotRun(bot, api, env, lines, capture, ended), n
}

// copilotLongTurn plays a model that answers "start the long job" with a turn of calls bash
// calls, a second each, and everything else "Noted.".
func copilotLongTurn(calls int32) (fakeopenai.Script, *atomic.Int32, *turnEnd) {
	var n atomic.Int32
	ended := &turnEnd{}
	return func(r fakeopenai.Request) fakeopenai.Turn {
		started := slices.ContainsFunc(r.Added("user"), func(s string) bool { return strings.Contains(s, "start the long job") })
		if started || r.AfterCall() && n.Load() > 0 && n.Load() < calls {
			n.Add(1)
			return fakeopenai.Turn{Call: "bash", Arguments: map[string]any{"command": "sleep 1", "description": "wait a moment", "mode": "sync", "initial_wait": 10}}
		}
		if r.AfterCall() && n.Load() >= calls {
			ended.at.CompareAndSwap(0, time.Now().UnixNano())
		}
		return fakeopenai.Turn{Text: "Noted."}
	}, &n, ended
}

// copilotIdleRun starts a worker and the real Copilot CLI, idle, whose model answers "Noted.".
func copilotIdleRun(t testing.TB) *agentRun {
	t.Helper()
	bot := fakebot.New("37:idle")
	t.Cleanup(bot.Close)
	api := fakeopenai.New(func(fakeopenai.Request) fakeopenai.Turn { return fakeopenai.Turn{Text: "Noted."} })
	t.Cleanup(api.Close)
	env, lines, capture := copilotTUI(t, binaries(t), api, "37:idle", bot)
	reqs, conv := copilotRequests(api)
	return &agentRun{cli: "copilot", bot: bot, env: env, capture: capture, requests: reqs, conversation: conv, ended: &turnEnd{}, lines: lines}
}

// Issue 37: the real Copilot CLI answers a Telegram message with intentq's reply tool, through
// `starter mcp` as setup --cli copilot registered it in mcp-config.json: the person's chat gets
// the answer as a reply, and the intent closes.
func TestCopilotRepliesThroughMCP(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	bin := binaries(t)
	bot := fakebot.New("37:reply")
	t.Cleanup(bot.Close)
	var tools atomic.Value
	api := fakeopenai.New(func(r fakeopenai.Request) fakeopenai.Turn {
		var names []string
		for _, tl := range r.Tools {
			names = append(names, tl.Name)
		}
		tools.Store(strings.Join(names, " "))
		if !r.AfterCall() && sawIn(r, "msg_id=7 chat=42") {
			for _, name := range names {
				if strings.Contains(name, "intentq") && strings.HasSuffix(name, "reply") {
					return fakeopenai.Turn{Call: name, Arguments: map[string]any{"chat_id": "42", "reply_to": "7", "text": "Hello from Copilot"}}
				}
			}
		}
		return fakeopenai.Turn{Text: "Done."}
	})
	t.Cleanup(api.Close)
	env, _, capture := copilotTUI(t, bin, api, "37:reply", bot, "--allow-all-tools")
	bot.AddMessage(42, 42, 7, "hello there")
	eventually(t, "the answer in the chat", 90*time.Second, func() bool {
		for _, m := range bot.Sent() {
			if m.ReplyTo == 7 && m.Text == "Hello from Copilot" {
				return true
			}
		}
		return false
	}, func() string { s, _ := tools.Load().(string); return capture() + "\ntools offered: " + s })
	waitIntentClosed(t, env, "42/7", 30*time.Second)
}

// sawIn reports whether request r adds s to the conversation.
func sawIn(r fakeopenai.Request, s string) bool { return strings.Contains(r.SinceAssistant(), s) }

// Issue 37: the real Copilot CLI's approval prompt ("Do you want to run this command?", which a
// digit or Enter answers) is never answered by intentq: a message that arrives while it is open
// waits, nothing is typed, the command does not run; once the person declines it (Escape), the
// message reaches the model once.
func TestCopilotApprovalPromptIsNeverAnswered(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	bin := binaries(t)
	bot := fakebot.New("37:ask")
	t.Cleanup(bot.Close)
	marker := filepath.Join(t.TempDir(), "approved-by-intentq")
	api := fakeopenai.New(func(r fakeopenai.Request) fakeopenai.Turn {
		if !r.AfterCall() && slices.ContainsFunc(r.Added("user"), func(s string) bool { return strings.Contains(s, "please run the tests") }) {
			return fakeopenai.Turn{Call: "bash", Arguments: map[string]any{"command": "touch " + marker, "description": "run the tests", "mode": "sync", "initial_wait": 10}}
		}
		return fakeopenai.Turn{Text: "OK."}
	})
	t.Cleanup(api.Close)
	env, _, capture := copilotTUI(t, bin, api, "37:ask", bot)
	ran := watchPane(t, capture, "Ran touch")
	tmuxKeys(t, env, "-l", "please run the tests")
	waitPane(t, capture, "the typed prompt", 30*time.Second, func(p string) bool { return strings.Contains(p, "please run the tests") })
	time.Sleep(300 * time.Millisecond) // the paste's end, before the Enter that submits it
	tmuxKeys(t, env, "Enter")
	waitPane(t, capture, "the approval prompt", 60*time.Second, func(p string) bool { return strings.Contains(p, "Do you want to run this command?") })
	bot.AddMessage(42, 42, 2, "2 hello during the prompt") // a digit first: typed, it would answer the prompt
	time.Sleep(8 * time.Second)                            // several looks at the pane
	if p := capture(); !strings.Contains(p, "Do you want to run this command?") || sawOpenAI(api, "msg_id=2 chat=42") {
		t.Fatalf("the prompt was answered or the message typed into it:\n%s", p)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran: the prompt was approved")
	}
	tmuxKeys(t, env, "Escape") // the person declines
	eventually(t, "the message after the prompt", 60*time.Second, func() bool { return sawOpenAI(api, "msg_id=2 chat=42") }, capture)
	time.Sleep(2 * time.Second)
	n := 0
	for _, r := range api.Requests() {
		n += strings.Count(r.SinceAssistant(), "msg_id=2 chat=42")
	}
	if n != 1 {
		t.Errorf("the message reached the model %d times", n)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
	if p := ran(); p != "" {
		t.Errorf("the prompt was approved:\n%s", p)
	}
}

// copilotRequests reads fakeopenai's requests as Copilot CLI sends them: a prompt the person (or
// intentq) typed comes after the context Copilot puts before it in the same user message (a
// SessionStart hook's <system-reminder>, <current_datetime>).
func copilotRequests(api *fakeopenai.Server) (func() []modelReq, func() string) {
	return openaiRequests(api, copilotPrompt)
}

// copilotPrompt is a user message of Copilot CLI without the context it puts before the prompt
// and a hook's after it.
func copilotPrompt(s string) string {
	for {
		s = strings.TrimSpace(s)
		cut := false
		for _, tag := range []string{"system-reminder", "current_datetime"} {
			if strings.HasPrefix(s, "<"+tag+">") {
				if _, after, ok := strings.Cut(s, "</"+tag+">"); ok {
					s, cut = after, true
				}
			}
		}
		if !cut {
			// A UserPromptSubmit hook's context follows the prompt in the same message.
			s, _, _ = strings.Cut(s, "\n\n<system_reminder>")
			return strings.TrimSpace(s)
		}
	}
}

// Issue 37: escalation on the real Copilot CLI loses no text: a message it received by itself is
// reminded with the interrupt (C-u into an empty input line) and, opted in, one `/new` per
// cooldown; Copilot stays in front with no menu or dialog open, no key and no `/new` reaches the
// model as text; a draft typed meanwhile holds every reminder (and reset) back, is never cleared,
// and reaches the model as typed.
func TestCopilotEscalationLosesNoText(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	bot := newBot(t, "37:esc")
	api := fakeopenai.New(func(fakeopenai.Request) fakeopenai.Turn { return fakeopenai.Turn{Text: "Noted."} })
	t.Cleanup(api.Close)
	env, lines, capture := startCopilot(t, binaries(t), api, "37:esc", bot, false, escalationSettings(true))
	reqs, conv := copilotRequests(api)
	run := &agentRun{cli: "copilot", bot: bot, env: env, capture: capture, requests: reqs, conversation: conv, ended: &turnEnd{}, lines: lines}
	escalationKeepsText(t, "copilot", run, func() (out []string) {
		for _, r := range api.Requests() {
			for _, u := range r.Added("user") {
				out = append(out, copilotPrompt(u))
			}
		}
		return out
	}, copilotInput, func(t testing.TB) { copilotSettled(t, env, capture) }, 1)
}

// copilotInput is Copilot CLI's input line on the pane ("❯ <text>" near the bottom; "" when it
// is not shown).
func copilotInput(pane string) string {
	lines := strings.Split(strings.TrimRight(pane, "\n"), "\n")
	if len(lines) > 6 {
		lines = lines[len(lines)-6:]
	}
	line, _ := workflows.InputLine(strings.Join(lines, "\n"), agentcli.Builtin()["copilot"].InputPrompt)
	return line
}

// copilotSettled waits until Copilot's turn is over: the session knows it idle from its hooks and
// the pane shows none of its busy patterns.
func copilotSettled(t testing.TB, env []string, capture func() string) {
	t.Helper()
	busy := agentcli.Builtin()["copilot"].BusyPatterns
	eventually(t, "Copilot's turn to end", 60*time.Second, func() bool {
		v := sessionShow(t, env)
		p := capture()
		return v.Agent != nil && v.Agent.State == "idle" && !slices.ContainsFunc(busy, func(b string) bool { return strings.Contains(p, b) })
	}, capture)
}
