package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Sandbox modes (scheduler.sandbox).
const (
	// SandboxBubblewrap confines every headless run with bubblewrap (bwrap), the default: a run
	// that cannot be confined does not start.
	SandboxBubblewrap = "bwrap"
	// SandboxOff runs the CLI unconfined: only the tool policy's flags and hook stand between a
	// prompt and the machine. For machines where bubblewrap cannot run, by the person's choice.
	SandboxOff = "off"
)

// ErrNoSandbox is wrapped by a resolver's error when the kernel sandbox cannot run here: the
// run does not start (fails closed).
var ErrNoSandbox = errors.New("headless runs are confined by bubblewrap, which cannot run here")

// Sandbox is how the kernel confines one headless run (bubblewrap: mount, PID, IPC and UTS
// namespaces). Inside it the whole file system is read-only, /tmp and /run are fresh private
// tmpfs (no socket there reaches a program outside: D-Bus, systemd, ssh and gpg agents),
// the private paths (intentq's data_dir, secret files, credential stores) are empty, and only
// two folders can be written: the channel's work folder when Writable, and the channel's own
// home (the CLI's state: transcripts for --resume, caches). Each channel of a session has its
// own work folder and home, so nothing one channel's run writes is read, let alone run, by a
// run of another channel (issue 33).
type Sandbox struct {
	// Program is the bwrap executable.
	Program string
	// Work is the run's work folder; Writable says whether the run may write it.
	Work     string
	Writable bool
	// Home is the channel's private home folder, always writable; HOME points there.
	Home string
	// Hide are files and folders the run must not see (they are replaced by empty ones).
	Hide []string
	// Show are files of the person's home the CLI needs (its login, ~/.gitconfig), shown
	// read-only at the same place under Home: key is the source, value the target.
	Show map[string]string
	// Programs are the folders of the programs the run starts (the CLI, the starter its hook
	// runs), shown read-only even where the sandbox hides their parent (/tmp).
	Programs []string
}

// mount is one bwrap mount operation on a path.
type mount struct {
	op       string // --bind, --ro-bind, --tmpfs, --ro-bind-null
	src, dst string
}

// Wrap returns the program and arguments that run command with args in the sandbox; extra are
// folders the run reads that the sandbox would hide (the run's hook settings under /tmp).
func (s Sandbox) Wrap(command string, args []string, extra ...string) (string, []string) {
	out := []string{
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--ro-bind", "/", "/",
		"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		// /run holds the sockets that start programs outside the sandbox (the user's and the
		// system's D-Bus, systemd, the agents of ssh and gpg, docker): all gone, but the
		// resolver's files that /etc/resolv.conf may point to.
		"--tmpfs", "/run",
	}
	if fi, err := os.Stat("/run/systemd/resolve"); err == nil && fi.IsDir() {
		out = append(out, "--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve")
	}
	var mounts []mount
	for _, p := range s.Hide {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			continue // nothing there to hide
		case fi.IsDir():
			mounts = append(mounts, mount{op: "--tmpfs", dst: p})
		default:
			mounts = append(mounts, mount{op: "--ro-bind", src: os.DevNull, dst: p})
		}
	}
	work := "--ro-bind"
	if s.Writable {
		work = "--bind"
	}
	mounts = append(mounts, mount{op: work, src: s.Work, dst: s.Work}, mount{op: "--bind", src: s.Home, dst: s.Home})
	for src, dst := range s.Show {
		mounts = append(mounts, mount{op: "--ro-bind", src: src, dst: dst})
	}
	for _, p := range append(append([]string(nil), s.Programs...), extra...) {
		mounts = append(mounts, mount{op: "--ro-bind", src: p, dst: p})
	}
	// Parents before children: a folder bound back inside a hidden one (the work folder under
	// data_dir) must come after the hiding, a hidden folder inside the work folder (~/.ssh in a
	// work folder of ~) after the binding.
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].dst) < depth(mounts[j].dst) })
	for _, m := range mounts {
		if m.op == "--tmpfs" {
			out = append(out, "--tmpfs", m.dst)
			continue
		}
		out = append(out, m.op, m.src, m.dst)
	}
	out = append(out, "--chdir", s.Work, "--", command)
	return s.Program, append(out, args...)
}

