package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/doors/hooks/hooktemporal"
	"github.com/intentq/intentq/internal/testkit/fakeanthropic"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
)

// approvalRun is the real Claude Code in its manual permission mode (Bash asks), with intentq's
// own setup, a worker polling the Telegram stand-in (chat 42, user 42 allowed) and ntfy.
type approvalRun struct {
	*agentRun
	api     *fakeanthropic.Server
	ntfy    *fakentfy.Server
	work    string
	restart func()
	// opened is when the last dialog was seen on the screen.
	opened time.Time
}

// startApprovalRun starts it; the model answers "step N" with a Bash call that creates
// ran-N in the working folder ("long step N": after 8 s), and everything else with "Done.".
func startApprovalRun(t testing.TB) *approvalRun {
	t.Helper()
	bin := binaries(t)
	bot := fakebot.New("321:approve")
	t.Cleanup(bot.Close)
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	r := &approvalRun{ntfy: ntfy}
	r.api = fakeanthropic.New(func(req fakeanthropic.Request) fakeanthropic.Turn {
		added := req.SinceAssistant()
		if strings.Contains(added, "tool_result") {
			return fakeanthropic.Turn{Text: "Done."}
		}
		if i := strings.Index(added, "step "); i >= 0 && len(added) > i+5 {
			n := added[i+5 : i+6]
			command := "touch ran-" + n
			if strings.Contains(added, "long step ") { // a tool run the phone can be pressed during
				command = "sleep 8 && touch ran-" + n
			}
			return fakeanthropic.Turn{ToolName: "Bash", ToolInput: map[string]any{"command": command, "description": "Mark step " + n}}
		}
		return fakeanthropic.Turn{Text: "Done."}
	})
	t.Cleanup(r.api.Close)
	env, home := claudeEnv(t, bot, "321:approve", "INTENTQ_TELEGRAM_ALLOWED_USER_IDS=42", "INTENTQ_NTFY_URL="+ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone",
		"INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s")
	w, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	starterRun(t, env, 0, "setup")
	manualPermissions(t, home)
	capture := claudeAgent(t, env, home, r.api)
	waitPane(t, capture, "Claude Code's input line", 60*time.Second, func(p string) bool { return strings.Contains(p, "❯") })
	reqs, conv := claudeRequests(r.api)
	r.agentRun = &agentRun{cli: "claude", bot: bot, env: env, home: home, capture: capture, requests: reqs, conversation: conv, lines: lines}
	r.work = filepath.Join(home, "work")
	r.restart = func() {
		_ = w.Process.Kill()
		_ = w.Wait()
		w, r.lines = startWorker(t, bin, env)
		waitFor(t, r.lines, "ready", 90*time.Second)
	}
	return r
}

// ask has the person ask for step n at the terminal and waits for the card; it returns the
// card's message and when the dialog opened.
func (r *approvalRun) ask(t testing.TB, n int) (card fakebot.SentMessage, opened time.Time) {
	t.Helper()
	return r.askWith(t, n, fmt.Sprintf("please do step %d", n))
}

// askWith is ask with the person's own words for step n.
func (r *approvalRun) askWith(t testing.TB, n int, words string) (card fakebot.SentMessage, opened time.Time) {
	t.Helper()
	submitTyped(t, r.env, r.capture, words, func() bool {
		if !strings.Contains(r.capture(), "Do you want to proceed?") {
			return false
		}
		r.opened = time.Now()
		return true
	})
	opened = r.opened
	eventually(t, fmt.Sprintf("the card of step %d", n), 30*time.Second, func() bool {
		for _, m := range r.bot.Sent() {
			if strings.Contains(m.Text, fmt.Sprintf("touch ran-%d", n)) && m.Params.Get("reply_markup") != "" {
				card = m
				return true
			}
		}
		return false
	}, r.capture)
	return card, opened
}

