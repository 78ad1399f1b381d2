package main_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/testenv"
)

// hostLine is one delivered message as the stand-in agent writes it.
var hostLine = regexp.MustCompile(`【新着メッセージ】msg_id=(\d+) chat=(\d+)`)

// hostsRounds repeats the two-host test's round (24 messages to each host, each worker killed
// once): -hosts.rounds=10 plays 240 messages and 20 kills, a stress run for a rare duplicate.
var hostsRounds = flag.Int("hosts.rounds", 1, "rounds of the two-host kill test (24 messages to each host, each worker killed once)")

// Issue 38: two workers as two hosts on one Temporal (the first worker's embedded server, the
// second with its access token), each with its own data_dir and tmux server, a session on each
// with a stand-in agent that uses intentq's hooks. Messages to both while each worker is killed
// with SIGKILL in turn and started again: every message reaches its own session's agent exactly
// once, in order, never through the other host's pane; the second host has no bot token, yet
// every reaction and 10 of 10 answers sent from its side reach Telegram.
func TestTwoHostsEachServeTheirOwnSessions(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own homes, tmux servers and ports
	bin := binaries(t)
	const token = "38:hosts"
	bot := fakebot.New(token)
	t.Cleanup(bot.Close)
	config := "telegram:\n  allowed_chat_ids: [41, 42]\n  allowed_user_ids: [41, 42]\n  done_reaction: \"👍\"\n" +
		"sessions:\n" +
		"  alpha: {tmux_target: \"alpha:0\", chats: [41], default: true, host: a}\n" +
		"  beta: {tmux_target: \"beta:0\", chats: [42], host: b}\n"
	agents := "INTENTQ_CLIS_CLAUDE_PROCESS_NAMES=" + testenv.StandInProcessNames + "," + standInProcess

	envA, homeA, _ := ingestEnv(t, "INTENTQ_HOST=a", "INTENTQ_REMINDERS_FIRST_AFTER=1h",
		"INTENTQ_TELEGRAM_TOKEN="+token, "INTENTQ_TELEGRAM_API_ENDPOINT="+bot.Endpoint())
	envA = append(envA, "INTENTQ_CONFIG="+writeConfig(t, envA, homeA, config), agents)
	paneA := filepath.Join(homeA, "alpha.out")
	tmuxSession(t, envA, "alpha", standInAgentCommand(t, paneA, filepath.Join(bin, "starter")))
	a, linesA := startWorker(t, bin, envA)
	waitFor(t, linesA, "ready", 90*time.Second)
	// What each worker logs, kept for a failure's account.
	var logMu sync.Mutex
	var logged []string
	keep := func(host string, lines <-chan map[string]any) {
		go func() {
			for l := range lines {
				logMu.Lock()
				logged = append(logged, fmt.Sprintf("%s %s %v", time.Now().Format("15:04:05.000"), host, l))
				logMu.Unlock()
			}
		}()
	}
	keep("a", linesA)

	// The second host: its own home, data_dir and tmux server; A's server, with A's token; no
	// bot token.
	envB, homeB, _ := ingestEnv(t, "INTENTQ_HOST=b", "INTENTQ_REMINDERS_FIRST_AFTER=1h",
		"INTENTQ_TEMPORAL_ADDRESS=127.0.0.1:"+envValue(t, envA, "INTENTQ_TEMPORAL_EMBEDDED_PORT"),
		"INTENTQ_TEMPORAL_API_KEY_FILE="+filepath.Join(homeA, ".intentq", "access.token"),
		"INTENTQ_TEMPORAL_ENCRYPTION_MODE=off")
	envB = append(envB, "INTENTQ_CONFIG="+writeConfig(t, envB, homeB, config), agents)
	paneB := filepath.Join(homeB, "beta.out")
	tmuxSession(t, envB, "beta", standInAgentCommand(t, paneB, filepath.Join(bin, "starter")))
	b, linesB := startWorker(t, bin, envB)
	waitFor(t, linesB, "ready", 90*time.Second)
	keep("b", linesB)

	const round = 24
	n := round * max(1, *hostsRounds)
	kill := func(name string, w interface{ Kill() error }) {
		if err := w.Kill(); err != nil {
			t.Fatalf("kill %s: %v", name, err)
		}
	}
	for i := 1; i <= n; i++ {
		bot.AddMessage(41, 41, i, fmt.Sprintf("to alpha %d", i))
		bot.AddMessage(42, 42, i, fmt.Sprintf("to beta %d", i))
		time.Sleep(300 * time.Millisecond)
		switch i % round {
		case round / 3:
			kill("b", b.Process)
			_ = b.Wait()
			time.Sleep(2 * time.Second)
			t.Logf("%s: b killed and started again", time.Now().Format("15:04:05.000"))
			b, linesB = startWorker(t, bin, envB)
			waitFor(t, linesB, "ready", 90*time.Second)
			keep("b", linesB)
		case 2 * round / 3:
			// A runs the Temporal server too: B waits for it to come back.
			kill("a", a.Process)
			_ = a.Wait()
			time.Sleep(2 * time.Second)
			t.Logf("%s: a killed and started again", time.Now().Format("15:04:05.000"))
			a, linesA = startWorker(t, bin, envA)
			waitFor(t, linesA, "ready", 90*time.Second)
			keep("a", linesA)
		}
	}

	delivered := func(pane string) []string {
		data, _ := os.ReadFile(pane)
		var got []string
		for _, m := range hostLine.FindAllStringSubmatch(string(data), -1) {
			got = append(got, m[2]+"/"+m[1])
		}
		return got
	}
	for deadline := time.Now().Add(3 * time.Minute); len(delivered(paneA)) < n || len(delivered(paneB)) < n; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("3 minutes after the last message alpha has %d, beta %d of %d messages", len(delivered(paneA)), len(delivered(paneB)), n)
		}
	}
	time.Sleep(3 * time.Second) // anything typed twice would show by now
	for pane, chat := range map[string]string{paneA: "41", paneB: "42"} {
		got := delivered(pane)
		var want []string
		for i := 1; i <= n; i++ {
			want = append(want, fmt.Sprintf("%s/%d", chat, i))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s got %v, want each of chat %s's messages once, in order, and nothing else", filepath.Base(pane), got, chat)
			// The account: the stand-in's hook runs, and what the workers logged of this chat's
			// session and intents (the last 400 lines).
			hooks, _ := os.ReadFile(pane + ".hooks")
			t.Logf("%s hooks:\n%s", filepath.Base(pane), hooks)
			session := map[string]string{"41": "alpha", "42": "beta"}[chat]
			logMu.Lock()
			var mine []string
			for _, l := range logged {
				if strings.Contains(l, "session:"+session) || strings.Contains(l, "intent/"+chat+"/") || strings.Contains(l, "session/"+session) {
					mine = append(mine, l)
				}
			}
			logMu.Unlock()
			t.Logf("worker logs of %s:\n%s", session, strings.Join(mine[max(0, len(mine)-400):], "\n"))
		}
	}

	// Each session names its host and the worker that serves it.
	for name, host := range map[string]string{"alpha": "a", "beta": "b"} {
		if out := starterRun(t, envA, 0, "session", "show", name); !strings.Contains(out, "host "+host+": served by intentq@") {
			t.Errorf("starter session show %s:\n%s", name, out)
		}
	}

	// Answers from the host without the bot token: sent by the one that has it.
	for i := 1; i <= 10; i++ {
		starterRun(t, envB, 0, "reply", fmt.Sprintf("42/%d", i), fmt.Sprintf("answer %d from beta", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sent, err := bot.WaitSent(ctx, 10)
	if err != nil {
		t.Fatalf("%d of 10 answers reached Telegram: %v", len(sent), err)
	}
	for deadline := time.Now().Add(60 * time.Second); len(bot.Reactions()) < 2*n+10; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d reactions reached Telegram, want %d (👀 per message received, 👍 per answered)", len(bot.Reactions()), 2*n+10)
		}
	}
}
