package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// Sandbox is how the kernel confines one headless run (bubblewrap: user, mount, PID, IPC and
// UTS namespaces). The run has no capabilities whoever runs the worker (root included: a user
// namespace, an empty capability set, no nested user namespace), so it cannot change its mounts.
// Inside it the whole file system is read-only, /tmp and /run are fresh private tmpfs (no socket
// there reaches a program outside: D-Bus, systemd, ssh and gpg agents, tmux), the person's home
// is an empty folder but for what the run is shown, the private paths (intentq's data_dir, its
// config and secret files, credential stores, transcripts) are empty, and only two folders can
// be written: the channel's work folder when Writable, and the channel's own home (the CLI's
// state: transcripts for --resume, caches). Each channel of a session has its own work folder and
// home, so nothing one channel's run writes is read, let alone run, by a run of another channel.
type Sandbox struct {
	// Program is the bwrap executable.
	Program string
	// NoNestedUserns is set when bwrap can forbid user namespaces inside the run
	// (--disable-userns, bubblewrap 0.8): without it a nested one still cannot unlock the
	// run's mounts, which the kernel locks.
	NoNestedUserns bool
	// Work is the run's work folder; Writable says whether the run may write it.
	Work     string
	Writable bool
	// Home is the channel's private home folder, always writable; HOME points there.
	Home string
	// PersonHome is the person's home folder: hidden whole (an empty folder) unless it is, or
	// lies inside, the work folder; what the run needs under it (the CLI's program, its login)
	// is shown read-only, the work folder and Home as above.
	PersonHome string
	// Hide are files and folders the run must not see (they are replaced by empty ones),
	// wherever they are, the work folder included.
	Hide []string
	// Show are files of the person's home the CLI needs (its login, ~/.gitconfig), shown
	// read-only at the same place under Home: key is the source, value the target.
	Show map[string]string
	// Programs are the folders of the programs the run starts (the CLI, the starter its hook
	// runs), shown read-only even where the sandbox hides their parent (/tmp, the home).
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
	out := append(confinement(s.NoNestedUserns),
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--ro-bind", "/", "/",
		"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		// /run holds the sockets that start programs outside the sandbox (the user's and the
		// system's D-Bus, systemd, the agents of ssh and gpg, docker): all gone, but the
		// resolver's files that /etc/resolv.conf may point to.
		"--tmpfs", "/run",
	)
	if fi, err := os.Stat("/run/systemd/resolve"); err == nil && fi.IsDir() {
		out = append(out, "--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve")
	}
	var mounts []mount
	if home := filepath.Clean(s.PersonHome); s.PersonHome != "" && home != "/" {
		mounts = append(mounts, mount{op: "--tmpfs", dst: home})
	}
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
	out = append(out, "--chdir", s.Work, "--", resolved(command))
	return s.Program, append(out, args...)
}

// resolved is the file a program runs (found on PATH when not a path), every link on the way
// followed, or the program as given when it cannot be found: inside the sandbox a link's folder
// may be shown without the folders its relative target names (a node_modules/.bin link under a
// hidden /tmp or home, reached through a linked folder), so the run starts the file itself.
func resolved(program string) string {
	p, err := exec.LookPath(program)
	if err != nil {
		return program
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		if abs, err := filepath.Abs(real); err == nil {
			return abs
		}
	}
	return program
}

// depth is the number of elements of a clean absolute path ("/" has none).
func depth(p string) int {
	p = filepath.Clean(p)
	if p == string(filepath.Separator) {
		return 0
	}
	return strings.Count(p, string(filepath.Separator))
}

// confinement are the bwrap options that take every privilege from a run, whoever runs the
// worker: its own user namespace (as root too, where bwrap would otherwise keep every
// capability), no capabilities (effective, permitted, bounding: a root-owned setuid program or
// an execve as uid 0 gains none; bwrap also sets no_new_privs), a new session (no TIOCSTI into
// the worker's terminal), killed with the worker, and, where bwrap can, no user namespace
// inside (where a process would have capabilities over new namespaces of its own).
func confinement(noNestedUserns bool) []string {
	out := []string{"--die-with-parent", "--new-session", "--unshare-user"}
	if noNestedUserns {
		out = append(out, "--disable-userns")
	}
	return append(out, "--cap-drop", "ALL")
}

// bwrap is a bubblewrap found to confine runs on this machine.
type bwrap struct {
	program        string
	noNestedUserns bool
}

// probe caches, per program, the bwrap found to confine runs here or why it cannot.
var probe sync.Map // program -> probeResult

type probeResult struct {
	bw  bwrap
	err error
}

