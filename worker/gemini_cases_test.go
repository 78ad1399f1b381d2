package main_test

// Issue 37: Gemini CLI's remaining paths against the real 0.61.0: its approval prompt is never
// answered by intentq, a draft on its input line is never touched, and escalation loses no
// text.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/agentcli"
	"github.com/intentq/intentq/internal/testkit/fakegemini"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/workflows"
)

// geminiIdleStart starts a worker (its settings extra, pushes to a stand-in ntfy) and the real
// Gemini CLI, idle, whose model plays script; allowShell installs the person's policy that lets
// the shell tool run without asking.
func geminiIdleStart(t testing.TB, token string, script fakegemini.Script, allowShell bool, extra ...string) (*agentRun, *fakegemini.Server, *fakentfy.Server) {
	t.Helper()
	bot := newBot(t, token)
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	api := fakegemini.New(script)
	t.Cleanup(api.Close)
	env, home := geminiEnv(t, bot, token, api, append([]string{"INTENTQ_NTFY_URL=" + ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone",
		"INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s", "INTENTQ_DELIVERY_WAITS_FOR_YOU_AFTER=3s"}, extra...)...)
	lines := readyWorker(t, env)
	capture := startGemini(t, env, home, allowShell)
	// Gemini runs its SessionStart hook after its input line shows: a message waiting then is
	// handed over by that hook (as context), not typed. The cases begin once it has run.
	eventually(t, "Gemini's SessionStart hook", 30*time.Second, func() bool {
		v := sessionShow(t, env)
		return v.Agent != nil && v.Agent.Event == "session-start"
	}, capture)
	reqs, conv := geminiRequests(api)
	return &agentRun{cli: "gemini", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, ended: &turnEnd{}, lines: lines}, api, ntfy
}

// geminiInput is Gemini CLI's input line on the pane ("" when it is not shown).
func geminiInput(pane string) string {
	gemini := agentcli.Builtin()["gemini"]
	lines := strings.Split(strings.TrimRight(pane, "\n"), "\n")
	if n := gemini.Lines(); len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	line, _ := workflows.InputLine(strings.Join(lines, "\n"), gemini.InputPrompt)
	return line
}

// sawGemini reports whether any model request holds s in what it adds.
func sawGemini(api *fakegemini.Server, s string) bool {
	for _, r := range api.AllRequests() {
		if strings.Contains(strings.Join(r.UserTexts(), "\n"), s) {
			return true
		}
	}
	return false
}

// toldWaitsForYou waits until the person was told that a message waits for them.
func toldWaitsForYou(t testing.TB, ntfy *fakentfy.Server, capture func() string) {
	t.Helper()
	eventually(t, "the person told", 60*time.Second, func() bool {
		for _, m := range ntfy.Messages() {
			if strings.Contains(m.Title, "waits for you") {
				return true
			}
		}
		return false
	}, capture)
}

