package hooks

// Codex's hooks (issue 25). Codex 0.169.0 reads $CODEX_HOME/hooks.json in Claude Code's shape and
// takes Claude Code's hook JSON unchanged, so the same handlers answer it. What differs is how a
// hook finds its agent: Codex runs hooks in its app server, which is the TUI's own process when
// it is started with --no-daemon (starter run-agent does), and otherwise a daemon shared by every
// TUI of that CODEX_HOME, started by the first TUI and holding ITS environment: a second TUI's
// hooks there carry the first pane's TMUX_PANE and INTENTQ_AGENT_ID. Only the hook input's
// session_id, Codex's thread id, tells the threads apart. So a Codex hook is mapped to its agent
// by its thread: the first hook of a thread that runs in its TUI's own process binds the thread
// to the agent its environment names (data_dir/codex-threads/<thread>), and every later hook of
// the thread, wherever it runs, is that agent's. A hook in the shared daemon whose thread no hook
// has bound has no agent: it reports nothing and takes nothing, so one agent's messages never go
// to another's thread. hooks.json is Codex's global file, read by every Codex the person runs:
// a hook that names no agent serves no session either.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// CodexEvents are the hooks intentq installs into Codex's hooks.json (setup --cli codex):
// Codex's event names with the starter's argument for each. Codex has no Notification event;
// its PermissionRequest (an approval prompt is about to open, and waits for the hook) asks the
// person from the phone for at most hooks.codex_approval_wait (issue 36).
var CodexEvents = []ClaudeEvent{
	{"SessionStart", EventSessionStart},
	{"UserPromptSubmit", EventUserPromptSubmit},
	{"PreToolUse", EventPreToolUse},
	{"PostToolUse", EventPostToolUse},
	{"Stop", EventStop},
	{"PermissionRequest", EventPermissionRequest},
}

// CodexFlag is what a Codex hook command adds after `hook <event>`.
const CodexFlag = "--cli codex"

// isThreadID reports whether id may be a CLI's session or thread id (a UUID: 1-100 ASCII
// letters, digits and dashes); nothing else names a binding file. A check, not a regexp: a
// compiled {1,100} is a hundred states, built at every hook process's start (issue 38).
func isThreadID(id string) bool {
	if id == "" || len(id) > 100 {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ErrNoThread says a Codex hook input carries no usable thread id.
var ErrNoThread = errors.New("the Codex hook input has no thread id (session_id)")

// threadFile is where a thread's agent is kept.
func threadFile(dataDir, thread string) string {
	return filepath.Join(dataDir, "codex-threads", thread)
}

// ThreadAgent is the agent of a Codex hook: the agent its thread is bound to; else, unless the
// hook runs in Codex's shared daemon (shared), the agent its environment names (envAgent), to
// which the thread is then bound. "" when neither is known.
func ThreadAgent(dataDir, thread, envAgent string, shared bool) (string, error) {
	if !isThreadID(thread) {
		return "", ErrNoThread
	}
	if dataDir == "" {
		if shared {
			return "", nil
		}
		return envAgent, nil
	}
	agent, err := BoundAgent(dataDir, "codex", thread)
	if err != nil || agent != "" {
		return agent, err
	}
	if shared || envAgent == "" {
		return "", nil
	}
	if err := Bind(dataDir, Binding{CLI: "codex", ID: thread, Agent: envAgent, How: "its environment (starter run-agent)"}); err != nil {
		return envAgent, err
	}
	return envAgent, nil
}

// ThreadOf is the thread a Codex agent was last bound to ("" when none): the newest binding.
func ThreadOf(dataDir, agent string) string {
	entries, err := os.ReadDir(filepath.Join(dataDir, "codex-threads"))
	if err != nil {
		return ""
	}
	var newest string
	var at int64
	for _, e := range entries {
		if bound, err := BoundAgent(dataDir, "codex", e.Name()); err != nil || bound != agent {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().UnixNano() >= at {
			newest, at = e.Name(), info.ModTime().UnixNano()
		}
	}
	return newest
}

// SharedDaemon reports whether this process runs under Codex's shared app-server daemon (`codex
// app-server ...` among its nearest ancestors): its environment is then another TUI's.
func SharedDaemon() bool {
	pid := os.Getppid()
	for range 4 {
		if pid <= 1 {
			return false
		}
		argv, ppid, ok := process(pid)
		if !ok {
			return false
		}
		if isCodexServer(argv) {
			return true
		}
		pid = ppid
	}
	return false
}

// isCodexServer: a codex binary running its app server (not a TUI with an embedded one).
func isCodexServer(argv []string) bool {
	return len(argv) > 1 && filepath.Base(argv[0]) == "codex" && argv[1] == "app-server"
}

// process is a process's command line and parent.
func process(pid int) (argv []string, ppid int, ok bool) {
	if runtime.GOOS == "linux" {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return nil, 0, false
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil, 0, false
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 {
			return nil, 0, false
		}
		ppid, _ = strconv.Atoi(fields[1])
		return strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"), ppid, true
	}
	out, err := exec.Command("ps", "-o", "ppid=", "-o", "command=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return nil, 0, false
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 {
		return nil, 0, false
	}
	ppid, _ = strconv.Atoi(fields[0])
	return fields[1:], ppid, true
}
