package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/intentq/intentq/internal/toolpolicy"
)

// AgentRunName is AgentRunner.Run.
const AgentRunName = "AgentRun"

// Error types of a headless run (SPEC P6): retryable ones are worth another attempt, the others
// are not.
const (
	ErrTypeRunTimeout       = "RunTimeout"       // retryable
	ErrTypeCLICrashed       = "CLICrashed"       // retryable: killed by a signal, or no JSON result
	ErrTypeNetwork          = "NetworkError"     // retryable
	ErrTypePermissionDenied = "PermissionDenied" // non-retryable
	ErrTypeInvalidTool      = "InvalidTool"      // non-retryable
	ErrTypeCancelled        = "Cancelled"        // non-retryable
	ErrTypeRunFailed        = "RunFailed"        // non-retryable: the CLI reported an error result
	// ErrTypeUnknownHeadless: the run names a session the worker's config does not have as a
	// headless session; nothing runs (non-retryable).
	ErrTypeUnknownHeadless = "UnknownSession"
)

// DefaultMaxOutput caps the stdout and stderr kept from a run.
const DefaultMaxOutput = 1 << 20

// RunRequest runs the agent CLI of a headless session once. It names the session and carries
// the message data only: the program, its arguments, the work folder, the timeout, the tool
// policy's flags and the environment come from the worker's own config when the run starts
// (RunSpec), since a workflow's input is written by whoever can reach the Temporal namespace
// (issue 23). Requests scheduled by older workflow code also carried command, args, dir and
// timeout: those fields are ignored (JSON drops them). The prompt goes to standard input, never
// into the command line.
type RunRequest struct {
	// Session is the headless session (sessions.<name> with mode headless).
	Session string `json:"session"`
	// Channel is where the prompt came from (cli, telegram, web): it picks the tool policy.
	Channel string `json:"channel,omitempty"`
	Prompt  string `json:"prompt"`
	// ResumeID is the CLI's session to resume, from an earlier run's output; used only when it
	// is a UUID.
	ResumeID string `json:"resume_id,omitempty"`
}

// RunSpec is what the worker's config says about a run of one session from one channel.
type RunSpec struct {
	// Command and Args start the CLI headless (clis.<kind>.command, headless_args, the model).
	Command string
	Args    []string
	// ToolFlags are the tool policy's flags for the CLI.
	ToolFlags []string
	// Dir is the session's work folder; Timeout bounds the run (scheduler.run_timeout).
	Dir     string
	Timeout time.Duration
	// Env is the run's whole environment (a scrubbed copy of the worker's).
	Env []string
	// SettingsFlag passes the CLI a settings file (claude: --settings); with Guard and Hook
	// set, the file holds a PreToolUse hook that runs Hook with --guard FILE, FILE holding
	// Guard: every tool call is checked at run time (toolpolicy.Guard).
	SettingsFlag string
	Hook         []string
	Guard        *toolpolicy.Guard
	// Confine, when set, wraps the command and its arguments in the kernel sandbox that
	// confines the run (headless.Sandbox.Wrap); extra are folders the run must read that the
	// sandbox would hide (the hook's settings).
	Confine func(command string, args []string, extra ...string) (string, []string)
	// Knows, when set, reports whether the CLI's state where this run keeps it holds the
	// conversation to resume; a resume id it does not know starts a new conversation (each
	// channel keeps its own state, so a conversation continues within its channel).
	Knows func(resumeID string) bool
	// Quarantine, when set, is called before the run starts; what it returns is called once the
	// run has ended, and moves aside what the run planted in its work folder that would make a
	// later program of the person's run code (a repository's HEAD, .envrc, .vscode, ...),
	// naming each (headless.WatchPlants).
	Quarantine func() (func() ([]string, error), error)
}

// ErrNotHeadless is wrapped by a resolver's error for a session the worker's config does not
// have (or not in mode headless).
var ErrNotHeadless = errors.New("not a headless session of this worker's config")

// RunResult is what one run produced, parsed from the CLI's JSON result (SPEC P4, P7).
type RunResult struct {
	ExitCode            int     `json:"exit_code"`
	Result              string  `json:"result"`
	SessionID           string  `json:"session_id,omitempty"`
	IsError             bool    `json:"is_error"`
	CostUSD             float64 `json:"cost_usd"`
	InputTokens         int64   `json:"input_tokens"`
	OutputTokens        int64   `json:"output_tokens"`
	CacheReadTokens     int64   `json:"cache_read_tokens"`
	CacheCreationTokens int64   `json:"cache_creation_tokens"`
	DurationMS          int64   `json:"duration_ms"`
	NumTurns            int     `json:"num_turns"`
	// DeniedTools are tools the CLI asked for and was refused.
	DeniedTools []string `json:"denied_tools,omitempty"`
	Stderr      string   `json:"stderr,omitempty"`
	// Quarantined are what the run planted in its work folder and intentq moved aside, each
	// "path (where it went)".
	Quarantined []string `json:"quarantined,omitempty"`
	Truncated   bool     `json:"truncated,omitempty"`
}

