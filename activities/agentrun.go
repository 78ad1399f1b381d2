package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
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
)

// DefaultMaxOutput caps the stdout and stderr kept from a run.
const DefaultMaxOutput = 1 << 20

// RunRequest runs an agent CLI once, headless. The prompt goes to standard input, never into
// the command line.
type RunRequest struct {
	Command string        `json:"command"`
	Args    []string      `json:"args"`
	Prompt  string        `json:"prompt"`
	Dir     string        `json:"dir,omitempty"`
	Timeout time.Duration `json:"timeout"`
	// MaxOutput caps the bytes kept of stdout and of stderr (default DefaultMaxOutput).
	MaxOutput int `json:"max_output,omitempty"`
}

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
}

// Run starts the CLI, heartbeats while it runs, and classifies the outcome: a JSON result is
// parsed whatever the exit code; timeouts, crashes and network trouble are retryable errors,
// denied or invalid tools, cancellation and error results are not. The result is returned with
// the error when there is one, for the audit.
func (a AgentRunner) Run(ctx context.Context, req RunRequest) (RunResult, error) {
	if req.Command == "" {
		return RunResult{}, temporal.NewNonRetryableApplicationError("agent run: no command", ErrTypeRunFailed, nil)
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	max := req.MaxOutput
	if max <= 0 {
		max = DefaultMaxOutput
	}
	stdout, stderr := &cappedBuffer{max: max}, &cappedBuffer{max: max}
	cmd := exec.CommandContext(runCtx, req.Command, req.Args...)
	cmd.Dir = req.Dir
	cmd.Stdin = strings.NewReader(req.Prompt)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return RunResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent run: start %s: %v", req.Command, err), ErrTypeRunFailed, err)
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
	switch {
	case ctx.Err() != nil:
		return res, RunError(res, "agent run cancelled", ErrTypeCancelled, true, ctx.Err())
	case runCtx.Err() != nil:
		return res, RunError(res, fmt.Sprintf("agent run: %s timed out after %s", req.Command, timeout), ErrTypeRunTimeout, false, nil)
	}
	parsed, perr := parseResult(stdout.Bytes())
	if perr != nil {
		if looksLikeNetwork(res.Stderr) {
			return res, RunError(res, fmt.Sprintf("agent run: network error (exit %d): %s", res.ExitCode, lastLine(res.Stderr)), ErrTypeNetwork, false, nil)
		}
		return res, RunError(res, fmt.Sprintf("agent run: %s exited %d without a JSON result (%v)%s", req.Command, res.ExitCode, describeExit(waitErr), stderrHint(res.Stderr)), ErrTypeCLICrashed, false, nil)
	}
	res.Result, res.SessionID, res.IsError = parsed.Result, parsed.SessionID, parsed.IsError
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
