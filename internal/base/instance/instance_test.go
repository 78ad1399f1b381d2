package instance

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 38: a second worker on the same data_dir is refused at once, naming the first; once the
// first lets go (or dies), the next one starts.
func TestOneWorkerPerDataDir(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	var inUse *InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("second acquire: %v, want InUseError", err)
	}
	if inUse.Holder.PID != os.Getpid() || !strings.Contains(err.Error(), "pid ") || !strings.Contains(err.Error(), dir) {
		t.Errorf("the error names neither the holder nor data_dir: %v", err)
	}
	if info, err := os.Stat(filepath.Join(dir, FileName)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	_ = again.Release()
}

// A worker killed without letting go holds nothing: the kernel drops its lock.
func TestDeadWorkerHoldsNothing(t *testing.T) {
	if os.Getenv("INSTANCE_HOLD") != "" {
		// The holder: before any TempDir of its own, which its exit would leave behind.
		if _, err := Acquire(os.Getenv("INSTANCE_HOLD")); err != nil {
			os.Exit(3)
		}
		os.Exit(0) // dies without Release
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDeadWorkerHoldsNothing$")
	cmd.Env = append(os.Environ(), "INSTANCE_HOLD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("holder: %v: %s", err, out)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	_ = l.Release()
}

// Issue 38: one worker per host and deployment serves the host's sessions; another deployment
// or another host name is another key.
func TestOneWorkerServesAHost(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", privateTemp(t))
	dataDir := t.TempDir()
	k := HostKey{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "intentq", Host: "laptop"}
	first, err := AcquireHost(dataDir, k)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	var inUse *HostInUseError
	// Another worker: another data_dir, the same runtime folder.
	if _, err := AcquireHost(t.TempDir(), k); !errors.As(err, &inUse) || inUse.Holder.PID != os.Getpid() || !strings.Contains(err.Error(), "laptop") {
		t.Fatalf("a second worker for the same host: %v, want HostInUseError", err)
	}
	for _, other := range []HostKey{
		{Address: k.Address, Namespace: k.Namespace, TaskQueue: k.TaskQueue, Host: "server"},
		{Address: "127.0.0.1:17233", Namespace: k.Namespace, TaskQueue: k.TaskQueue, Host: k.Host},
	} {
		l, err := AcquireHost(dataDir, other)
		if err != nil {
			t.Fatalf("%+v: %v", other, err)
		}
		_ = l.Release()
	}
}
