package main_test

// Issue 35 end to end, with a stand-in agent that uses intentq's hooks: what the person takes
// back never reaches the agent, and an agent that is gone is said plainly.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/fakeanthropic"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
)

// Issue 35: a message ignored with `starter ignore` while it waited in its session (a shell in
// the pane, no agent yet, as behind a dialog) never reaches the agent once one runs; the message
// after it does, once; the person's message shows it was let go (🕊 instead of 👀).
func TestIgnoredWhileWaitingNeverReachesTheAgent(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	bin, env, bot, pane := shellFirst(t, "35:cancel")

	reacted := func(msg int, emoji string) bool {
		for _, r := range bot.Reactions() {
			if r.ChatID == 42 && r.MessageID == msg && r.Emoji == emoji {
				return true
			}
		}
		return false
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		eventually(t, what, 60*time.Second, ok, func() string { return "" })
	}
	bot.AddMessage(42, 42, 1, "sent by mistake")
	until("message 1 recorded", func() bool { return reacted(1, "👀") })
	until("message 1 waiting in the session", func() bool { return waiting(t, bin, env, 1) })
	starterRun(t, env, 0, "ignore", "42/1")
	until("message 1 shown as let go", func() bool { return reacted(1, "🕊") })
	bot.AddMessage(42, 42, 2, "the real one")
	until("message 2 recorded", func() bool { return reacted(2, "👀") })

	agentComes(t, bin, env, pane)
	got := func() string { data, _ := os.ReadFile(pane); return string(data) }
	until("message 2 at the agent", func() bool { return strings.Contains(got(), "the real one") })
	time.Sleep(3 * time.Second) // anything typed after it would show by now
	if strings.Contains(got(), "sent by mistake") {
		t.Errorf("the ignored message reached the agent:\n%s", got())
	}
	if n := strings.Count(got(), "the real one"); n != 1 {
		t.Errorf("message 2 reached the agent %d times", n)
	}
}

// Issue 35: the agent exits and tmux closes its pane (as a `starter run-agent` pane does): the
// next message waits instead of failing, the person is told once, within seconds, which
// session has no agent and how to start it (no raw error), `starter sessions` says "no agent"
// and the doctor fails; once the agent runs again, the waiting message reaches it once and
// nothing is typed twice.
func TestAgentGoneIsToldOnceAndItsMessagesWait(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	bin := binaries(t)
	const token = "35:gone"
	bot := fakebot.New(token)
	t.Cleanup(bot.Close)
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	env, _, pane := standInSecretary(t, bin, token, bot)
	env = append(env, "INTENTQ_NTFY_URL="+ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 90*time.Second)
	got := func() string { data, _ := os.ReadFile(pane); return string(data) }
	until := func(what string, d time.Duration, ok func() bool) {
		t.Helper()
		eventually(t, what, d, ok, func() string {
			out, _ := run(t, filepath.Join(bin, "starter"), env, "", "session", "show", "secretary")
			return fmt.Sprintf("pane:\n%s\npushes: %+v\n%s", got(), ntfy.Messages(), out)
		})
	}
	told := func() (n int, last string) {
		for _, m := range ntfy.Messages() {
			if strings.Contains(m.Title, "secretary has no agent running") {
				n, last = n+1, m.Message
			}
		}
		return n, last
	}

	bot.AddMessage(42, 42, 1, "first, while it runs")
	until("message 1 at the agent, confirmed", 60*time.Second, func() bool {
		out, _ := run(t, filepath.Join(bin, "starter"), env, "", "session", "show", "secretary")
		return strings.Contains(got(), "first, while it runs") && strings.Contains(out, "delivered 1,")
	})

	kill := exec.Command("tmux", "kill-session", "-t", "secretary")
	kill.Env = env
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("tmux kill-session: %v %s", err, out)
	}
	gone := time.Now()
	bot.AddMessage(42, 42, 2, "second, while it is gone")
	until("the person told", 60*time.Second, func() bool { n, _ := told(); return n > 0 })
	t.Logf("told %s after the pane went", time.Since(gone).Round(time.Second))
	if _, msg := told(); !strings.Contains(msg, "pane secretary:0 is gone") || !strings.Contains(msg, "starter run-agent secretary") || strings.Contains(msg, "second, while") {
		t.Errorf("the push: %q", msg)
	}
	until("starter sessions to say no agent", 30*time.Second, func() bool {
		out, _ := run(t, filepath.Join(bin, "starter"), env, "", "sessions")
		return strings.Contains(out, "no agent")
	})
	if out, _ := run(t, filepath.Join(bin, "starter"), env, "", "doctor"); !strings.Contains(out, "the pane secretary:0 is gone") {
		t.Errorf("doctor:\n%s", out)
	}
	for _, m := range ntfy.Messages() {
		if strings.Contains(m.Title, "failed") || strings.Contains(m.Message, "rpc error") {
			t.Errorf("a failure pushed: %+v", m)
		}
	}

	// The agent comes back (run-agent would start it in a new pane).
	tmuxSession(t, env, "secretary", standInAgentCommand(t, pane, filepath.Join(bin, "starter")))
	until("message 2 at the agent", 90*time.Second, func() bool { return strings.Contains(got(), "second, while it is gone") })
	time.Sleep(3 * time.Second) // anything typed twice would show by now
	// Each delivery starts with its header (a Stop hook's list of owed answers quotes the text).
	for _, msg := range []string{"msg_id=1 chat=42", "msg_id=2 chat=42"} {
		if n := strings.Count(got(), "【新着メッセージ】"+msg); n != 1 {
			t.Errorf("%s reached the agent %d times:\n%s", msg, n, got())
		}
	}
	if n, _ := told(); n != 1 {
		t.Errorf("told %d times, want once", n)
	}
}

