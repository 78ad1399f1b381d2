package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/doors/hooks/hooktemporal"
	"github.com/intentq/intentq/internal/testkit/fakebot"
)

// killAtPrint is a hook's stdout that kills the worker (SIGKILL, waited for) when the hook
// prints what it took, before the write returns: the hook commits after its print, so the
// worker is gone exactly between the two.
type killAtPrint struct {
	mu     sync.Mutex
	want   string
	kill   func()
	killed bool
	out    bytes.Buffer
}

func (k *killAtPrint) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.out.Write(p)
	if !k.killed && strings.Contains(k.out.String(), k.want) {
		k.killed = true
		k.kill()
	}
	return len(p), nil
}

// Issue 32: a message taken by a hook while the agent works, the worker (and its embedded
// server) killed with SIGKILL right after the hook printed it and before it committed. The hook
// records the commit on disk; the next worker applies it before its workflows run: after the
// restart, and after the take's lease has long ended, the message is neither handed over nor
// typed again, and it counts delivered. A message sent after it is typed once, alone. The hooks
// reach Temporal themselves, as `starter hook` does.
func TestHookCommitSurvivesWorkerKill(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	hookCommitSurvivesWorkerKill(t, false)
}

// TestHookBinaryCommitSurvivesWorkerKill is TestHookCommitSurvivesWorkerKill with the hooks as
// intentq-hook runs them (issue 38): what the desk does not answer goes to `starter hook
// backend`, a child that has the Temporal SDK.
func TestHookBinaryCommitSurvivesWorkerKill(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	hookCommitSurvivesWorkerKill(t, true)
}

func hookCommitSurvivesWorkerKill(t *testing.T, viaChild bool) {
	bin := binaries(t)
	bot := fakebot.New("32:kill")
	env, home, pane := standInSecretary(t, bin, "32:kill", bot)
	w, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 90*time.Second)
	dataDir := filepath.Join(home, ".intentq")
	port := envValue(t, env, "INTENTQ_TEMPORAL_EMBEDDED_PORT")

	// The agent's hooks, run here as Claude Code runs `starter hook`: through the worker's desk,
	// and Temporal (or intentq-hook's starter child) when it does not answer.
	dial := func(ctx context.Context) (hooks.Backend, func(), error) {
		tok, err := trust.ReadToken(trust.TokenPath(dataDir))
		if err != nil {
			return nil, nil, err
		}
		temporal, closeFn := hooks.Lazy(func(ctx context.Context) (hooks.Backend, func(), error) {
			if viaChild {
				child, err := desksocket.StartChild(func() *exec.Cmd {
					cmd := exec.Command(filepath.Join(bin, "starter"), "hook", "backend")
					cmd.Env = env
					return cmd
				})
				if err != nil {
					return nil, nil, err
				}
				return child.Client(), func() { _ = child.Close() }, nil
			}
			c, err := client.DialContext(ctx, client.Options{HostPort: "127.0.0.1:" + port,
				Credentials: client.NewAPIKeyStaticCredentials(tok), ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}})
			if err != nil {
				return nil, nil, err
			}
			return hooktemporal.Temporal{Client: c}, c.Close, nil
		})
		return hooks.ThroughDesk(dataDir, tok, temporal), closeFn, nil
	}
	settings := hooks.Settings{Session: "secretary", Agent: "secretary", DataDir: dataDir, StopTyped: true}
	hook := func(event, input string, out *killAtPrint) {
		t.Helper()
		if err := hooks.Run(context.Background(), event, strings.NewReader(input), out, settings, dial, 5*time.Second); err != nil {
			t.Fatalf("hook %s: %v", event, err)
		}
	}
	nothing := func() *killAtPrint { return &killAtPrint{want: "\x00never", kill: func() {}} }

	hook("user-prompt-submit", `{"session_id":"s","prompt":"a long job","prompt_id":"p1"}`, nothing())
	bot.AddMessage(42, 42, 1, "the first message, printed once")
	kill := func() {
		_ = w.Process.Kill()
		_ = w.Wait()
	}
	var tookAt time.Time
	for i, deadline := 1, time.Now().Add(60*time.Second); ; i++ {
		out := &killAtPrint{want: "the first message", kill: kill}
		hook("post-tool-use", fmt.Sprintf(`{"session_id":"s","tool_name":"Bash","tool_input":{"command":"make"},"tool_use_id":"toolu_%d"}`, i), out)
		if out.killed {
			tookAt = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no post-tool-use hook was handed the first message")
		}
		time.Sleep(100 * time.Millisecond)
	}
	records, err := os.ReadDir(desksocket.CommitsDir(dataDir))
	if err != nil || len(records) != 1 {
		t.Fatalf("the hook's commit with the worker gone: records %v %v, want one", records, err)
	}

	w, lines = startWorker(t, bin, env)
	waitFor(t, lines, "ready", 90*time.Second)
	// The turn ends; the agent is idle: what waits would be typed now.
	hook("stop", `{"session_id":"s","stop_hook_active":false,"last_assistant_message":"done"}`, nothing())
	shown := func() string { return starterRun(t, env, 0, "show", "intent/42/1", "--json") }
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(shown(), `"delivered_at"`); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the recorded commit did not count the message delivered:\n%s", shown())
		}
	}
	if left, _ := os.ReadDir(desksocket.CommitsDir(dataDir)); len(left) != 0 {
		t.Errorf("the applied record is still there: %v", left)
	}
	// Once the take's lease has ended (an uncommitted take goes back to the queue then), a second
	// message: typed alone; the first is not typed with it, nor handed to a hook.
	for time.Since(tookAt) < 35*time.Second {
		out := nothing()
		hook("session-start", `{"session_id":"s2","source":"compact"}`, out)
		if strings.Contains(out.out.String(), "the first message") && !strings.Contains(out.out.String(), "id=intent/42/1 chat=42") {
			t.Fatalf("the first message was handed over again:\n%s", out.out.String())
		}
		time.Sleep(2 * time.Second)
	}
	bot.AddMessage(42, 42, 2, "the second message")
	var typed string
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(typed, "the second message"); time.Sleep(200 * time.Millisecond) {
		data, _ := os.ReadFile(pane)
		typed = string(data)
		if time.Now().After(deadline) {
			cmd := exec.Command(filepath.Join(bin, "starter"), "session", "show", "secretary")
			cmd.Env = env
			state, _ := cmd.CombinedOutput()
			t.Fatalf("the second message was not typed; pane %q; session:\n%s", typed, state)
		}
	}
	// The stand-in writes what reaches the agent: typed prompts, and what its stop hook says (a
	// reminder of the intents still pending, the first among them, is not a delivery).
	if strings.Contains(typed, "【新着メッセージ】msg_id=1 chat=42") {
		t.Fatalf("the first message, printed by the hook before the kill, was typed again:\n%s", typed)
	}
}
