package service_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/internal/session"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/workflows"
)

// Issue 36, the control lane: commands from the person are answered in the chat at the door,
// never recorded as messages: /pending lists what is not answered yet, oldest first, and where
// each is; /cancel as a reply takes a message back before it reaches the agent (the agent's
// pane is not there, so they wait); /status says what the session's agent is doing; a slash
// word that is not a command is a message like any other; a stranger's command gets nothing.
func TestControlCommandsAtTheDoor(t *testing.T) {
	svc, _, bot, _ := telegramService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	bot.AddMessage(allowedChat, allowedUser, 1, "first question")
	bot.AddMessage(allowedChat, allowedUser, 2, "sent by mistake")
	bot.AddMessage(allowedChat, allowedUser, 3, "/compact please")
	waitUntil(t, "three messages listed", 30*time.Second, func() bool {
		l, _ := intent.List(ctx, svc.Client(), intent.Filter{Status: workflows.StatusPending})
		return len(l) == 3
	})
	answer := func(to int) string {
		t.Helper()
		var got string
		waitUntil(t, fmt.Sprintf("the answer to message %d", to), 30*time.Second, func() bool {
			for _, m := range bot.Sent() {
				if m.ChatID == allowedChat && m.ReplyTo == to {
					got = m.Text
					return true
				}
			}
			return false
		})
		return got
	}

	bot.AddMessage(allowedChat, allowedUser, 4, "/pending")
	pending := answer(4)
	for _, want := range []string{"3 not answered yet, oldest first", "#1 ", "#2 ", "#3 ", "waiting for " + config.DefaultSessionName, "first question"} {
		if !strings.Contains(pending, want) {
			t.Errorf("/pending lacks %q:\n%s", want, pending)
		}
	}
	if strings.Index(pending, "#1 ") > strings.Index(pending, "#3 ") {
		t.Errorf("/pending is not oldest first:\n%s", pending)
	}

	cancelMsg := fakebot.TextMessage(allowedChat, allowedUser, 5, "/cancel")
	replied := fakebot.TextMessage(allowedChat, allowedUser, 2, "sent by mistake")
	cancelMsg.ReplyToMessage = &replied
	bot.AddUpdate(fakebot.MessageUpdate(cancelMsg))
	if got := answer(5); !strings.Contains(got, "Cancelled #2 before it reached the agent") {
		t.Errorf("/cancel: %s", got)
	}
	if st, err := intent.Status(ctx, svc.Client(), workflows.IntentID("1001", "2")); err != nil || st != workflows.StatusIgnored {
		t.Errorf("message 2 after /cancel: %s %v", st, err)
	}
	bot.AddMessage(allowedChat, allowedUser, 6, "/cancel 2")
	if got := answer(6); !strings.Contains(got, "#2 is already ignored") {
		t.Errorf("/cancel again: %s", got)
	}
	bot.AddMessage(allowedChat, allowedUser, 7, "/cancel")
	if got := answer(7); !strings.Contains(got, "Reply /cancel to the message") {
		t.Errorf("/cancel without a message: %s", got)
	}

	bot.AddMessage(allowedChat, allowedUser, 8, "/status@intentq_bot")
	if got := answer(8); !strings.Contains(got, config.DefaultSessionName+": ") {
		t.Errorf("/status: %s", got)
	}
	bot.AddMessage(allowedChat, allowedUser, 11, "/stop")
	if got := answer(11); !strings.Contains(got, config.DefaultSessionName+" not stopped: ") {
		t.Errorf("/stop with no agent reporting: %s", got)
	}
	bot.AddMessage(allowedChat, allowedUser, 12, "/reset")
	if got := answer(12); !strings.Contains(got, "Reset of "+config.DefaultSessionName+" allowed once: nothing is stuck now") {
		t.Errorf("/reset: %s", got)
	}
	bot.AddMessage(allowedChat+1, allowedUser, 9, "/pending") // a chat not on the allowlist
	bot.AddMessage(allowedChat, allowedUser, 10, "/pending "+strings.Repeat("x", 300))
	if got := answer(10); !strings.Contains(got, "too long") {
		t.Errorf("an oversized command: %s", got)
	}
	for _, m := range bot.Sent() {
		if m.ReplyTo == 9 {
			t.Errorf("a stranger's command was answered: %+v", m)
		}
	}
	// Commands are not messages; the slash word that is not one is.
	list, err := intent.List(ctx, svc.Client(), intent.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.MessageID)
	}
	slices.Sort(ids)
	if strings.Join(ids, " ") != "1 2 3" {
		t.Errorf("recorded %v, want messages 1, 2 and 3 only", ids)
	}
	if os.Getenv("WRITE_REPLAY_HISTORY") != "" {
		// A message taken back while it waited (its pane gone), and the session that dropped
		// it and answered /stop: see package workflows.
		writeHistory(t, svc, workflows.IntentID("1001", "2"), "../../workflows/testdata/intent_taken_back.json")
		writeHistory(t, svc, workflows.SessionWorkflowID(config.DefaultSessionName), "../../workflows/testdata/session_taken_back.json")
	}
}

