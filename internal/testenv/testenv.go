// Package testenv has helpers shared by intentq's tests: free ports and configurations that
// point everything at a temporary directory.
package testenv

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/intentq/intentq/config"
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

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
	cfg, err := config.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log.Format = "json"
	cfg.Temporal.Embedded.Port = FreePort(t)
	cfg.Temporal.Embedded.UIPort = FreePort(t)
	cfg.Ingest.Listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	return cfg
}
