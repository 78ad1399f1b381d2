// Package testenv has helpers shared by intentq's tests: free ports and configurations that
// point everything at a temporary directory.
package testenv

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/service"
	"github.com/intentq/intentq/internal/testkit/peers"
)

// Ports handed out by FreePort lie below Linux's ephemeral range (32768-60999), so the kernel
// never gives one to another socket, and each is reserved by a lock file for the test's life,
// so test processes running side by side (go test runs packages in parallel) never pick the
// same one. A port picked by binding :0 and closing could be taken by a neighbour before the
// service binds it, and the Web UI server exits the process on a bind error. They also lie
// below the ports an embedded server picks for its internal services (from 20000 up to the
// ephemeral range): a port a test reserved for a worker that has not bound it yet could
// otherwise be picked by another worker's server starting meanwhile ("address already in use").
const (
	portLow, portHigh = 12000, 20000
)

// FreePort returns a loopback TCP port that is free and reserved for this test.
func FreePort(t testing.TB) int {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "intentq-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		port := portLow + rand.IntN(portHigh-portLow)
		lock := filepath.Join(dir, strconv.Itoa(port))
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // another test holds it
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			f.Close()
			continue
		}
		l.Close()
		// The lock goes with the process: held until the test ends (or the process dies).
		t.Cleanup(func() { f.Close() })
		return port
	}
	t.Fatal("no free port between 12000 and 32000")
	return 0
}

// StandInProcessNames are the programs that stand in for an agent CLI in tests (a pane reading
// what is typed: `cat`, or a shell's read loop), as the value of clis.<kind>.process_names
// (comma-separated, e.g. INTENTQ_CLIS_CLAUDE_PROCESS_NAMES). Nothing is typed into a pane whose
// foreground program is not one of a CLI's process names; tests that play a pane whose agent
// has exited run bash, which is not in the list. Tests set SHELL=/bin/sh so that tmux runs a
// stand-in's shell loop in sh rather than the user's login shell.
const StandInProcessNames = "claude,cat,sh"

// Config loads the default configuration with HOME and data_dir in a temporary directory, no
// INTENTQ_* variables from the caller, a private tmux server (TMUX_TMPDIR), and the embedded
// server, UI and ingest on free ports.
func Config(t testing.TB) *config.Config {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, config.EnvPrefix+"_") {
			t.Setenv(name, "")
			_ = os.Unsetenv(name)
		}
	}
	// Tests never type into the developer's own tmux sessions.
	t.Setenv("TMUX_TMPDIR", t.TempDir())
	t.Setenv("TMUX", "")
	// Stand-in panes' shell loops run in sh (StandInProcessNames), not the login shell that
	// tmux would use without SHELL.
	t.Setenv("SHELL", "/bin/sh")
	cfg, err := config.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log.Format = "json"
	cfg.Temporal.Embedded.Port = FreePort(t)
	cfg.Temporal.Embedded.UIPort = FreePort(t)
	cfg.Ingest.Listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	cfg.Metrics.Listen = "127.0.0.1:0"
	claude := cfg.CLIs["claude"]
	claude.ProcessNames = strings.Split(StandInProcessNames, ",")
	cfg.CLIs["claude"] = claude
	return cfg
}

// StartService starts the whole service with cfg. Ports picked by FreePort can be taken by a
// parallel test process before the service binds them, so on "address already in use" it picks
// new ports and tries again. The service is stopped when the test ends.
func StartService(t testing.TB, cfg *config.Config, logger *zap.Logger, opts ...service.Option) *service.Service {
	t.Helper()
	for attempt := 1; ; attempt++ {
		svc, err := service.Start(context.Background(), cfg, logger, opts...)
		if err == nil {
			t.Cleanup(func() { svc.Stop(context.Background()) })
			return svc
		}
		if attempt == 5 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		cfg.Temporal.Embedded.Port = FreePort(t)
		cfg.Temporal.Embedded.UIPort = FreePort(t)
		cfg.Ingest.Listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	}
}

// HooksSettings is the settings.json hooks block docs/agents.md tells users to paste.
const HooksSettings = `{
  "hooks": {
    "SessionStart": [{"hooks": [{"type": "command", "command": "starter hook session-start", "timeout": 10}]}],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "starter hook user-prompt-submit", "timeout": 10}]}],
    "PreToolUse": [{"hooks": [{"type": "command", "command": "starter hook pre-tool-use", "timeout": 10}]}],
    "PostToolUse": [{"hooks": [{"type": "command", "command": "starter hook post-tool-use", "timeout": 10}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "starter hook stop", "timeout": 10}]}],
    "Notification": [{"hooks": [{"type": "command", "command": "starter hook notification", "timeout": 10}]}],
    "SessionEnd": [{"hooks": [{"type": "command", "command": "starter hook session-end", "timeout": 10}]}],
    "PermissionRequest": [{"hooks": [{"type": "command", "command": "starter hook permission-request", "timeout": 3600}]}]
  }
}`

// Agent sets up what the doctor expects of a running secretary: a live tmux pane for the
// session's target (on the test's private tmux server, TMUX_TMPDIR from env) and the hooks in
// settingsPath. The pane's program survives C-c and reads everything typed.
func Agent(t testing.TB, env []string, target, settingsPath string) {
	t.Helper()
	peers.Tmux(t)
	session := strings.Split(target, ":")[0]
	cmd := exec.Command("tmux", "new-session", "-d", "-s", session, "trap '' INT; stty -echo; exec cat > /dev/null")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() {
		k := exec.Command("tmux", "kill-server")
		k.Env = env
		_ = k.Run()
	})
	// The pane's shell takes a moment to exec cat: until then a check of its program sees the
	// shell (or its first command).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		show := exec.Command("tmux", "display-message", "-p", "-t", session, "#{pane_current_command}")
		show.Env = env
		out, err := show.Output()
		if err == nil && strings.TrimSpace(string(out)) == "cat" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in agent's pane shows %q (%v), want cat", out, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(settingsPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settingsPath, []byte(HooksSettings), 0o600); err != nil {
		t.Fatal(err)
	}
}