// Issue 38: under a burst a session tells its intents after its backlog is typed, so an intent
// may not know yet that its agent has its message. An edit and /cancel ask the session: here its
// run is one whose ledger says the agent has messages 1 and 2 (typed, their results not told),
// and the intents were never told. The edit reaches the agent as a correction and the chat is
// told; /cancel says the agent already had it.
func TestTheDoorAsksTheSessionWhatItsAgentHas(t *testing.T) {
	svc, _, bot, cfg := telegramService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := svc.Client()
	name := config.DefaultSessionName
	one, two := workflows.IntentID("1001", "1"), workflows.IntentID("1001", "2")
	replaceSessionRun(t, ctx, c, bot, cfg, workflows.SessionHostQueue(cfg.Temporal.TaskQueue, cfg.Host),
		workflows.Ledger{RecentlyDelivered: []string{one, two}})
	for _, id := range []string{one, two} {
		if has, err := session.HasMessage(ctx, c, name, id); err != nil || !has {
			t.Fatalf("the session says its agent has %s: %v %v", id, has, err)
		}
		if v, err := intent.Show(ctx, c, id); err != nil || v.Delivered != nil {
			t.Fatalf("%s knows of its delivery (%v) or cannot be read: %v", id, v.Delivered, err)
		}
	}
	editOne(bot)
	answeredWith(t, bot, 1, "The agent already had #1: your edit goes to it as a correction", 30*time.Second)
	waitUntil(t, "the correction waiting in the session", 30*time.Second, func() bool {
		v, err := session.View(ctx, c, name)
		return err == nil && len(v.Queued) == 1 && strings.HasPrefix(v.Queued[0], one+".edit")
	})
	cancelTwo(bot)
	answeredWith(t, bot, 3, "Cancelled #2. Its agent already had it", 30*time.Second)
}

// replaceSessionRun sends messages 1 and 2, waits until both wait in the default session, and
// replaces the session's run with one on queue whose ledger is ledger.
func replaceSessionRun(t *testing.T, ctx context.Context, c client.Client, bot *fakebot.Server, cfg *config.Config, queue string, ledger workflows.Ledger) {
	t.Helper()
	name := config.DefaultSessionName
	bot.AddMessage(allowedChat, allowedUser, 1, "meet at 3pm")
	bot.AddMessage(allowedChat, allowedUser, 2, "sent by mistake")
	waitUntil(t, "both messages waiting in the session", 30*time.Second, func() bool {
		v, err := session.View(ctx, c, name)
		return err == nil && len(v.Queued) == 2
	})
	if err := c.TerminateWorkflow(ctx, workflows.SessionWorkflowID(name), "", "the test replaces the run"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.SessionWorkflowID(name), TaskQueue: queue},
		workflows.SessionWorkflowName, workflows.SessionInput{Version: workflows.SessionVersion, Config: session.TmuxConfig(cfg, name), Ledger: ledger}); err != nil {
		t.Fatal(err)
	}
}

// editOne is the person's edit of message 1 (replaceSessionRun's).
func editOne(bot *fakebot.Server) {
	bot.AddUpdate(fakebot.EditedMessageUpdate(fakebot.Edited(fakebot.TextMessage(allowedChat, allowedUser, 1, "meet at 3pm"), "meet at 5pm")))
}

// cancelTwo is the person's /cancel (message 3) replying to message 2.
func cancelTwo(bot *fakebot.Server) {
	cancelMsg := fakebot.TextMessage(allowedChat, allowedUser, 3, "/cancel")
	replied := fakebot.TextMessage(allowedChat, allowedUser, 2, "sent by mistake")
	cancelMsg.ReplyToMessage = &replied
	bot.AddUpdate(fakebot.MessageUpdate(cancelMsg))
}

// answeredWith waits until the chat's answer to message to says want.
func answeredWith(t *testing.T, bot *fakebot.Server, to int, want string, within time.Duration) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("an answer to message %d with %q", to, want), within, func() bool {
		return slices.ContainsFunc(bot.Sent(), func(m fakebot.SentMessage) bool { return m.ReplyTo == to && strings.Contains(m.Text, want) })
	})
}

// A session that does not answer whether its agent has a message (its host's worker is down:
// here its run is on a task queue no worker polls) is not taken for a no. The edit is
// kept and the person told that a correction may be needed; /cancel says intentq cannot tell.
// Before, both counted the silence as "not yet", and an edit of a message the agent had was
// dropped without a word.
func TestTheDoorSaysWhenTheSessionDoesNotAnswer(t *testing.T) {
	svc, _, bot, cfg := telegramService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	replaceSessionRun(t, ctx, svc.Client(), bot, cfg, "no-worker-polls-this", workflows.Ledger{})
	editOne(bot)
	answeredWith(t, bot, 1, "Your edit of #1 is kept for when #1 reaches its agent. Its session did not answer", 60*time.Second)
	cancelTwo(bot)
	answeredWith(t, bot, 3, "Cancelled #2. Its session did not answer", 60*time.Second)
}