// RunError is a failed run's error carrying its RunResult as details, so the workflow can audit
// the attempt (exit code, cost, tokens) even when it failed.
func RunError(res RunResult, msg, errType string, nonRetryable bool, cause error) error {
	return temporal.NewApplicationErrorWithOptions(msg, errType, temporal.ApplicationErrorOptions{
		NonRetryable: nonRetryable, Cause: cause, Details: []interface{}{res},
	})
}

// claudeResult is the part of `claude -p --output-format json` intentq reads.
type claudeResult struct {
	Type       string   `json:"type"`
	Subtype    string   `json:"subtype"`
	IsError    bool     `json:"is_error"`
	Result     string   `json:"result"`
	SessionID  string   `json:"session_id"`
	CostUSD    *float64 `json:"total_cost_usd"`
	OldCostUSD *float64 `json:"cost_usd"`
	DurationMS int64    `json:"duration_ms"`
	NumTurns   int      `json:"num_turns"`
	Usage      struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	PermissionDenials []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
}

// AgentRunner runs agent CLIs headless.
type AgentRunner struct {
	// HeartbeatEvery is how often a running CLI heartbeats (default 5 s).
	HeartbeatEvery time.Duration
	// Resolve turns a request's session and channel into what runs, from the worker's config;
	// an error wrapping ErrNotHeadless for a session it does not have. Nil: nothing runs.
	Resolve func(session, channel string) (RunSpec, error)
	// Alert tells the person (ntfy, the worker's own topic) that a run was refused for an
	// unknown session: someone who can write to the namespace asked for it. Optional.
	Alert func(ctx context.Context, title, message string)
	// MaxOutput caps the bytes kept of stdout and of stderr (default DefaultMaxOutput).
	MaxOutput int

	mu      sync.Mutex
	alerted map[string]time.Time // unknown session -> last alert
}

// alertEvery is how often one unknown session name alerts.
const alertEvery = time.Hour

// refuseUnknown fails a run for a session the config does not have, and alerts once an hour
// per name.
func (a *AgentRunner) refuseUnknown(ctx context.Context, req RunRequest, cause error) error {
	name := req.Session
	if len(name) > 80 {
		name = name[:80] + "…"
	}
	who := "a workflow"
	if activity.IsActivity(ctx) {
		who = "workflow " + activity.GetInfo(ctx).WorkflowExecution.ID
		activity.GetLogger(ctx).Warn("headless run refused: unknown session", "session", name, "workflow", who, "error", cause)
	}
	msg := fmt.Sprintf("agent run refused: %s asked to run session %q: %v; nothing was run", who, name, cause)
	if a.Alert != nil {
		a.mu.Lock()
		if a.alerted == nil || len(a.alerted) > 1000 {
			a.alerted = map[string]time.Time{}
		}
		now := time.Now()
		due := now.Sub(a.alerted[name]) >= alertEvery
		if due {
			a.alerted[name] = now
		}
		a.mu.Unlock()
		if due {
			a.Alert(ctx, "intentq: headless run refused",
				msg+". Only someone who can write to the Temporal namespace can start such a workflow.")
		}
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeUnknownHeadless, cause)
}

// quarantineNote tells the person what a run planted and where it went, under the run's answer.
func quarantineNote(moved []string) string {
	const most = 5
	list := moved
	if len(list) > most {
		list = list[:most]
	}
	more := ""
	if len(moved) > most {
		more = fmt.Sprintf(" and %d more", len(moved)-most)
	}
	return fmt.Sprintf("[intentq moved aside %d thing(s) this run made that would run code when you use the folder (a git repository, .envrc, editor or agent settings): %s%s. Look at them before you put any back.]",
		len(moved), strings.Join(list, "; "), more)
}

// uuidRE is the form of Claude Code's session ids.
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ValidResumeID reports whether id may follow --resume: a UUID, nothing else.
func ValidResumeID(id string) bool { return uuidRE.MatchString(id) }

