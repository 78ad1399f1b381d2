package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentq/intentq/doctor"
	"github.com/intentq/intentq/internal/testenv"
)

// TestWorkerProcess runs the real binaries as `make run` does: the worker on the embedded
// default logs `ready` with its addresses, `starter doctor` passes against it, and SIGTERM
// shuts it down cleanly.
func TestWorkerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := t.TempDir()
	for _, name := range []string{"worker", "starter"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, name), "../"+name).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}

	home := t.TempDir()
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_UI_PORT=%d", testenv.FreePort(t)),
		fmt.Sprintf("INTENTQ_INGEST_LISTEN=127.0.0.1:%d", testenv.FreePort(t)),
	}
	worker := exec.Command(filepath.Join(bin, "worker"), "--log-format", "json")
	worker.Env = env
	stderr, err := worker.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer worker.Process.Kill()

	lines := make(chan map[string]any, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var entry map[string]any
			if json.Unmarshal(sc.Bytes(), &entry) != nil {
				entry = map[string]any{"msg": "non-JSON: " + sc.Text()}
			}
			lines <- entry
		}
	}()
	ready := waitFor(t, lines, "ready", 60*time.Second)
	for _, key := range []string{"temporal", "ui", "ingest", "task_queue"} {
		if _, ok := ready[key]; !ok {
			t.Errorf("ready line lacks %q: %v", key, ready)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".intentq", "temporal.db")); err != nil {
		t.Errorf("embedded database not in data_dir: %v", err)
	}

	doc := exec.Command(filepath.Join(bin, "starter"), "doctor", "--json")
	doc.Env = env
	var out bytes.Buffer
	doc.Stdout = &out
	doc.Stderr = &out
	if err := doc.Run(); err != nil {
		t.Fatalf("starter doctor: %v\n%s", err, out.String())
	}
	var report doctor.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil || !report.OK() || len(report) < 6 {
		t.Fatalf("doctor --json = %s (%v)", out.String(), err)
	}

	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, lines, "stopped", 40*time.Second)
	if err := worker.Wait(); err != nil {
		t.Errorf("worker exit after SIGTERM: %v", err)
	}

	// With the worker gone, doctor fails and says so with exit code 1.
	doc = exec.Command(filepath.Join(bin, "starter"), "doctor")
	doc.Env = env
	text, err := doc.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Errorf("doctor with nothing running: err %v, want exit 1\n%s", err, text)
	}
	if !strings.Contains(string(text), "FAIL") {
		t.Errorf("doctor output lacks FAIL:\n%s", text)
	}
}

func waitFor(t *testing.T, lines <-chan map[string]any, msg string, timeout time.Duration) map[string]any {
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
