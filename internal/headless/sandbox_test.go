package headless

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentq/intentq/config"
)

// bwrapOrFail returns bubblewrap: a missing sandbox fails the test (scripts/install-peers
// installs it), it never skips.
func bwrapOrFail(t *testing.T) bwrap {
	t.Helper()
	bw, err := sandboxProgram()
	if err != nil {
		t.Fatal(err)
	}
	return bw
}

// Issue 33: the kernel confines a run. A read-only channel's run writes nowhere (not its work
// folder, not the person's files, not another channel's folder); a writing channel's run writes
// its own work folder only; both write their channel's home; neither reads a private path, even
// one under its work folder; /tmp is the run's own.
func TestSandboxConfines(t *testing.T) {
	bw := bwrapOrFail(t)
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
			sb := Sandbox{Program: bw.program, NoNestedUserns: bw.noNestedUserns, Work: filepath.Join(root, "work"), Writable: tc.writable, Home: filepath.Join(root, "home"),
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
	bw := bwrapOrFail(t)
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
	sb := Sandbox{Program: bw.program, NoNestedUserns: bw.noNestedUserns, Work: person, Writable: true, Home: home,
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

// Whoever runs the worker (root, as in a container or the project's
// Dockerfile, and a normal user), a run has no capabilities, cannot change its mounts (unmount
// the tmpfs over data_dir, remount / writable, start a user namespace of its own), and sees
// nothing of the person's home but its CLI's login: not data_dir's token, not the tmux server's
// socket under /tmp, not other agents' transcripts, credential files, histories or any other file
// of the home. Real bubblewrap; as root bwrap used to keep every capability inside the run.
func TestSandboxHoldsWhoeverRunsIt(t *testing.T) {
	bw := bwrapOrFail(t)
	if os.Getuid() != 0 {
		t.Fatal("this test plays the worker as root and as another user: run it as root (CI does)")
	}
	for _, tc := range []struct {
		name string
		uid  uint32
	}{{"root", 0}, {"a normal user", 65534}} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := os.MkdirTemp("", "intentq-sandbox-holds-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(base) })
			person := filepath.Join(base, "home")
			data := filepath.Join(person, ".intentq")
			token := filepath.Join(data, "access.token")
			tmux := filepath.Join(base, "tmux-sockets", "default") // stands in for /tmp/tmux-<uid>/default
			files := map[string]string{
				token: "TOKEN",
				filepath.Join(person, ".claude", "projects", "-p", "t.jsonl"): "TRANSCRIPT",
				filepath.Join(person, ".claude.json"):                         `{"primaryApiKey":"KEY"}`,
				filepath.Join(person, ".claude", ".credentials.json"):         "LOGIN",
				filepath.Join(person, ".codex", "auth.json"):                  "CODEX",
				filepath.Join(person, ".bash_history"):                        "HISTORY",
				filepath.Join(person, ".npmrc"):                               "NPM",
				filepath.Join(person, "notes", "diary.txt"):                   "DIARY",
				filepath.Join(base, "config.yaml"):                            "telegram: {token: INLINE}",
				tmux:                                                          "SOCKET",
			}
			for f, content := range files {
				if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			root := filepath.Join(data, "headless", "s", "web")
			sb := Sandbox{Program: bw.program, NoNestedUserns: bw.noNestedUserns, Work: filepath.Join(root, "work"), Writable: true,
				Home: filepath.Join(root, "home"), PersonHome: person,
				Hide: append(PrivatePaths(&config.Config{DataDir: data, File: filepath.Join(base, "config.yaml")}, person), filepath.Dir(tmux)),
				Show: showLogins("claude", person, filepath.Join(root, "home"))}
			for _, d := range []string{sb.Work, sb.Home} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if tc.uid != 0 {
				if err := filepath.WalkDir(base, func(p string, _ os.DirEntry, err error) error {
					if err != nil {
						return err
					}
					return os.Lchown(p, int(tc.uid), int(tc.uid))
				}); err != nil {
					t.Fatal(err)
				}
			}
			var reads []string
			for f := range files {
				reads = append(reads, `try cat `+f)
			}
			script := strings.Join(append([]string{
				`try() { if "$@" >/dev/null 2>&1; then echo "OK $*"; else echo "NO $*"; fi; }`,
				`grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/self/status`,
				`try umount -l ` + data, `try umount -l /tmp`, `try mount -o remount,rw /`, `try mount -t tmpfs none ` + sb.Work,
				`try unshare -Ur true`, `try touch ` + filepath.Join(base, "escaped"), `try touch /etc/` + filepath.Base(base),
				`try cat $HOME/.claude/.credentials.json`, `try touch ./mine`,
			}, reads...), "\n")
			prog, args := sb.Wrap("/bin/sh", []string{"-c", script})
			cmd := exec.Command(prog, args...)
			cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + sb.Home}
			if tc.uid != 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tc.uid, Gid: tc.uid}}
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("sandboxed sh: %v\n%s", err, out)
			}
			got := strings.ReplaceAll(string(out), sb.Home, "$HOME")
			for _, line := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1",
				"NO umount -l " + data, "NO umount -l /tmp", "NO mount -o remount,rw /", "NO mount -t tmpfs none " + sb.Work,
				"NO unshare -Ur true", "NO touch /etc/" + filepath.Base(base),
				"OK cat $HOME/.claude/.credentials.json", "OK touch ./mine"} {
				if !strings.Contains(got, line+"\n") {
					t.Errorf("want %q in:\n%s", line, got)
				}
			}
			for f := range files {
				if !strings.Contains(got, "NO cat "+f+"\n") {
					t.Errorf("%s is readable in the run:\n%s", f, got)
				}
			}
			// /tmp is the run's own: what it writes there never reaches the host's.
			for _, f := range []string{filepath.Join(base, "escaped"), "/etc/" + filepath.Base(base)} {
				if _, err := os.Stat(f); err == nil {
					_ = os.Remove(f)
					t.Errorf("the run wrote %s on the host", f)
				}
			}
		})
	}
}