// Run starts the CLI, heartbeats while it runs, and classifies the outcome: a JSON result is
// parsed whatever the exit code; timeouts, crashes and network trouble are retryable errors,
// denied or invalid tools, cancellation and error results are not. The result is returned with
// the error when there is one, for the audit.
func (a *AgentRunner) Run(ctx context.Context, req RunRequest) (RunResult, error) {
	if a.Resolve == nil {
		return RunResult{}, temporal.NewNonRetryableApplicationError("agent run: this worker has no headless sessions configured", ErrTypeRunFailed, nil)
	}
	spec, err := a.Resolve(req.Session, req.Channel)
	switch {
	case errors.Is(err, ErrNotHeadless):
		return RunResult{}, a.refuseUnknown(ctx, req, err)
	case err != nil:
		return RunResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent run: session %s: %v", req.Session, err), ErrTypeRunFailed, err)
	case spec.Command == "":
		return RunResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent run: session %s: its CLI has no command", req.Session), ErrTypeRunFailed, nil)
	}
	if fi, err := os.Stat(spec.Dir); err != nil || !fi.IsDir() {
		return RunResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent run: session %s: work folder %q is not a folder", req.Session, spec.Dir), ErrTypeRunFailed, err)
	}
	args := append([]string(nil), spec.Args...)
	if req.ResumeID != "" && ValidResumeID(req.ResumeID) && spec.Knows != nil && !spec.Knows(req.ResumeID) {
		if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Info("the conversation to resume is another channel's: the run starts a new one", "session", req.Session, "channel", req.Channel)
		}
		req.ResumeID = ""
	}
	if req.ResumeID != "" {
		if ValidResumeID(req.ResumeID) {
			args = append(args, "--resume", req.ResumeID)
		} else if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Warn("resume id is not a UUID: the run starts a new CLI session", "session", req.Session)
		}
	}
	args = append(args, spec.ToolFlags...)
	var extra []string
	if spec.SettingsFlag != "" && spec.Guard != nil {
		settings, cleanup, err := writeHookSettings(spec)
		if err != nil {
			return RunResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent run: session %s: the tool policy hook: %v", req.Session, err), ErrTypeRunFailed, err)
		}
		defer cleanup()
		args = append(args, spec.SettingsFlag, settings)
		extra = append(extra, filepath.Dir(settings))
	}
	program := spec.Command
	if spec.Confine != nil {
		program, args = spec.Confine(spec.Command, args, extra...)
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	max := a.MaxOutput
	if max <= 0 {
		max = DefaultMaxOutput
	}
	stdout, stderr := &cappedBuffer{max: max}, &cappedBuffer{max: max}
	cmd := exec.CommandContext(runCtx, program, args...)
	cmd.Dir = spec.Dir
	// Never the worker's environment: nil would inherit it, INTENTQ_* secrets included.
	cmd.Env = append([]string{}, spec.Env...)
	cmd.Stdin = strings.NewReader(req.Prompt)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	var sweep func() ([]string, error)
	if spec.Quarantine != nil {
		if sweep, err = spec.Quarantine(); err != nil {
			return RunResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent run: session %s: %v", req.Session, err), ErrTypeRunFailed, err)
		}
	}
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return RunResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent run: start %s: %v", spec.Command, err), ErrTypeRunFailed, err)
	}
	go func() { done <- cmd.Wait() }()
	every := a.HeartbeatEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	var waitErr error
