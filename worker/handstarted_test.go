package main_test

// Issue 37: an agent the person started by hand in the session's pane (no `starter run-agent`,
// so no INTENTQ_AGENT_ID and no @agent_id; Codex with its default shared daemon) is bound to its
// session by its own hook's receipt of the first message intentq types into it. Until then it
// is typed into when idle; from then on messages reach it during a turn through its hooks.

import (
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/fakeanthropic"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakegemini"
	"github.com/intentq/intentq/internal/testkit/fakeopenai"
)

// handStartedScenario runs on an idle agent started by hand whose model plays the long job
// (calls counts its tool calls): doctor says it is not bound; message 201 is typed into it once
// and binds it (doctor says by what); then n messages while it works through the long job reach
// the model through its hooks (workingAgentScenario), none typed while it works.
func handStartedScenario(t testing.TB, ar *agentRun, calls *atomic.Int32, n int) deliveryResult {
	t.Helper()
	doctor := func() string {
		out, _ := run(t, filepath.Join(binaries(t), "starter"), ar.env, "", "doctor")
		return out
	}
	if out := doctor(); !strings.Contains(out, "no agent is bound to it yet") {
		t.Errorf("%s: doctor before the first message:\n%s", ar.cli, out)
	}
	first := idleAgentScenario(t, ar, 1)
	if first.TypedAfter != 1 {
		t.Errorf("%s: the first message was typed %d times", ar.cli, first.TypedAfter)
	}
	eventually(t, "doctor to say how the agent was bound", 20*time.Second, func() bool {
		return strings.Contains(doctor(), "its agent was started by hand, bound by the receipt of a block typed into pane")
	}, doctor)
	ar.deliveredBefore = 1
	submitTyped(t, ar.env, ar.capture, "start the long job", func() bool { return calls.Load() >= 2 })
	res := workingAgentScenario(t, ar, n)
	if res.TypedAfter > 0 {
		t.Errorf("%s: %d messages were typed after the turn: its hooks did not hand them over", ar.cli, res.TypedAfter)
	}
	if c := strings.Count(ar.conversation(), "msg_id=201 chat=42"); c != 1 {
		t.Errorf("%s: the first message appears %d times in the conversation", ar.cli, c)
	}
	t.Logf("%s started by hand, after its first typed message bound it: Telegram update -> model request while it works: p50 %s, max %s",
		ar.cli, res.p50(), res.max())
	return res
}

func TestCodexStartedByHandIsServedThroughItsHooks(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Codex")
	}
	run, calls := codexByHandRun(t)
	handStartedScenario(t, run, calls, 20)
}

// codexByHandRun starts a worker and the real Codex by hand (`codex` in the session's pane, its
// default shared daemon), idle, whose model plays the long job of 25 calls.
func codexByHandRun(t testing.TB) (*agentRun, *atomic.Int32) {
	t.Helper()
	bot := newBot(t, "321:byhand")
	script, calls, ended := codexLongTurn(25)
	api := fakeopenai.New(script)
	t.Cleanup(api.Close)
	env, home := codexEnv(t, bot, "321:byhand", "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	lines := readyWorker(t, env)
	capture := startCodex(t, env, home, api, "never", "danger-full-access", true)
	reqs, conv := codexRequests(api)
	return &agentRun{cli: "codex", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: ended, lines: lines,
		settle: func(t testing.TB) {
			waitPane(t, capture, "the turn's end", 90*time.Second, func(p string) bool {
				return strings.Contains(p, "Worked for") && !strings.Contains(p, "esc to interrupt")
			})
		}}, calls
}

func TestClaudeCodeStartedByHandIsServedThroughItsHooks(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Claude Code")
	}
	run, calls := claudeByHandRun(t)
	handStartedScenario(t, run, calls, 20)
	// Its reply tool (`starter mcp`, started by Claude Code before the binding, with no session
	// in its environment) acts for the session its hooks bound it to. Asked once the long turn is
	// over (the model of this test answers only a prompt).
	eventually(t, "the long turn's end", 120*time.Second, func() bool {
		return run.ended.at.Load() != 0 && !strings.Contains(run.capture(), "esc to interrupt")
	}, run.capture)
	run.bot.AddMessage(42, 42, 301, "please answer me")
	eventually(t, "the answer in the chat", 90*time.Second, func() bool {
		return slices.ContainsFunc(run.bot.Sent(), func(m fakebot.SentMessage) bool { return m.ReplyTo == 301 && m.Text == "answered by hand" })
	}, func() string {
		return run.capture() + "\n" + starterRun(t, run.env, 0, "session", "show", "secretary") + "\n" + starterRun(t, run.env, 0, "show", "42/301")
	})
	// The answer goes out before the intent records itself closed: waited for.
	waitIntentClosed(t, run.env, "42/301", 30*time.Second)
}