// ran reports whether step n's command ran.
func (r *approvalRun) ran(n int) bool {
	_, err := os.Stat(filepath.Join(r.work, fmt.Sprintf("ran-%d", n)))
	return err == nil
}

// answered waits for the answer to the press with callback id and returns its text.
func (r *approvalRun) answered(t testing.TB, id string) string {
	t.Helper()
	return pressAnswer(t, r.bot, id, r.capture)
}

// pressAnswer waits for the bot's answer to the press with callback id (answerCallbackQuery)
// and returns its text; show says what to print when it does not come.
func pressAnswer(t testing.TB, bot *fakebot.Server, id string, show func() string) string {
	t.Helper()
	var text string
	eventually(t, "the answer to the press", 30*time.Second, func() bool {
		for _, a := range bot.CallbackAnswers() {
			if a.ID == id {
				text = a.Text
				return true
			}
		}
		return false
	}, show)
	return text
}

// edited waits for the card's edit and returns its text; the card has no buttons after it.
func (r *approvalRun) edited(t testing.TB, card fakebot.SentMessage) string {
	t.Helper()
	var text string
	eventually(t, "the card's edit", 30*time.Second, func() bool {
		for _, e := range r.bot.Edits() {
			if e.MessageID == card.MessageID {
				text = e.Text
				return !e.Buttons
			}
		}
		return false
	}, r.capture)
	return text
}