wait:
	for {
		select {
		case waitErr = <-done:
			break wait
		case <-ticker.C:
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx, stdout.Len())
			}
		}
	}

	res := RunResult{ExitCode: cmd.ProcessState.ExitCode(), Stderr: stderr.String(), Truncated: stdout.truncated || stderr.truncated}
	if sweep != nil {
		moved, err := sweep()
		res.Quarantined = moved
		if err != nil {
			// What could not be checked or moved may still be there: the run fails, and says so.
			return res, RunError(res, fmt.Sprintf("agent run: session %s: checking what the run left in %s: %v", req.Session, spec.Dir, err), ErrTypeRunFailed, true, err)
		}
		if len(moved) > 0 && activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Warn("a headless run planted files that would run code; moved aside", "session", req.Session, "channel", req.Channel, "count", len(moved))
		}
	}
	switch {
	case ctx.Err() != nil:
		return res, RunError(res, "agent run cancelled", ErrTypeCancelled, true, ctx.Err())
	case runCtx.Err() != nil:
		return res, RunError(res, fmt.Sprintf("agent run: %s timed out after %s", spec.Command, timeout), ErrTypeRunTimeout, false, nil)
	}
	parsed, perr := parseResult(stdout.Bytes())
	if perr != nil {
		if looksLikeNetwork(res.Stderr) {
			return res, RunError(res, fmt.Sprintf("agent run: network error (exit %d): %s", res.ExitCode, lastLine(res.Stderr)), ErrTypeNetwork, false, nil)
		}
		return res, RunError(res, fmt.Sprintf("agent run: %s exited %d without a JSON result (%v)%s", spec.Command, res.ExitCode, describeExit(waitErr), stderrHint(res.Stderr)), ErrTypeCLICrashed, false, nil)
	}
	res.Result, res.SessionID, res.IsError = parsed.Result, parsed.SessionID, parsed.IsError
	if len(res.Quarantined) > 0 {
		res.Result = strings.TrimRight(res.Result, "\n") + "\n\n" + quarantineNote(res.Quarantined)
	}
	res.DurationMS, res.NumTurns = parsed.DurationMS, parsed.NumTurns
	if parsed.CostUSD != nil {
		res.CostUSD = *parsed.CostUSD
	} else if parsed.OldCostUSD != nil {
		res.CostUSD = *parsed.OldCostUSD
	}
	res.InputTokens, res.OutputTokens = parsed.Usage.InputTokens, parsed.Usage.OutputTokens
	res.CacheReadTokens, res.CacheCreationTokens = parsed.Usage.CacheReadInputTokens, parsed.Usage.CacheCreationInputTokens
	for _, d := range parsed.PermissionDenials {
		res.DeniedTools = append(res.DeniedTools, d.ToolName)
	}
	switch {
	case len(res.DeniedTools) > 0:
		return res, RunError(res, fmt.Sprintf("agent run: permission denied for %s", strings.Join(res.DeniedTools, ", ")), ErrTypePermissionDenied, true, nil)
	case res.IsError && strings.Contains(strings.ToLower(res.Result), "invalid tool"):
		return res, RunError(res, "agent run: invalid tool: "+firstLine(res.Result), ErrTypeInvalidTool, true, nil)
	case res.IsError:
		return res, RunError(res, "agent run: the CLI reported an error: "+firstLine(res.Result), ErrTypeRunFailed, true, nil)
	}
	return res, nil
}

// writeHookSettings writes the run's guard and a settings file whose PreToolUse hook checks
// every tool call against it, into a private folder of their own (outside the work folder, so
// a run cannot rewrite them); cleanup removes them. The hook fails closed: when its program
// cannot run, it exits 2, which blocks the call, and when it fails otherwise or times out,
// onFailure "block" (Claude Code 2.1.295 and later) blocks the call too.
func writeHookSettings(spec RunSpec) (string, func(), error) {
	if len(spec.Hook) == 0 {
		return "", nil, errors.New("no hook program (the starter binary, next to the worker or on PATH)")
	}
	dir, err := os.MkdirTemp("", "intentq-run-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	guard, err := json.Marshal(spec.Guard)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	guardFile := filepath.Join(dir, "guard.json")
	words := make([]string, 0, len(spec.Hook)+2)
	for _, w := range append(append([]string(nil), spec.Hook...), "--guard", guardFile) {
		words = append(words, shellQuote(w))
	}
	command := strings.Join(words, " ") + ` || { echo "intentq: the tool policy hook failed: call refused" >&2; exit 2; }`
	settings := map[string]any{
		"disableAllHooks": false,
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{
			"matcher": "*",
			"hooks":   []any{map[string]any{"type": "command", "command": command, "timeout": 60, "onFailure": "block"}},
		}}},
	}
	data, err := json.Marshal(settings)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	settingsFile := filepath.Join(dir, "settings.json")
	for file, content := range map[string][]byte{guardFile: guard, settingsFile: data} {
		if err := os.WriteFile(file, content, 0o400); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	return settingsFile, cleanup, nil
}

// shellQuote quotes a word for sh.
func shellQuote(w string) string {
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// parseResult finds the JSON result object in stdout (the last line that parses as one, so
// stray output before it does not matter).
func parseResult(out []byte) (claudeResult, error) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var r claudeResult
		if json.Unmarshal(bytes.TrimSpace(lines[i]), &r) == nil && (r.Type == "result" || r.SessionID != "" || r.Result != "") {
			return r, nil
		}
	}
	var r claudeResult
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err == nil && (r.Type == "result" || r.SessionID != "") {
		return r, nil
	}
	return claudeResult{}, errors.New("no JSON result")
}

func describeExit(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + ws.Signal().String()
		}
	}
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

func looksLikeNetwork(stderr string) bool {
	s := strings.ToLower(stderr)
	for _, m := range []string{"econnreset", "econnrefused", "etimedout", "network error", "connection reset", "getaddrinfo", "socket hang up"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

func stderrHint(stderr string) string {
	if l := lastLine(stderr); l != "" {
		return ": " + l
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return firstLine(lines[len(lines)-1])
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return line
}

// cappedBuffer keeps the first max bytes written and remembers that more came.
type cappedBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room < len(p) {
		c.truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *cappedBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf.Bytes()...)
}

func (c *cappedBuffer) String() string { return string(c.Bytes()) }

func (c *cappedBuffer) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Len()
}
