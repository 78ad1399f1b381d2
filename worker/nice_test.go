package main_test

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentq/intentq/internal/platform/niceness"
)

// The worker yields the CPU to the agents and their hooks: every thread of a running worker,
// its embedded server's included, runs at the configured niceness (5 by default).
func TestWorkerRunsAtItsNiceness(t *testing.T) {
	t.Parallel()
	env, _, _ := ingestEnv(t)
	cmd, lines := startWorker(t, binaries(t), env)
	waitFor(t, lines, "ready", 60*time.Second)
	// A user's process may only become nicer: started nicer than 5, the worker stays so.
	want := 5
	if own, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err == nil && os.Geteuid() != 0 && 20-own > want {
		want = 20 - own
	}
	threads, err := niceness.Of(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) < 4 {
		t.Fatalf("the worker has %d threads", len(threads))
	}
	for tid, n := range threads {
		if n != want {
			t.Errorf("thread %d of the worker at niceness %d, want %d", tid, n, want)
		}
	}
}