// depth is the number of elements of a clean absolute path.
func depth(p string) int { return strings.Count(filepath.Clean(p), string(filepath.Separator)) }

// probe caches whether bubblewrap runs on this machine, per program.
var probe sync.Map // program -> error

// checkSandbox reports whether program (bwrap) can confine a run on this machine: it runs true
// inside the namespaces a run uses, once per program and process.
func checkSandbox(program string) error {
	if v, ok := probe.Load(program); ok {
		err, _ := v.(error)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, program, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true")
	cmd.Stderr = &stderr
	var err error
	if runErr := cmd.Run(); runErr != nil {
		err = fmt.Errorf("%w (%s: %v: %s): install bubblewrap and allow unprivileged user namespaces, or set scheduler.sandbox: off to run unconfined",
			ErrNoSandbox, program, runErr, strings.TrimSpace(stderr.String()))
	}
	probe.Store(program, err)
	return err
}

// programFolder is the folder of a program (found on PATH when not a path), links followed; empty
// when it cannot be found.
func programFolder(program string) string {
	p, err := exec.LookPath(program)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	if abs, err := filepath.Abs(p); err == nil {
		return filepath.Dir(abs)
	}
	return ""
}

// CanConfine reports whether headless runs can be confined on this machine: nil, or why not
// (wrapping ErrNoSandbox) and what to do.
func CanConfine() error {
	_, err := sandboxProgram()
	return err
}

// sandboxProgram finds bwrap, or says why a run cannot be confined.
func sandboxProgram() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w: no bwrap on PATH (Debian: apt-get install bubblewrap), or set scheduler.sandbox: off to run unconfined", ErrNoSandbox)
	}
	if err := checkSandbox(p); err != nil {
		return "", err
	}
	return p, nil
}

// cliLogins are the files under the home folder where each CLI kind keeps its login and
// settings: a sandboxed run's home shows them read-only. Every kind also sees ~/.gitconfig.
var cliLogins = map[string][]string{
	"claude":  {".claude/.credentials.json"},
	"codex":   {".codex/auth.json", ".codex/config.toml"},
	"gemini":  {".gemini/oauth_creds.json", ".gemini/google_accounts.json", ".gemini/settings.json"},
	"copilot": {".copilot/config.json"},
}

// showLogins maps the person's login files of a CLI kind (those that exist) to their place in
// the channel's home.
func showLogins(kind, home, channelHome string) map[string]string {
	out := map[string]string{}
	if home == "" {
		return out
	}
	for _, rel := range append([]string{".gitconfig"}, cliLogins[kind]...) {
		src := filepath.Join(home, rel)
		if fi, err := os.Stat(src); err == nil && fi.Mode().IsRegular() {
			out[src] = filepath.Join(channelHome, rel)
		}
	}
	return out
}

// gitHardening are git settings every run gets on the command-line level (GIT_CONFIG_COUNT),
// which beats a repository's own config: no folder is taken for a bare repository unless named
// (a planted HEAD and config in a work folder), and git runs no program a repository's config
// names: no hooks, no fsmonitor, no pager. (diff.external, textconv and filters cannot be
// switched off this way without breaking git diff; they come only from a repository's own
// .git/config, which no channel's run can plant in another channel's folder.)
var gitHardening = [][2]string{
	{"safe.bareRepository", "explicit"},
	{"core.fsmonitor", "false"},
	{"core.hooksPath", os.DevNull},
	{"core.pager", "cat"},
	{"protocol.ext.allow", "never"},
}

// GitEnv is the environment that gives every git of a run the hardening settings.
func GitEnv() []string {
	out := []string{fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(gitHardening))}
	for i, kv := range gitHardening {
		out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return append(out, "GIT_PAGER=cat", "PAGER=cat")
}