// Issue 35: a message the person edits while it waits in its session (a shell in the pane, no
// agent yet) reaches the agent once, as edited, never as first sent; an edit of a message the
// agent already has reaches it once as a correction that names the original, and the chat is
// told so.
func TestEditedWhileWaitingReachesTheAgentAsEdited(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	bin, env, bot, pane := shellFirst(t, "35:edit")
	got := func() string { data, _ := os.ReadFile(pane); return string(data) }
	show := func() string { return got() }

	bot.AddMessage(42, 42, 1, "meet at 3pm")
	eventually(t, "message 1 waiting in the session", 60*time.Second, func() bool { return waiting(t, bin, env, 1) }, show)
	edited := fakebot.TextMessage(42, 42, 1, "meet at 4pm")
	bot.AddUpdate(fakebot.EditedMessageUpdate(edited))
	eventually(t, "the edit taken", 60*time.Second, func() bool {
		out, _ := run(t, filepath.Join(bin, "starter"), env, "", "show", "42/1")
		return strings.Contains(out, "4pm")
	}, show)

	agentComes(t, bin, env, pane)
	eventually(t, "message 1 at the agent", 60*time.Second, func() bool { return strings.Contains(got(), "meet at 4pm") }, show)
	time.Sleep(3 * time.Second) // anything typed after it would show by now
	if strings.Contains(got(), "meet at 3pm") || strings.Count(got(), "【新着メッセージ】msg_id=1 chat=42") != 1 {
		t.Errorf("the agent got:\n%s", got())
	}

	// An edit after the agent had it: it reaches the agent once as a correction of message 1,
	// and the chat is told; the same edit read again changes nothing more.
	late := fakebot.EditedMessageUpdate(fakebot.Edited(fakebot.TextMessage(42, 42, 1, "meet at 3pm"), "meet at 5pm"))
	bot.AddUpdate(late)
	eventually(t, "the answer to the late edit", 30*time.Second, func() bool {
		for _, m := range bot.Sent() {
			if m.ReplyTo == 1 && strings.Contains(m.Text, "your edit goes to it as a correction") {
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("%+v", bot.Sent()) })
	bot.AddUpdate(late)
	eventually(t, "the correction at the agent", 60*time.Second, func() bool { return strings.Contains(got(), "meet at 5pm") }, show)
	time.Sleep(3 * time.Second) // a second correction would show by now
	if n := strings.Count(got(), "meet at 5pm"); n != 1 || !regexp.MustCompile(`msg_id=1\.edit\d+ chat=42 corrects=1 `).MatchString(got()) {
		t.Errorf("the correction reached the agent %d times, or without naming message 1:\n%s", n, got())
	}
}

// shellFirst starts a worker whose secretary session (Telegram chat 42, bot token) has a shell
// in its pane, not an agent yet: what the person sends waits in the session. It returns the
// binaries, the environment, the Bot API stand-in and the file the stand-in agent will write.
func shellFirst(t *testing.T, token string) (bin string, env []string, bot *fakebot.Server, pane string) {
	t.Helper()
	bin = binaries(t)
	bot = fakebot.New(token)
	t.Cleanup(bot.Close)
	env, home, _ := ingestEnv(t, "INTENTQ_AGENT_ID=secretary", "INTENTQ_REMINDERS_FIRST_AFTER=1h",
		"INTENTQ_TELEGRAM_TOKEN="+token, "INTENTQ_TELEGRAM_API_ENDPOINT="+bot.Endpoint())
	env = append(env, "INTENTQ_CONFIG="+writeConfig(t, env, home, "telegram:\n  allowed_chat_ids: [42]\n  allowed_user_ids: [42]\n"+
		"sessions:\n  secretary: {tmux_target: \"secretary:0\", chats: [42], default: true}\n"),
		"INTENTQ_CLIS_CLAUDE_PROCESS_NAMES="+standInProcess) // sh is a shell here, not an agent
	tmuxSession(t, env, "secretary", "sh")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 90*time.Second)
	return bin, env, bot, filepath.Join(home, "pane.out")
}

// agentComes starts the stand-in agent in the secretary's pane, writing to pane.
func agentComes(t *testing.T, bin string, env []string, pane string) {
	t.Helper()
	respawn := exec.Command("tmux", "respawn-pane", "-k", "-t", "secretary:0", standInAgentCommand(t, pane, filepath.Join(bin, "starter")))
	respawn.Env = env
	if out, err := respawn.CombinedOutput(); err != nil {
		t.Fatalf("tmux respawn-pane: %v %s", err, out)
	}
}

// waiting reports whether n messages wait in the secretary session.
func waiting(t *testing.T, bin string, env []string, n int) bool {
	out, _ := run(t, filepath.Join(bin, "starter"), env, "", "session", "show", "secretary")
	return strings.Contains(out, fmt.Sprintf("waiting %d,", n))
}

// Issue 35: a 44 s turn of the real Claude Code (44 Bash calls) while 6 messages arrive in its
// first 15 s, with the default reminders (first after 30 s, so each is reminded during the turn)
// and ntfy: each message reaches the model once, at a tool call, and at most one push comes
// while the agent works on them and right after the turn; then the agent answers them all and
// no push comes for them.
func TestClaudeCodeTurnWithSixMessagesIsNotNoise(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	bin := binaries(t)
	bot := fakebot.New("321:quiet")
	t.Cleanup(bot.Close)
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	turn, calls, ended := longTurnOf(44, "sleep 1")
	answered := map[string]bool{}
	var mu sync.Mutex
	api := fakeanthropic.New(func(r fakeanthropic.Request) fakeanthropic.Turn {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(r.SinceAssistant(), "answer them now") || (len(answered) > 0 && strings.Contains(r.SinceAssistant(), "tool_result")) {
			var all strings.Builder
			for _, m := range r.Messages {
				all.WriteString(m.Text())
			}
			for _, m := range msgIDRE.FindAllStringSubmatch(all.String(), -1) {
				if !answered[m[1]] {
					answered[m[1]] = true
					return fakeanthropic.Turn{ToolName: "mcp__intentq__reply", ToolInput: map[string]any{"chat_id": "42", "reply_to": m[1], "text": "done: " + m[1]}}
				}
			}
			return fakeanthropic.Turn{Text: "All answered."}
		}
		return turn(r)
	})
	t.Cleanup(api.Close)
	env, home := claudeEnv(t, bot, "321:quiet", "INTENTQ_NTFY_URL="+ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	starterRun(t, env, 0, "setup")
	allowTools(t, home, "Bash")
	capture := claudeAgent(t, env, home, api)
	waitPane(t, capture, "Claude Code's input line", 60*time.Second, func(p string) bool { return strings.Contains(p, "❯") })
	submitTyped(t, env, capture, "start the long job", func() bool { return calls.Load() > 0 })
	for i := 1; i <= 6; i++ {
		bot.AddMessage(42, 42, 500+i, fmt.Sprintf("during the turn %d", i))
		time.Sleep(2500 * time.Millisecond)
	}
	eventually(t, "the turn's end", 120*time.Second, func() bool { return ended.at.Load() != 0 }, capture)
	time.Sleep(15 * time.Second) // held pushes would go out at the turn's end
	pushes := func() (n int, titles []string) {
		for _, m := range ntfy.Messages() {
			n++
			titles = append(titles, m.Title)
		}
		return n, titles
	}
	if n, titles := pushes(); n > 1 {
		t.Errorf("%d pushes during and right after a 44 s turn with 6 messages: %q", n, titles)
	} else {
		t.Logf("%d push(es) during and right after the turn: %q", n, titles)
	}
	for i := 1; i <= 6; i++ {
		seen := 0
		for _, r := range api.Requests() {
			seen += strings.Count(r.SinceAssistant(), fmt.Sprintf("新着メッセージ】msg_id=%d chat=42", 500+i))
		}
		if seen != 1 {
			t.Errorf("message %d reached the model %d times (reminders aside)", 500+i, seen)
		}
	}
	before, _ := pushes()
	submitTyped(t, env, capture, "answer them now", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(answered) > 0
	})
	eventually(t, "six answers in the chat", 90*time.Second, func() bool {
		n := 0
		for _, m := range bot.Sent() {
			if strings.HasPrefix(m.Text, "done: ") {
				n++
			}
		}
		return n == 6
	}, capture)
	time.Sleep(5 * time.Second) // a digest held for the answered messages would go out now
	if after, titles := pushes(); after != before {
		t.Errorf("pushes came for answered messages: %q", titles)
	}
}

// Issue 35, the morning that wiped the secretary's context, on a compressed clock: the real
// Claude Code has a message (typed by intentq, confirmed by its receipt) and does not answer it,
// while escalation would interrupt after 3 s and reset (opted in) after 12 s, reminders every 8 s.
// It owes an answer; it is not stuck: only the reminder lines reach it, never an interrupt or a
// reset (its conversation goes on, no new context), and no menu opens.
func TestClaudeCodeUnansweredMessageIsOnlyReminded(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	bin := binaries(t)
	bot := fakebot.New("321:owed")
	t.Cleanup(bot.Close)
	api := fakeanthropic.New(func(fakeanthropic.Request) fakeanthropic.Turn { return fakeanthropic.Turn{Text: "Noted."} })
	t.Cleanup(api.Close)
	env, home := claudeEnv(t, bot, "321:owed",
		"INTENTQ_REMINDERS_FIRST_AFTER=5s", "INTENTQ_REMINDERS_REPEAT_EVERY=8s", "INTENTQ_DELIVERY_BUSY_WAIT=1s",
		"INTENTQ_SESSIONS_SECRETARY_TMUX_TARGET=secretary:0", "INTENTQ_SESSIONS_SECRETARY_CLI=claude", "INTENTQ_SESSIONS_SECRETARY_DEFAULT=true",
		"INTENTQ_SESSIONS_SECRETARY_ESCALATION_INTERRUPT_AFTER=3s", "INTENTQ_SESSIONS_SECRETARY_ESCALATION_RESET_AFTER=12s",
		"INTENTQ_SESSIONS_SECRETARY_ESCALATION_RESET_COOLDOWN=10s", "INTENTQ_SESSIONS_SECRETARY_ESCALATION_STEP_EVERY=1s",
		"INTENTQ_SESSIONS_SECRETARY_ESCALATION_RESET=true")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	starterRun(t, env, 0, "setup")
	capture := claudeAgent(t, env, home, api)
	waitPane(t, capture, "Claude Code's input line", 60*time.Second, func(p string) bool { return strings.Contains(p, "❯") })
	menu := watchPane(t, capture, "Rewind", "Restore the code")

	bot.AddMessage(42, 42, 7, "are you there?")
	reminders := func() (n int) {
		for _, r := range api.Requests() {
			n += strings.Count(r.SinceAssistant(), "【未対応メッセージ】msg_id=7")
		}
		return n
	}
	eventually(t, "three reminders at the model", 90*time.Second, func() bool { return reminders() >= 3 }, capture)
	var st struct {
		LastPhase int   `json:"last_phase"`
		Resets    []any `json:"resets"`
	}
	_ = json.Unmarshal([]byte(starterRun(t, env, 0, "show", "42/7", "--json")), &st)
	if st.LastPhase > 1 || len(st.Resets) > 0 {
		t.Errorf("an owed answer escalated: phase %d, resets %v", st.LastPhase, st.Resets)
	}
	for _, r := range api.Requests() {
		if strings.Contains(r.SinceAssistant(), "pending message(s) for session secretary") {
			t.Fatalf("the agent's context was reset; pane:\n%s", capture())
		}
	}
	// One conversation throughout: the latest request still carries the message itself.
	reqs := api.Requests()
	last := reqs[len(reqs)-1]
	var all strings.Builder
	for _, m := range last.Messages {
		all.WriteString(m.Text())
	}
	if !strings.Contains(all.String(), "【新着メッセージ】msg_id=7 chat=42") {
		t.Errorf("the conversation lost the message: its latest request:\n%s", all.String())
	}
	if p := menu(); p != "" {
		t.Errorf("a menu opened:\n%s", p)
	}
}