// claudeByHandRun starts a worker and the real Claude Code by hand (as claudeAgent does: the
// session's tmux session, no intentq environment), idle, whose model plays the long job of 35
// calls. Its session is not the default one: a hook that names no agent serves no session.
func claudeByHandRun(t testing.TB) (*agentRun, *atomic.Int32) {
	t.Helper()
	bot := newBot(t, "321:byhand")
	long, calls, ended := longTurn(35)
	api := fakeanthropic.New(func(r fakeanthropic.Request) fakeanthropic.Turn {
		if added := r.SinceAssistant(); strings.Contains(added, "msg_id=301 chat=42") && !strings.Contains(added, "tool_result") && r.HasTool("mcp__intentq__reply") {
			return fakeanthropic.Turn{ToolName: "mcp__intentq__reply", ToolInput: map[string]any{"chat_id": "42", "reply_to": "301", "text": "answered by hand"}}
		}
		return long(r)
	})
	t.Cleanup(api.Close)
	env, home := claudeEnv(t, bot, "321:byhand", "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s",
		"INTENTQ_SESSIONS_SECRETARY_TMUX_TARGET=secretary:0", "INTENTQ_SESSIONS_SECRETARY_CLI=claude",
		"INTENTQ_SESSIONS_SECRETARY_DEFAULT=false", "INTENTQ_SESSIONS_SECRETARY_CHATS=42")
	lines := readyWorker(t, env)
	starterRun(t, env, 0, "setup")
	allowTools(t, home, "Bash")
	capture := claudeAgent(t, env, home, api)
	waitPane(t, capture, "Claude Code's input line", 60*time.Second, func(p string) bool { return strings.Contains(p, "❯") })
	reqs, conv := claudeRequests(api)
	return &agentRun{cli: "claude", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: ended, lines: lines}, calls
}

func TestCopilotStartedByHandIsServedThroughItsHooks(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	run, calls := copilotByHandRun(t)
	handStartedScenario(t, run, calls, 20)
}

func TestGeminiStartedByHandIsServedThroughItsHooks(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	run, calls := geminiByHandRun(t)
	handStartedScenario(t, run, calls, 20)
}

// geminiByHandRun starts a worker and the real Gemini CLI by hand (`gemini` in the session's
// pane, no intentq environment), idle, whose model plays the long job of 25 calls.
func geminiByHandRun(t testing.TB) (*agentRun, *atomic.Int32) {
	t.Helper()
	bot := newBot(t, "321:byhand")
	script, calls, ended := geminiLongTurn(25)
	api := fakegemini.New(script)
	t.Cleanup(api.Close)
	env, home := geminiEnv(t, bot, "321:byhand", api, "INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	lines := readyWorker(t, env)
	capture := startGeminiBy(t, env, home, true, true)
	reqs, conv := geminiRequests(api)
	run := &agentRun{cli: "gemini", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: ended, lines: lines}
	run.settle = func(t testing.TB) { geminiSettled(t, run, api) }
	return run, calls
}