// checkSandbox reports whether program (bwrap) can confine a run on this machine: it runs cat
// of its own status inside the namespaces and with the confinement a run gets, once per program
// and process, and refuses unless the run has no capabilities at all (CapEff, CapPrm and CapBnd
// zero) and no_new_privs. A bwrap older than 0.8 (no --disable-userns) is tried without that
// option.
func checkSandbox(program string) (bwrap, error) {
	if v, ok := probe.Load(program); ok {
		r := v.(probeResult)
		return r.bw, r.err
	}
	var errs []string
	for _, nested := range []bool{true, false} {
		err := probeConfinement(program, nested)
		if err == nil {
			bw := bwrap{program: program, noNestedUserns: nested}
			probe.Store(program, probeResult{bw: bw})
			return bw, nil
		}
		errs = append(errs, err.Error())
	}
	err := fmt.Errorf("%w (%s: %s): install bubblewrap and allow user namespaces (kernel.unprivileged_userns_clone, user.max_user_namespaces), or set scheduler.sandbox: off to run unconfined",
		ErrNoSandbox, program, strings.Join(errs, "; "))
	probe.Store(program, probeResult{err: err})
	return bwrap{}, err
}

// probeConfinement runs one confined cat of /proc/self/status and checks what it says.
func probeConfinement(program string, noNestedUserns bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := append(confinement(noNestedUserns), "--unshare-pid", "--unshare-ipc",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "cat", "/proc/self/status")
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return unprivileged(stdout.String())
}

// unprivileged checks a /proc/<pid>/status: no capability in the effective, permitted and
// bounding sets, and no_new_privs set.
func unprivileged(status string) error {
	want := map[string]bool{"CapEff": false, "CapPrm": false, "CapBnd": false, "NoNewPrivs": false}
	for _, line := range strings.Split(status, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if _, known := want[name]; !ok || !known {
			continue
		}
		value = strings.TrimSpace(value)
		if name == "NoNewPrivs" {
			if value != "1" {
				return fmt.Errorf("a confined run may gain privileges (NoNewPrivs %s)", value)
			}
		} else if strings.Trim(value, "0") != "" {
			return fmt.Errorf("a confined run keeps capabilities (%s %s)", name, value)
		}
		want[name] = true
	}
	for name, seen := range want {
		if !seen {
			return fmt.Errorf("a confined run's status has no %s", name)
		}
	}
	return nil
}

// programFolders are the folders a run needs to see to start program (found on PATH when not
// a path), each by its real place: the folder it is named in, the folder of every link on the
// way to the file (a node_modules/.bin link into its package), the package folder when the file lies in
// node_modules, and the same for a script's interpreter (`#!/usr/bin/env node`). The sandbox
// hides /tmp and the home, where such programs are often installed.
func programFolders(program string) []string {
	return programFoldersDepth(program, 1)
}

func programFoldersDepth(program string, interpreters int) []string {
	p, err := exec.LookPath(program)
	if err != nil {
		return nil
	}
	if p, err = filepath.Abs(p); err != nil {
		return nil
	}
	var out []string
	add := func(dir string) {
		if !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	for hops := 0; hops < 40; hops++ {
		// Each folder by its real place: bwrap cannot make a mount point through a link on the
		// read-only root, and a link's relative target is read from its real folder.
		if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(dir, filepath.Base(p))
		}
		add(filepath.Dir(p))
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		target, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = filepath.Clean(target)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return out
	}
	add(filepath.Dir(real))
	if pkg := packageFolder(real); pkg != "" {
		add(pkg)
	}
	if interpreters > 0 {
		if interp := interpreter(real); interp != "" {
			for _, d := range programFoldersDepth(interp, interpreters-1) {
				add(d)
			}
		}
	}
	return out
}

// packageFolder is the npm package a file lies in (node_modules/<name> or
// node_modules/@scope/<name>), or "".
func packageFolder(file string) string {
	parts := strings.Split(file, string(filepath.Separator))
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] != "node_modules" || i+1 >= len(parts)-1 {
			continue
		}
		end := i + 2
		if strings.HasPrefix(parts[i+1], "@") && i+2 < len(parts)-1 {
			end = i + 3
		}
		return strings.Join(parts[:end], string(filepath.Separator))
	}
	return ""
}

// interpreter is the program a script's first line names (`#!/usr/bin/env node`: node), or "".
func interpreter(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0]
	}
	for _, f := range fields[1:] {
		if !strings.HasPrefix(f, "-") && !strings.Contains(f, "=") {
			return f
		}
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
func sandboxProgram() (bwrap, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return bwrap{}, fmt.Errorf("%w: no bwrap on PATH (Debian: apt-get install bubblewrap), or set scheduler.sandbox: off to run unconfined", ErrNoSandbox)
	}
	return checkSandbox(p)
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