// A CLI installed under a folder the sandbox hides (/tmp, the home) through a node_modules/.bin
// link into its package still starts: both the link's folder and the package are shown (a
// checkout under /tmp failed `bwrap: execvp ...: No such file or directory`).
func TestSandboxStartsAProgramLinkedUnderAHiddenFolder(t *testing.T) {
	bw := bwrapOrFail(t)
	base, err := os.MkdirTemp("", "intentq-sandbox-link-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	pkg := filepath.Join(base, "node_modules", "@scope", "tool")
	bin := filepath.Join(base, "node_modules", ".bin")
	for _, d := range []string{filepath.Join(pkg, "bin"), bin, filepath.Join(base, "work"), filepath.Join(base, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(pkg, "lib.txt"), []byte("from the package\n"), 0o600)
	script := "#!/bin/sh\ncat \"$(dirname \"$(readlink -f \"$0\")\")/../lib.txt\"\n"
	if err := os.WriteFile(filepath.Join(pkg, "bin", "tool.sh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(bin, "tool")
	if err := os.Symlink("../@scope/tool/bin/tool.sh", link); err != nil {
		t.Fatal(err)
	}
	sb := Sandbox{Program: bw.program, NoNestedUserns: bw.noNestedUserns, Work: filepath.Join(base, "work"), Home: filepath.Join(base, "home"),
		PersonHome: base, Programs: programFolders(link)}
	prog, args := sb.Wrap(link, nil)
	out, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil || string(out) != "from the package\n" {
		t.Fatalf("the linked program did not run in the sandbox: %v\n%s", err, out)
	}
}

// The same program reached through a linked folder (a checkout whose .tools is a link into
// another checkout, under a hidden home): the run starts the file itself.
func TestSandboxStartsAProgramThroughALinkedFolder(t *testing.T) {
	for _, tc := range []struct {
		name, parent string
		hideHome     bool
	}{
		{"under a hidden home", os.TempDir(), true},
		// On the read-only root: bwrap cannot make a mount point through the link there.
		{"on the read-only root", "/var/tmp", false},
	} {
		t.Run(tc.name, func(t *testing.T) { startThroughLinkedFolder(t, tc.parent, tc.hideHome) })
	}
}

func startThroughLinkedFolder(t *testing.T, parent string, hideHome bool) {
	bw := bwrapOrFail(t)
	base, err := os.MkdirTemp(parent, "intentq-sandbox-linkdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	real := filepath.Join(base, "elsewhere", "node_modules")
	for _, d := range []string{filepath.Join(real, "tool", "bin"), filepath.Join(real, ".bin"), filepath.Join(base, "home", "checkout"), filepath.Join(base, "work")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(real, "tool", "bin", "tool.sh"), []byte("#!/bin/sh\necho started\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../tool/bin/tool.sh", filepath.Join(real, ".bin", "tool")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "home", "checkout", "node_modules")); err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(base, "home", "checkout", "node_modules", ".bin", "tool")
	sb := Sandbox{Program: bw.program, NoNestedUserns: bw.noNestedUserns, Work: filepath.Join(base, "work"), Home: filepath.Join(base, "work"),
		Hide: []string{filepath.Join(base, "elsewhere")}, Programs: programFolders(named)}
	if hideHome {
		sb.PersonHome = filepath.Join(base, "home")
	}
	prog, args := sb.Wrap(named, nil)
	if out, err := exec.Command(prog, args...).CombinedOutput(); err != nil || string(out) != "started\n" {
		t.Fatalf("the program reached through a linked folder did not start: %v\n%s", err, out)
	}
}
