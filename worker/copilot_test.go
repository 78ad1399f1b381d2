package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/fakeopenai"
	"github.com/intentq/intentq/internal/testkit/peers"
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