// Issue 36, approvals against the real Claude Code 2.1.330 with intentq's own setup: a Bash call
// the agent asks for puts a card in the chat within 2 s (the command as the agent gave it, three
// buttons); a press from a user outside the allowlist does nothing; Allow runs it; Deny refuses
// it and the model is told; answering at the terminal first edits the card and a late press is
// answered and changes nothing; five messages sent while a dialog is open reach the model once
// each afterwards; the worker killed while a card waits and started again: the press still
// decides. Nothing is typed into the dialog: every answer is the hook's or the person's keys.
func TestClaudeCodeApprovalsFromThePhone(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	r := startApprovalRun(t)
	bot := r.bot

	// 1. Allow once, after a stranger's press that does nothing.
	card, opened := r.ask(t, 1)
	if d := card.At.Sub(opened); d > 2*time.Second {
		t.Errorf("the card came %s after the dialog opened", d)
	}
	for _, want := range []string{"secretary asks to use Bash", "touch ran-1", "(the agent says: Mark step 1)"} {
		if !strings.Contains(card.Text, want) {
			t.Errorf("the card lacks %q:\n%s", want, card.Text)
		}
	}
	buttons := bot.Buttons(42, card.MessageID)
	if len(buttons) < 2 || buttons["Allow once"] == "" || buttons["Deny"] == "" {
		t.Fatalf("the card's buttons: %v", buttons)
	}
	for label, data := range buttons {
		if strings.Contains(data, "allow") || strings.Contains(data, "deny") || strings.Contains(data, "secretary") {
			t.Errorf("button %q carries meaning: %q", label, data)
		}
	}
	stranger := bot.Press(42, 77, card.MessageID, "Allow once")
	if a := r.answered(t, stranger); !strings.Contains(a, "Not allowed") {
		t.Errorf("a stranger's press was answered %q", a)
	}
	time.Sleep(2 * time.Second) // what a stranger's press would have done, it would have by now
	if r.ran(1) || !strings.Contains(r.capture(), "Do you want to proceed?") {
		t.Fatalf("a stranger's press decided; pane:\n%s", r.capture())
	}
	press := bot.Press(42, 42, card.MessageID, "Allow once")
	if a := r.answered(t, press); !strings.Contains(a, "Allowed once") {
		t.Errorf("the press was answered %q", a)
	}
	eventually(t, "step 1 to run", 30*time.Second, func() bool { return r.ran(1) }, r.capture)
	if e := r.edited(t, card); !strings.Contains(e, "Allowed once from the phone by") {
		t.Errorf("the card after Allow: %s", e)
	}
	waitPane(t, r.capture, "the turn's end", 30*time.Second, func(p string) bool {
		return !strings.Contains(p, "Do you want to proceed?") && strings.Contains(p, "● Done.")
	})

	// 2. Deny, typed as a reply to the card; five messages wait behind the dialog meanwhile.
	card, _ = r.ask(t, 2)
	for i := 1; i <= 5; i++ {
		bot.AddMessage(42, 42, 300+i, fmt.Sprintf("behind the dialog %d", i))
	}
	time.Sleep(3 * time.Second) // the messages are recorded and wait: none may be typed now
	if sawText(r.api, "behind the dialog") || !strings.Contains(r.capture(), "Do you want to proceed?") {
		t.Fatalf("a message went in while the dialog was open; pane:\n%s", r.capture())
	}
	var reply map[string]any
	_ = json.Unmarshal(bot.Message(42, card.MessageID), &reply)
	bot.AddUpdate(map[string]any{"message": map[string]any{"message_id": 400, "date": time.Now().Unix(),
		"from": fakebot.NewUser(42), "chat": fakebot.ChatFor(42, fakebot.NewUser(42)), "text": "/deny",
		"entities": fakebot.CommandEntities("/deny"), "reply_to_message": reply}})
	eventually(t, "the model told of the denial", 30*time.Second, func() bool { return sawText(r.api, hooktemporal.DeniedMessage) }, r.capture)
	if r.ran(2) {
		t.Error("step 2 ran after Deny")
	}
	if e := r.edited(t, card); !strings.Contains(e, "Denied from the phone") {
		t.Errorf("the card after Deny: %s", e)
	}
	eventually(t, "the five messages at the model", 90*time.Second, func() bool {
		for i := 1; i <= 5; i++ {
			if !sawText(r.api, fmt.Sprintf("behind the dialog %d", i)) {
				return false
			}
		}
		return true
	}, r.capture)

	// 3. The terminal answers first: the card says so; a late press changes nothing.
	card, _ = r.ask(t, 3)
	time.Sleep(time.Second)
	tmuxKeys(t, r.env, "1") // the person at the keyboard: Yes
	eventually(t, "step 3 to run", 30*time.Second, func() bool { return r.ran(3) }, r.capture)
	if e := r.edited(t, card); !strings.Contains(e, "allowed at the terminal") {
		t.Errorf("the card after the terminal's Yes: %s", e)
	}
	late := bot.PressData(42, 42, card.MessageID, buttonsOf(t, card)["Deny"])
	if a := r.answered(t, late); !strings.Contains(a, "Already answered: allowed at the terminal") {
		t.Errorf("the late press was answered %q", a)
	}

	// 4. The worker dies while a card waits and comes back: the press still decides.
	card, _ = r.ask(t, 4)
	r.restart()
	press = bot.Press(42, 42, card.MessageID, "Allow once")
	if a := r.answered(t, press); !strings.Contains(a, "Allowed once") {
		t.Errorf("the press after the restart was answered %q", a)
	}
	eventually(t, "step 4 to run", 60*time.Second, func() bool { return r.ran(4) }, r.capture)

	// Every message once, none typed into a dialog.
	for i := 1; i <= 5; i++ {
		n := 0
		for _, q := range r.requests() {
			n += strings.Count(q.Added, fmt.Sprintf("msg_id=%d chat=42", 300+i))
		}
		if n != 1 {
			t.Errorf("message %d reached the model %d times", 300+i, n)
		}
	}
	// Every decision is recorded: who, when, what, from where.
	var rows []struct {
		Action string `json:"action"`
		Result *struct {
			Outcome, Choice, By, Via string
			UserID                   int64 `json:"user_id"`
		} `json:"result"`
	}
	eventually(t, "the four approvals in starter approvals", 30*time.Second, func() bool {
		rows = nil
		_ = json.Unmarshal([]byte(starterRun(t, r.env, 0, "approvals", "--json")), &rows)
		ended := 0
		for _, row := range rows {
			if row.Result != nil {
				ended++
			}
		}
		return len(rows) == 4 && ended == 4
	}, func() string { return starterRun(t, r.env, 0, "approvals") })
	got := map[string]string{}
	for _, row := range rows {
		got[row.Action] = row.Result.Outcome + " " + row.Result.Choice + " " + row.Result.Via
		if row.Result.Outcome == "decided" && (row.Result.UserID != 42 || !strings.Contains(row.Result.By, "42")) {
			t.Errorf("%s decided by %q (%d)", row.Action, row.Result.By, row.Result.UserID)
		}
	}
	want := map[string]string{"touch ran-1": "decided allow button", "touch ran-2": "decided deny typed", "touch ran-3": "terminal  ", "touch ran-4": "decided allow button"}
	for action, w := range want {
		if got[action] != w {
			t.Errorf("starter approvals: %s %q, want %q (all: %v)", action, got[action], w, got)
		}
	}
	pushes := 0
	for _, m := range r.ntfy.Messages() {
		if strings.Contains(m.Title, "asks for your approval") {
			pushes++
		}
	}
	if pushes < 4 {
		t.Errorf("%d approval pushes for 4 cards", pushes)
	}
}

