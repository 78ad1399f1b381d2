package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/fakeanthropic"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/internal/testkit/peers"
)

// apiKey is the key Claude Code sends the Messages API stand-in.
const apiKey = "sk-ant-api03-intentq-test-0123456789abcdefghij"

// claudeAgent runs the real Claude Code TUI in a tmux session "secretary" (the default session's
// target) against the Messages API stand-in, with the hooks and the MCP server that `starter
// setup` installed, and returns a function that captures its pane.
func claudeAgent(t testing.TB, env []string, home string, api *fakeanthropic.Server) func() string {
	t.Helper()
	claude := peers.Claude(t)
	peers.Tmux(t)
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	// Onboarding done, the key approved and the folder trusted, as after a first run by hand.
	path := filepath.Join(home, ".claude.json")
	doc := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &doc)
	}
	doc["hasCompletedOnboarding"] = true
	doc["theme"] = "dark"
	doc["lastOnboardingVersion"] = "2.1.330"
	doc["customApiKeyResponses"] = map[string]any{"approved": []string{apiKey[len(apiKey)-20:]}, "rejected": []string{}}
	doc["projects"] = map[string]any{work: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}
	b, _ := json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	vars := append(append([]string{}, env...),
		"ANTHROPIC_BASE_URL="+api.URL(), "ANTHROPIC_API_KEY="+apiKey, "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "TERM=xterm-256color",
		// MCP tools offered directly, not behind ToolSearch (the stand-in plays a model that calls them).
		"ENABLE_TOOL_SEARCH=false")
	settings := filepath.Join(home, ".claude", "secretary", "settings.json")
	args := []string{"new-session", "-d", "-s", "secretary", "-x", "200", "-y", "50", "-c", work, "--", "env"}
	args = append(append(args, vars...), claude, "--settings", settings)
	tmux := exec.Command("tmux", args...)
	tmux.Env = env
	if out, err := tmux.CombinedOutput(); err != nil {
		t.Fatalf("start claude in tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		// The pane's program now (a test may have restarted Claude Code in it).
		pidCmd := exec.Command("tmux", "display-message", "-p", "-t", "=secretary:", "#{pane_pid}")
		pidCmd.Env = env
		out, _ := pidCmd.Output()
		pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		k := exec.Command("tmux", "kill-server")
		k.Env = env
		_ = k.Run()
		// Claude Code writes into HOME while it exits: wait for it before the temporary HOME is
		// removed.
		for deadline := time.Now().Add(15 * time.Second); pid > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if syscall.Kill(pid, 0) != nil {
				break
			}
		}
	})
	return func() string {
		c := exec.Command("tmux", "capture-pane", "-p", "-t", "=secretary:")
		c.Env = env
		out, _ := c.CombinedOutput()
		return strings.ReplaceAll(string(out), "\u00a0", " ") // the prompt is followed by a no-break space
	}
}