// Gemini CLI's approval prompt ("Allow execution of [Shell]?", answered at once by a digit) is
// never answered by intentq: a message that arrives while it is open waits (the person is
// told), nothing is typed, the command does not run; after the person's Escape ("No, suggest
// changes") the message reaches the model once.
func TestGeminiApprovalPromptIsNeverAnswered(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	marker := filepath.Join(t.TempDir(), "approved-by-intentq.txt")
	var asked atomic.Bool
	run, api, ntfy := geminiIdleStart(t, "321:geminiapprove", func(r fakegemini.Request) fakegemini.Turn {
		// Once: after the person's Escape the conversation still holds the prompt.
		if !r.AfterCall() && strings.Contains(strings.Join(r.UserTexts(), "\n"), "please run the tests") && asked.CompareAndSwap(false, true) {
			return fakegemini.Shell("touch " + marker)
		}
		return fakegemini.Turn{Text: "OK."}
	}, false)
	tmuxKeys(t, run.env, "-l", "please run the tests")
	waitPane(t, run.capture, "the typed prompt", 30*time.Second, func(p string) bool { return strings.Contains(p, "please run the tests") })
	time.Sleep(300 * time.Millisecond) // the paste's end, before the one Enter that submits it
	tmuxKeys(t, run.env, "Enter")
	waitPane(t, run.capture, "the approval prompt", 60*time.Second, func(p string) bool {
		return strings.Contains(p, "Allow execution of") && strings.Contains(p, "Allow once")
	})
	run.bot.AddMessage(42, 42, 2, "2 hello during the prompt") // a digit first: typed, it would answer the prompt
	toldWaitsForYou(t, ntfy, run.capture)
	// Still open, the message not at the model: nothing answered it (a typed "2" would have
	// allowed the command for the session, an Escape cancelled it).
	if p := run.capture(); !strings.Contains(p, "Allow execution of") || sawGemini(api, "msg_id=2 chat=42") {
		t.Fatalf("the prompt was answered or the message typed into it:\n%s", p)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran: the prompt was answered")
	}
	tmuxKeys(t, run.env, "Escape") // the person declines
	eventually(t, "the message at the model after the prompt", 60*time.Second, func() bool { return sawGemini(api, "msg_id=2 chat=42") }, run.capture)
	geminiSettled(t, run, api)
	if c := strings.Count(run.conversation(), "msg_id=2 chat=42"); c != 1 {
		t.Errorf("the message appears %d times in the conversation", c)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
	historyOnce(t, run.env, 2, 1)
}

// A draft on Gemini CLI's input line is never touched: a message that arrives meanwhile waits
// (the person is told) and reaches the model once after the person sends the draft, which
// reaches the model as typed.
func TestGeminiDraftIsNeverTouched(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	run, api, ntfy := geminiIdleStart(t, "321:geminidraft", func(fakegemini.Request) fakegemini.Turn { return fakegemini.Turn{Text: "Noted."} }, true)
	draft := "my half-typed question"
	tmuxKeys(t, run.env, "-l", draft)
	waitPane(t, run.capture, "the draft", 10*time.Second, func(p string) bool { return geminiInput(p) == draft })
	stop := watchInputOf(t, run.capture, geminiInput, draft, "msg_id=7")
	run.bot.AddMessage(42, 42, 7, "hello while you type")
	waitHeldBack(t, run.env, run.capture, 3*time.Second)
	toldWaitsForYou(t, ntfy, run.capture)
	if p := stop(); p != "" {
		t.Fatalf("the draft was touched or the message typed into it:\n%s", p)
	}
	if sawGemini(api, "msg_id=7 chat=42") {
		t.Fatal("the message was delivered while the draft was there")
	}
	tmuxKeys(t, run.env, "Enter")
	eventually(t, "the message at the model after the draft", 60*time.Second, func() bool { return sawGemini(api, "msg_id=7 chat=42") }, run.capture)
	geminiSettled(t, run, api)
	intact := false
	for _, r := range api.AllRequests() {
		for _, u := range r.UserTexts() {
			if strings.Contains(u, draft) {
				intact = intact || strings.TrimSpace(u) == draft
				if strings.Contains(u, "msg_id=") {
					t.Errorf("the draft reached the model mixed with the message: %q", u)
				}
			}
		}
	}
	if !intact {
		t.Error("the person's draft never reached the model as typed")
	}
	if c := strings.Count(run.conversation(), "msg_id=7 chat=42"); c != 1 {
		t.Errorf("the message appears %d times in the conversation", c)
	}
	historyOnce(t, run.env, 7, 1)
}

// Escalation on Gemini CLI loses no text: a message the agent received by itself (so nothing
// confirms it has it) is reminded with the interrupt phase (C-u, only into an empty input line:
// Escape twice would open Gemini's rewind menu), Gemini stays in front with no menu open, no key
// reaches the model as text; a draft the person types meanwhile holds every reminder back, is
// never cleared, and reaches the model as typed. Gemini CLI has no reset by default.
func TestGeminiEscalationLosesNoText(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	run, api, _ := geminiIdleStart(t, "321:geminiesc", func(fakegemini.Request) fakegemini.Turn { return fakegemini.Turn{Text: "Noted."} }, true,
		escalationSettings(false)...)
	escalationKeepsText(t, "gemini", run, func() (out []string) {
		for _, r := range api.AllRequests() {
			out = append(out, r.UserTexts()...)
		}
		return out
	}, geminiInput, func(t testing.TB) { geminiSettled(t, run, api) }, 0)
}

// escalationKeepsText runs the escalation case on the idle agent CLI of kind in run, whose model
// answers everything "Noted." (the worker set up with escalationSettings): message 7, received by
// the agent itself, is reminded and escalated until two reminders reached the model (and resets
// resets with them), the CLI in front and no menu open all along, no key reaching the model as
// text; then a draft holds every reminder back, is never cleared, and reaches the model as
// typed. texts are the user texts of every model request so far, input reads the input line,
// settle waits for the end of a turn.
func escalationKeepsText(t testing.TB, kind string, run *agentRun, texts func() []string, input func(string) string, settle func(testing.TB), resets int) {
	t.Helper()
	check := watchAgent(t, kind, run.env, run.capture)
	const reminder = pendingHeader + "msg_id=7 chat=42"
	reminders := func() (n int) {
		for _, u := range texts() {
			if strings.HasPrefix(strings.TrimSpace(u), reminder) {
				n++
			}
		}
		return n
	}
	receivedByItself(t, run.env, 7, "are you there?")
	eventually(t, "two reminders at the model", 90*time.Second, func() bool { return reminders() >= 2+resets }, run.capture)
	settle(t)
	if wrong, _ := check(); wrong != "" {
		t.Fatal(wrong)
	}
	var shown struct {
		LastPhase int         `json:"last_phase"`
		Resets    []time.Time `json:"resets"`
	}
	if out := starterRun(t, run.env, 0, "show", "42/7", "--json"); json.Unmarshal([]byte(out), &shown) != nil || shown.LastPhase < workflows.PhaseInterrupt || len(shown.Resets) != resets {
		t.Errorf("intent 42/7: last phase %d, %d resets; want escalated, %d resets:\n%s", shown.LastPhase, len(shown.Resets), resets, out)
	}

	// A draft: the next reminders wait behind it, and nothing clears it.
	draft := "a thought I am still typing"
	tmuxKeys(t, run.env, "-l", draft)
	waitPane(t, run.capture, "the draft", 10*time.Second, func(p string) bool { return input(p) == draft })
	before := reminders()
	stop := watchInputOf(t, run.capture, input, draft, "")
	waitHeldBack(t, run.env, run.capture, 9*time.Second) // longer than a reminder's interval
	if p := stop(); p != "" {
		t.Fatalf("the draft was cleared or a reminder typed into it:\n%s", p)
	}
	if reminders() != before {
		t.Fatal("a reminder reached the model while the draft was there")
	}
	tmuxKeys(t, run.env, "Enter")
	eventually(t, "the draft at the model", 60*time.Second, func() bool {
		return slices.ContainsFunc(texts(), func(u string) bool { return strings.Contains(u, draft) })
	}, run.capture)
	eventually(t, "a reminder after the draft", 60*time.Second, func() bool { return reminders() > before }, run.capture)
	settle(t)
	for _, u := range texts() {
		if strings.Contains(u, draft) && strings.TrimSpace(u) != draft {
			t.Errorf("the draft reached the model changed: %q", u)
		}
		if strings.Contains(u, "\x15") || strings.Contains(u, "C-u") || strings.TrimSpace(u) == "/new" {
			t.Errorf("a key or the reset command reached the model as text: %.200q", u)
		}
	}
	if wrong, looks := check(); wrong != "" {
		t.Fatal(wrong)
	} else {
		t.Logf("%s was in front, no menu open, at each of %d looks", kind, looks)
	}
}
