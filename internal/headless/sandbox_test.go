package headless

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bwrapOrFail returns bubblewrap: a missing sandbox fails the test (scripts/install-peers
// installs it), it never skips.
func bwrapOrFail(t *testing.T) string {
	t.Helper()
	p, err := sandboxProgram()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 33: the kernel confines a run. A read-only channel's run writes nowhere (not its work
// folder, not the person's files, not another channel's folder); a writing channel's run writes
// its own work folder only; both write their channel's home; neither reads a private path, even
// one under its work folder; /tmp is the run's own.
func TestSandboxConfines(t *testing.T) {
	program := bwrapOrFail(t)
	data := t.TempDir()
	person := t.TempDir() // the person's home
	secret := filepath.Join(person, ".ssh", "id_ed25519")
	token := filepath.Join(data, "access.token")
	other := filepath.Join(data, "headless", "s", "web", "work")
	readable, err := filepath.Abs("../../go.mod") // the person's files outside the private ones
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{secret, token, filepath.Join(other, "notes.txt"), filepath.Join(person, "project", "README.md")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("SECRET "+f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A socket folder under /run (D-Bus, systemd, ssh agents live there): not in the sandbox.
	hostRun, err := os.MkdirTemp("/run", "intentq-sandbox-")
	if err != nil {
		t.Fatalf("a folder under /run (the test runs as root, as CI does): %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(hostRun) })
	hostTmp := filepath.Join(os.TempDir(), "intentq-sandbox-host-"+filepath.Base(data))
	if err := os.WriteFile(hostTmp, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(hostTmp) })

	run := func(t *testing.T, sb Sandbox, script string) string {
		t.Helper()
		prog, args := sb.Wrap("/bin/sh", []string{"-c", script})
		cmd := exec.Command(prog, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + sb.Home}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sandboxed sh: %v\n%s", err, out)
		}
		return string(out)
	}
	attempts := strings.Join([]string{
		`try() { if "$@" 2>/dev/null; then echo "OK $*"; else echo "NO $*"; fi; }`,
		`try touch ./mine`, `try touch $HOME/state`, `try touch ` + filepath.Join(person, "project", "x"),
		`try touch ` + filepath.Join(other, "planted"), `try touch /etc/intentq-pwned`,
		`try cat ` + secret, `try cat ` + token, `try cat ` + filepath.Join(other, "notes.txt"),
		`try cat ` + hostTmp, `try touch /tmp/scratch`, `try cat ` + readable, `try ls ` + hostRun,
	}, "\n")
	for _, tc := range []struct {
		name     string
		writable bool
		want     []string
	}{
		{"read-only channel", false, []string{"NO touch ./mine", "OK touch " + "$HOME/state"}},
		{"writing channel", true, []string{"OK touch ./mine", "OK touch " + "$HOME/state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(data, "headless", "s", strings.ReplaceAll(tc.name, " ", "-"))
			sb := Sandbox{Program: program, Work: filepath.Join(root, "work"), Writable: tc.writable, Home: filepath.Join(root, "home"),
				Hide: []string{data, filepath.Join(person, ".ssh")}}
			for _, d := range []string{sb.Work, sb.Home} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			out := run(t, sb, attempts)
			want := append(tc.want,
				"NO touch "+filepath.Join(person, "project", "x"), "NO touch "+filepath.Join(other, "planted"), "NO touch /etc/intentq-pwned",
				"NO cat "+secret, "NO cat "+token, "NO cat "+filepath.Join(other, "notes.txt"), "NO cat "+hostTmp,
				"OK touch /tmp/scratch", "OK cat "+readable, "NO ls "+hostRun)
			for _, w := range want {
				w = strings.ReplaceAll(w, "$HOME", sb.Home)
				if !strings.Contains(out, w+"\n") {
					t.Errorf("want %q in:\n%s", w, out)
				}
			}
			for _, f := range []string{filepath.Join(other, "planted"), "/etc/intentq-pwned", filepath.Join(person, "project", "x")} {
				if _, err := os.Stat(f); err == nil {
					t.Errorf("%s was written from the sandbox", f)
				}
			}
			if _, err := os.Stat(filepath.Join(sb.Work, "mine")); (err == nil) != tc.writable {
				t.Errorf("work folder written: %v, want %v", err == nil, tc.writable)
			}
		})
	}
}

// The person's login files of the CLI kind are shown read-only in the channel's home; a work
// folder of ~ still hides ~/.ssh (hiding comes after the binding of its parent).
func TestSandboxShowsLoginsAndHidesInsideWork(t *testing.T) {
	program := bwrapOrFail(t)
	person := t.TempDir()
	for f, content := range map[string]string{".claude/.credentials.json": "login", ".gitconfig": "[user]\n", ".ssh/id_ed25519": "KEY"} {
		p := filepath.Join(person, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	sb := Sandbox{Program: program, Work: person, Writable: true, Home: home,
		Hide: []string{filepath.Join(person, ".ssh"), filepath.Join(person, ".claude/.credentials.json")},
		Show: showLogins("claude", person, home)}
	prog, args := sb.Wrap("/bin/sh", []string{"-c", `cat $HOME/.claude/.credentials.json; echo; cat ` + filepath.Join(person, ".ssh/id_ed25519") +
		` 2>/dev/null || echo no-key; cat ` + filepath.Join(person, ".claude/.credentials.json") + ` 2>/dev/null || echo hidden; (echo x > $HOME/.claude/.credentials.json) 2>/dev/null || echo ro`})
	cmd := exec.Command(prog, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := string(out); got != "login\nno-key\nhidden\nro\n" {
		t.Errorf("got %q, want the login shown read-only in the channel's home, the key and the original login hidden", got)
	}
}

// Git never takes a planted folder for a bare repository and never runs a repository's
// fsmonitor (issue 33, item 1).
func TestGitEnvRunsNoRepositoryProgram(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "PWNED")
	plant := filepath.Join(dir, "plant")
	if err := os.MkdirAll(filepath.Join(plant, "objects"), 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(filepath.Join(plant, "refs"), 0o700)
	_ = os.WriteFile(filepath.Join(plant, "HEAD"), []byte("ref: refs/heads/main\n"), 0o600)
	_ = os.WriteFile(filepath.Join(plant, "config"), []byte("[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch "+marker+"; echo\n"), 0o600)
	repo := filepath.Join(dir, "repo")
	git := func(dir string, env []string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}, env...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	git(dir, nil, "init", "-q", repo)
	_ = os.WriteFile(filepath.Join(repo, "f"), []byte("a\n"), 0o600)
	git(repo, nil, "config", "core.fsmonitor", "touch "+marker+"; echo")
	git(repo, nil, "config", "core.hooksPath", "hooks")
	_ = os.MkdirAll(filepath.Join(repo, "hooks"), 0o700)
	_ = os.WriteFile(filepath.Join(repo, "hooks", "pre-commit"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o700)
	git(repo, GitEnv(), "add", "f")
	git(repo, GitEnv(), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x")
	out := git(repo, GitEnv(), "status", "--short")
	git(plant, GitEnv(), "status")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("git ran a repository's program with GitEnv (status: %s)", out)
	}
	if log := git(repo, GitEnv(), "log", "--oneline"); !strings.Contains(log, "x") {
		t.Errorf("git log must keep working: %s", log)
	}
	// The check is real: without GitEnv the same status runs the fsmonitor.
	git(repo, nil, "status")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("without GitEnv the repository's fsmonitor did not run either: the test plants nothing")
	}
}

// A conversation is resumed only from the channel's own home, where the CLI keeps it.
func TestHoldsConversation(t *testing.T) {
	home := t.TempDir()
	id := "bb2d13a4-6bf0-4eaa-a111-0727cdcb7d8e"
	if holdsConversation("claude", home, id) {
		t.Fatal("an empty home holds no conversation")
	}
	p := filepath.Join(home, ".claude", "projects", "-data-headless-batch-web-work", id+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !holdsConversation("claude", home, id) || holdsConversation("claude", home, "00000000-0000-0000-0000-000000000000") {
		t.Error("the transcript is not found by its id, or another id is")
	}
	// Many other files in the home (caches, debug logs) do not hide it.
	for i := 0; i < 200; i++ {
		_ = os.WriteFile(filepath.Join(home, ".claude", fmt.Sprintf("debug-%03d.txt", i)), nil, 0o600)
	}
	if !holdsConversation("claude", home, id) {
		t.Error("a busy home hides the transcript")
	}
	if !holdsConversation("gemini", home, "00000000-0000-0000-0000-000000000000") {
		t.Error("a kind whose files are not known must keep its resume")
	}
}