// waitPane waits until the pane shows want.
func waitPane(t testing.TB, capture func() string, what string, timeout time.Duration, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pane := capture()
		if ok(pane) {
			return pane
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; the pane:\n%s", timeout, what, pane)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deliveredRE finds a delivered message or a reminder of one (a message typed before Claude Code
// had connected its MCP servers is answered at its reminder).
var deliveredRE = regexp.MustCompile(`(?:新着|未対応)メッセージ】msg_id=(\d+) chat=(-?\d+)`)

// With the real Claude Code TUI: a Telegram message is typed into the pane, the model (the
// stand-in) calls mcp__intentq__reply, the person's chat receives the answer as a reply, the
// intent closes, and no reminder is typed afterwards.
func TestClaudeCodeRepliesThroughMCP(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Claude Code")
	}
	bin := binaries(t)
	bot := fakebot.New("321:claude")
	t.Cleanup(bot.Close)
	api := fakeanthropic.New(func(r fakeanthropic.Request) fakeanthropic.Turn {
		if strings.Contains(r.Last(), "tool_result") {
			return fakeanthropic.Turn{Text: "Answered."}
		}
		// The prompt and the environment block (a "system" message) come as separate messages:
		// the delivered message of this turn is answered.
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "assistant"; i-- {
			if m := deliveredRE.FindStringSubmatch(r.Messages[i].Text()); m != nil && r.HasTool("mcp__intentq__reply") {
				return fakeanthropic.Turn{ToolName: "mcp__intentq__reply", ToolInput: map[string]any{"chat_id": m[2], "reply_to": m[1], "text": "Hello from the agent"}}
			}
		}
		return fakeanthropic.Turn{Text: "OK."}
	})
	t.Cleanup(api.Close)
	env, home := claudeEnv(t, bot, "321:claude", "INTENTQ_REMINDERS_FIRST_AFTER=40s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	starterRun(t, env, 0, "setup")
	capture := claudeAgent(t, env, home, api)
	waitPane(t, capture, "Claude Code's input line", 60*time.Second, func(p string) bool { return strings.Contains(p, "❯") })

	received := time.Now()
	bot.AddMessage(42, 42, 7, "hello there")
	deadline := time.Now().Add(90 * time.Second)
	for len(bot.Sent()) == 0 {
		if time.Now().After(deadline) {
			for _, r := range api.Requests() {
				var names []string
				for _, tool := range r.Tools {
					names = append(names, tool.Name)
				}
				t.Logf("request: tools %v; last: %.300q", names, r.Last())
			}
			t.Fatalf("no reply reached the chat; the pane:\n%s\nrequests: %d", capture(), len(api.Requests()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	sent := bot.Sent()[0]
	if sent.ChatID != 42 || sent.ReplyTo != 7 || sent.Text != "Hello from the agent" {
		t.Errorf("sent = %+v, want the agent's answer as a reply to 7", sent)
	}
	// The answer goes out before the intent records itself closed: waited for.
	waitIntentClosed(t, env, "42/7", 30*time.Second)
	// Closed: no reminder is typed any more (the first was due 40 s after receipt; on a loaded
	// machine the message may have been answered at it).
	reminders := strings.Count(starterRun(t, env, 0, "history", "secretary"), "未対応メッセージ")
	time.Sleep(time.Until(received.Add(50 * time.Second)))
	history := starterRun(t, env, 0, "history", "secretary")
	if strings.Count(history, "未対応メッセージ") > reminders {
		t.Errorf("a reminder was typed after the reply:\n%s", history)
	}
	if n := len(bot.Sent()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
}

// lastUserText is the text of the request's newest user turn (its last user message).
func lastUserText(r fakeanthropic.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// sawText reports whether any request adds s to the conversation (in a prompt, or in context a
// hook added).
func sawText(api *fakeanthropic.Server, s string) bool {
	for _, r := range api.Requests() {
		if strings.Contains(r.SinceAssistant(), s) {
			return true
		}
	}
	return false
}

// Issue 10's typing guards against the real Claude Code TUI: a person's draft in the input box
// is never changed (their own Enter sends it intact), and a permission dialog is never answered
// by intentq (a keystroke could approve the tool call); the person is told, and the waiting
// message is delivered once they are done.
func TestClaudeCodeDraftAndDialogAreNeverTyped(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	if testing.Short() {
		t.Skip("runs the worker and Claude Code")
	}
	bin := binaries(t)
	bot := fakebot.New("321:guard")
	t.Cleanup(bot.Close)
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	api := fakeanthropic.New(func(r fakeanthropic.Request) fakeanthropic.Turn {
		if strings.Contains(r.Last(), "tool_result") {
			return fakeanthropic.Turn{Text: "done."}
		}
		if strings.Contains(lastUserText(r), "run the tests") {
			return fakeanthropic.Turn{ToolName: "Bash", ToolInput: map[string]any{"command": "touch approved-by-intentq.txt", "description": "Create a file"}}
		}
		return fakeanthropic.Turn{Text: "OK."}
	})
	t.Cleanup(api.Close)
	env, home := claudeEnv(t, bot, "321:guard", "INTENTQ_NTFY_URL="+ntfy.URL(), "INTENTQ_NTFY_TOPIC=phone",
		"INTENTQ_REMINDERS_FIRST_AFTER=10m", "INTENTQ_DELIVERY_BUSY_WAIT=1s", "INTENTQ_DELIVERY_WAITS_FOR_YOU_AFTER=3s")
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	starterRun(t, env, 0, "setup")
	manualPermissions(t, home)
	capture := claudeAgent(t, env, home, api)
	waitPane(t, capture, "Claude Code's input line", 60*time.Second, func(p string) bool { return strings.Contains(p, "❯") })
	keys := func(args ...string) { t.Helper(); tmuxKeys(t, env, args...) }
	waitAlert := func(n int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			count := 0
			for _, m := range ntfy.Messages() {
				if strings.Contains(m.Title, "waits for you") {
					count++
				}
			}
			if count >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the person was not told (%d alerts); pane:\n%s", count, capture())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// 1. A draft: the message waits; the draft stays as typed; the person's Enter sends it intact.
	draft := "my half-typed question"
	keys("-l", draft)
	waitPane(t, capture, "the draft", 10*time.Second, func(p string) bool { return strings.Contains(p, "❯ "+draft) })
	bot.AddMessage(42, 42, 7, "hello while you type")
	waitAlert(1)
	if p := capture(); !strings.Contains(p, "❯ "+draft+"\n") || strings.Contains(p, "新着メッセージ") || sawText(api, "hello while you type") {
		t.Fatalf("the draft was touched or the message typed into it:\n%s", p)
	}
	keys("Enter")
	waitPane(t, capture, "the message delivered after the draft", 60*time.Second, func(string) bool { return sawText(api, "msg_id=7") })
	drafts := 0
	for _, r := range api.Requests() {
		for _, b := range textBlocks(r) {
			if strings.Contains(b, draft) {
				drafts++
				if strings.Contains(b, "新着") {
					t.Errorf("the draft reached the model mixed with the message: %q", b)
				}
			}
		}
	}
	if drafts == 0 {
		t.Error("the person's draft never reached the model intact")
	}

	// 2. A permission dialog: never answered by intentq; the person is told; once they answer,
	// the waiting message is delivered.
	keys("-l", "please run the tests")
	keys("Enter")
	waitPane(t, capture, "the permission dialog", 60*time.Second, func(p string) bool { return strings.Contains(p, "Do you want to proceed?") })
	bot.AddMessage(42, 42, 8, "hello during the dialog")
	waitAlert(2)
	if p := capture(); !strings.Contains(p, "Do you want to proceed?") || sawText(api, "msg_id=8") {
		t.Fatalf("the dialog was answered or the message typed into it:\n%s", p)
	}
	for _, r := range api.Requests() {
		if strings.Contains(r.Last(), "tool_result") {
			t.Fatalf("the Bash call ran: the dialog was answered")
		}
	}
	keys("Escape") // the person says no
	defer func() {
		if _, err := os.Stat(filepath.Join(home, "work", "approved-by-intentq.txt")); err == nil {
			t.Error("the tool call was approved: the file exists")
		}
	}()
	waitPane(t, capture, "the message delivered after the dialog", 60*time.Second, func(string) bool { return sawText(api, "msg_id=8") })
}