// buttonsOf reads the buttons a sent card had when it was sent.
func buttonsOf(t *testing.T, card fakebot.SentMessage) map[string]string {
	t.Helper()
	var m fakebot.InlineKeyboardMarkup
	if err := json.Unmarshal([]byte(card.Params.Get("reply_markup")), &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			out[b.Text] = b.CallbackData
		}
	}
	return out
}

// Issue 36's figures with the real Claude Code: the permission request (the hook's start, which
// Claude Code runs as it opens the dialog) -> the card on the phone (the Bot API stand-in's
// receipt of sendMessage), and the press -> the tool running (the command's file exists), over 8
// approvals.
func BenchmarkN36Approvals(b *testing.B) {
	var card, press []time.Duration
	for range b.N {
		r := startApprovalRun(b)
		sent := map[string]time.Time{}
		for n := 1; n <= 8; n++ {
			c, _ := r.ask(b, n)
			sent[fmt.Sprintf("touch ran-%d", n)] = c.At
			at := time.Now()
			r.bot.Press(42, 42, c.MessageID, "Allow once")
			for !r.ran(n) {
				if time.Since(at) > time.Minute {
					b.Fatalf("step %d did not run; pane:\n%s", n, r.capture())
				}
				time.Sleep(10 * time.Millisecond)
			}
			press = append(press, time.Since(at))
			waitPane(b, r.capture, "the turn's end", 30*time.Second, func(p string) bool {
				return strings.Contains(p, "● Done.") && !strings.Contains(p, "Do you want to proceed?")
			})
		}
		var rows []struct {
			Action  string    `json:"action"`
			AskedAt time.Time `json:"asked_at"`
		}
		_ = json.Unmarshal([]byte(starterRun(b, r.env, 0, "approvals", "--json")), &rows)
		for _, row := range rows {
			if at, ok := sent[row.Action]; ok {
				card = append(card, at.Sub(row.AskedAt))
			}
		}
	}
	cp50, cmax := spread(card)
	pp50, pmax := spread(press)
	b.ReportMetric(float64(cp50.Milliseconds()), "card-p50-ms")
	b.ReportMetric(float64(pp50.Milliseconds()), "press-p50-ms")
	fmt.Printf("approvals (Claude Code 2.1.330, %d): permission request -> card p50 %s max %s; press -> tool running p50 %s max %s\n",
		len(card), cp50.Round(time.Millisecond), cmax.Round(time.Millisecond), pp50.Round(time.Millisecond), pmax.Round(time.Millisecond))
}

// spread is the median and the maximum of ds.
func spread(ds []time.Duration) (p50, max time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)/2], s[len(s)-1]
}
