package main_test

import (
	"strings"
	"testing"
	"time"
)

// Against the real Claude Code 2.1.330: a card and the approval's record name the
// answer the CLI acted on. (a) Yes at the terminal, then an 8-s tool run; Deny pressed
// meanwhile is answered that the terminal answered first, the card never says Denied, and the
// command runs. (b) No at the terminal and Allow pressed at once: whichever the CLI took, the
// card says Allowed exactly when the command ran.
func TestClaudeCodeApprovalNamesTheAnswerTheCLIActedOn(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	r := startApprovalRun(t)
	bot := r.bot

	// (a) Yes at the terminal; the tool runs 8 s; Deny from the phone meanwhile.
	card, _ := r.askWith(t, 1, "please do long step 1")
	answerAtTerminal(t, r, "1")
	press := bot.PressData(42, 42, card.MessageID, buttonsOf(t, card)["Deny"])
	if a := r.answered(t, press); strings.Contains(a, "Denied") || !strings.Contains(a, "terminal") {
		t.Errorf("Deny pressed while the allowed command ran was answered %q", a)
	}
	if e := r.edited(t, card); strings.Contains(e, "Denied") || !strings.Contains(e, "answered at the terminal") {
		t.Errorf("the card after the terminal's Yes and the phone's Deny: %s", e)
	}
	eventually(t, "step 1 to run", 30*time.Second, func() bool { return r.ran(1) }, r.capture)
	waitPane(t, r.capture, "the turn's end", 30*time.Second, func(p string) bool {
		return !strings.Contains(p, "esc to interrupt") && !strings.Contains(p, "Do you want to proceed?")
	})

	// (b) No at the terminal (Escape) and Allow from the phone at once.
	card, _ = r.ask(t, 2)
	answerAtTerminal(t, r, "Escape")
	press = bot.PressData(42, 42, card.MessageID, buttonsOf(t, card)["Allow once"])
	answer := r.answered(t, press)
	edit := r.edited(t, card)
	waitPane(t, r.capture, "the turn's end", 30*time.Second, func(p string) bool {
		return !strings.Contains(p, "esc to interrupt") && !strings.Contains(p, "Do you want to proceed?")
	})
	if strings.Contains(edit, "Allowed") {
		eventually(t, "step 2 to run, as the card says", 30*time.Second, func() bool { return r.ran(2) }, r.capture)
	} else if r.ran(2) {
		t.Errorf("step 2 ran, the card says: %s", edit)
	}
	if strings.Contains(answer, "Allowed") != strings.Contains(edit, "Allowed") {
		t.Errorf("the press was answered %q, the card says: %s", answer, edit)
	}
	t.Logf("(b): the press was answered %q; step 2 ran: %v", answer, r.ran(2))
}

// answerAtTerminal presses key in the open dialog as the person at the keyboard, again every 3 s
// while the dialog stays open (on a loaded machine a key that comes as it opens is lost).
func answerAtTerminal(t *testing.T, r *approvalRun, key string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tmuxKeys(t, r.env, key)
		for next := time.Now().Add(3 * time.Second); time.Now().Before(next); time.Sleep(50 * time.Millisecond) {
			if !strings.Contains(r.capture(), "Do you want to proceed?") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dialog took no %s; pane:\n%s", key, r.capture())
		}
	}
}
