// Package procs runs intentq's binaries in tests as a user would: built once per test binary,
// started with an environment, their JSON log lines read as they come.
package procs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// Root is the repository's root (where go.mod is), found from the working directory.
func Root() string {
	dir, _ := os.Getwd()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}

// Binaries builds bin/worker and bin/starter into a temporary folder once and returns it.
func Binaries(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "intentq-bin")
		for _, name := range []string{"worker", "starter", "intentq-hook"} {
			if buildErr != nil {
				return
			}
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), "./"+name)
			cmd.Dir = Root()
			if name == "intentq-hook" {
				// Built as make build and the Docker image build it: static, without cgo.
				cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %v\n%s", name, err, out)
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// Worker is a running worker process.
type Worker struct {
	Cmd *exec.Cmd
	// Lines are its log lines, decoded (non-JSON lines as {"msg": "non-JSON: ..."}).
	Lines <-chan map[string]any
}

// StartWorker starts bin/worker with env (JSON logs); the test's end kills it.
func StartWorker(t testing.TB, bin string, env []string) *Worker {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "worker"), "--log-format", "json")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tail := &logTail{}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %d's last lines at warn or about a session:\n%s", cmd.Process.Pid, tail.String())
		}
	})
	lines := make(chan map[string]any, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var entry map[string]any
			if json.Unmarshal(sc.Bytes(), &entry) != nil {
				entry = map[string]any{"msg": "non-JSON: " + sc.Text()}
			}
			tail.add(entry, sc.Text())
			select {
			case lines <- entry:
			default: // nobody reads any more; drop
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	return &Worker{Cmd: cmd, Lines: lines}
}

// WaitFor waits for a log line with message msg and returns it.
func (w *Worker) WaitFor(t testing.TB, msg string, timeout time.Duration) map[string]any {
	t.Helper()
	return WaitFor(t, w.Lines, msg, timeout)
}

// WaitFor waits for a log line with message msg among lines and returns it; it fails the test
// with what was logged when the worker exits or timeout passes first.
func WaitFor(t testing.TB, lines <-chan map[string]any, msg string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case entry, ok := <-lines:
			if !ok {
				t.Fatalf("worker exited before %q; it logged:\n%s", msg, strings.Join(seen, "\n"))
			}
			if entry["msg"] == msg {
				return entry
			}
			seen = append(seen, fmt.Sprint(entry))
		case <-deadline:
			t.Fatalf("no %q within %s; worker logged:\n%s", msg, timeout, strings.Join(seen, "\n"))
		}
	}
}

// Cleanup removes the built binaries; TestMain calls it after the tests.
func Cleanup() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// tailLines is how many of a worker's lines a failed test shows.
const tailLines = 120

// logTail keeps a worker's last lines that a failure's account needs: warnings and errors, and
// what it logged of a session (its workflows' typing, looks and receipts).
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) add(entry map[string]any, raw string) {
	level, _ := entry["level"].(string)
	_, session := entry["session"]
	if level != "warn" && level != "error" && !session {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == tailLines {
		l.lines = l.lines[1:]
	}
	l.lines = append(l.lines, raw)
}

// String is the kept lines, oldest first.
func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
