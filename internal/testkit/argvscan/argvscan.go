// Package argvscan plays another local user who reads every process's command line from /proc
// (issue 33: message text and the access token never on a command line). Start runs the
// scanner as a given uid; what it saw is searched after the act.
package argvscan

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// script reads every process's command line over and over (NUL-separated words joined by
// spaces), one per line, until it is killed, with bash builtins only (no fork per process, so a
// sweep takes milliseconds and short-lived processes are seen). It runs in bash as the other
// user: no binary of the test's (in a private folder) needs to be readable by them.
const script = `while :; do for f in /proc/[0-9]*/cmdline; do { while IFS= read -r -d '' w; do printf '%s ' "$w"; done; printf '%s\n' "$w"; } < "$f" 2>/dev/null; done; done`

// Scanner is the other user's scan in progress.
type Scanner struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	seen   map[string]bool
	done   chan struct{}
	cancel context.CancelFunc
}

// Start runs the scan as uid (the test must run as root to take another uid; without it the
// test fails: it cannot play the attack).
func Start(t testing.TB, uid int) *Scanner {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("playing another local user needs root (to run the scan as another uid): run the tests as root, as CI does")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scanner{seen: map[string]bool{}, done: make(chan struct{}), cancel: cancel}
	s.cmd = exec.CommandContext(ctx, "/bin/bash", "-c", script)
	s.cmd.Dir = "/"
	s.cmd.Env = []string{"PATH=/usr/bin:/bin"}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}, Setpgid: true}
	s.cmd.Cancel = func() error { return syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) }
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start the scan as uid %d: %v", uid, err)
	}
	go s.read(out)
	t.Cleanup(func() { s.Stop() })
	return s
}

func (s *Scanner) read(r io.Reader) {
	defer close(s.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		s.mu.Lock()
		s.seen[line] = true
		s.mu.Unlock()
	}
}

// Saw reports whether any command line read so far contains needle.
func (s *Scanner) Saw(needle string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for line := range s.seen {
		if strings.Contains(line, needle) {
			return true
		}
	}
	return false
}

// Lines returns the command lines read that contain needle.
func (s *Scanner) Lines(needle string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for line := range s.seen {
		if strings.Contains(line, needle) {
			out = append(out, line)
		}
	}
	return out
}

// Canary proves the scan is real: it runs a process of the test's own user whose command line
// carries a random word, and waits (up to timeout) until the other user has read it.
func (s *Scanner) Canary(t testing.TB, timeout time.Duration) {
	t.Helper()
	word := fmt.Sprintf("argv-canary-%d", time.Now().UnixNano())
	cmd := exec.Command("/bin/sh", "-c", "sleep 60", word)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for deadline := time.Now().Add(timeout); !s.Saw(word); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the other user's scan did not read a command line of ours in %s: the scan would prove nothing (is /proc mounted with hidepid?)", timeout)
		}
	}
}

// Stop ends the scan.
func (s *Scanner) Stop() {
	s.cancel()
	if s.cmd.Process != nil {
		_ = s.cmd.Wait()
	}
	<-s.done
}
