package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/fakebot"
)

// Issue 35: a message ignored with `starter ignore` while it waited in its session (a shell in
// the pane, no agent yet, as behind a dialog) never reaches the agent once one runs; the message
// after it does, once; the person's message shows it was let go (🕊 instead of 👀).
func TestIgnoredWhileWaitingNeverReachesTheAgent(t *testing.T) {
	t.Parallel() // end to end: waits on real time; its own home, tmux server and ports
	bin := binaries(t)
	const token = "35:cancel"
	bot := fakebot.New(token)
	t.Cleanup(bot.Close)
	env, home, _ := ingestEnv(t, "INTENTQ_AGENT_ID=secretary", "INTENTQ_REMINDERS_FIRST_AFTER=1h",
		"INTENTQ_TELEGRAM_TOKEN="+token, "INTENTQ_TELEGRAM_API_ENDPOINT="+bot.Endpoint())
	env = append(env, "INTENTQ_CONFIG="+writeConfig(t, env, home, "telegram:\n  allowed_chat_ids: [42]\n  allowed_user_ids: [42]\n"+
		"sessions:\n  secretary: {tmux_target: \"secretary:0\", chats: [42], default: true}\n"),
		"INTENTQ_CLIS_CLAUDE_PROCESS_NAMES="+standInProcess) // sh is a shell here, not an agent
	tmuxSession(t, env, "secretary", "sh") // a shell: the session waits for an agent
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 90*time.Second)

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
	until("message 1 waiting in the session", func() bool {
		out, _ := run(t, filepath.Join(bin, "starter"), env, "", "session", "show", "secretary")
		return strings.Contains(out, "waiting 1,")
	})
	starterRun(t, env, 0, "ignore", "42/1")
	until("message 1 shown as let go", func() bool { return reacted(1, "🕊") })
	bot.AddMessage(42, 42, 2, "the real one")
	until("message 2 recorded", func() bool { return reacted(2, "👀") })

	// The agent comes.
	pane := filepath.Join(home, "pane.out")
	respawn := exec.Command("tmux", "respawn-pane", "-k", "-t", "secretary:0", standInAgentCommand(t, pane, filepath.Join(bin, "starter")))
	respawn.Env = env
	if out, err := respawn.CombinedOutput(); err != nil {
		t.Fatalf("tmux respawn-pane: %v %s", err, out)
	}
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
