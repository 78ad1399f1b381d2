package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
)

// fakeSpec is a run of the fake CLI as a worker's config would resolve it.
func fakeSpec(t *testing.T, timeout time.Duration) RunSpec {
	t.Helper()
	fake, _ := filepath.Abs("testdata/fakeclaude.sh")
	return RunSpec{Command: fake, Args: []string{"-p", "--output-format", "json"}, Dir: t.TempDir(), Timeout: timeout,
		Env: []string{"PATH=" + os.Getenv("PATH")}}
}

// fakeRunner runs spec for the session "batch" and knows no other.
func fakeRunner(spec RunSpec) *AgentRunner {
	return &AgentRunner{HeartbeatEvery: 50 * time.Millisecond, MaxOutput: 1 << 20, Resolve: func(session, channel string) (RunSpec, error) {
		if session != "batch" {
			return RunSpec{}, fmt.Errorf("session %q: %w", session, ErrNotHeadless)
		}
		return spec, nil
	}}
}

func runFake(t *testing.T, ctx context.Context, prompt string, timeout time.Duration) (RunResult, error) {
	t.Helper()
	return fakeRunner(fakeSpec(t, timeout)).Run(ctx, RunRequest{Session: "batch", Channel: "cli", Prompt: prompt})
}

func errType(err error) (string, bool) {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return "", false
	}
	return appErr.Type(), appErr.NonRetryable()
}

// P4, P7: the JSON result is parsed: text, session for --resume, cost and tokens.
func TestAgentRunParsesResult(t *testing.T) {
	res, err := runFake(t, context.Background(), "ok please", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "done: ok please" || res.SessionID != "sess-42" || res.CostUSD != 0.0123 || res.InputTokens != 100 ||
		res.OutputTokens != 20 || res.CacheReadTokens != 5 || res.CacheCreationTokens != 7 || res.DurationMS != 1234 || res.NumTurns != 3 {
		t.Errorf("result = %+v", res)
	}
	res, err = runFake(t, context.Background(), "args", 10*time.Second)
	if err != nil || res.Result != "-p --output-format json" {
		t.Errorf("args reached the CLI as %q (%v)", res.Result, err)
	}
}

// P6: what is retried and what is not.
func TestAgentRunClassifiesFailures(t *testing.T) {
	cases := []struct {
		prompt       string
		want         string
		nonRetryable bool
	}{
		{"sleep", ErrTypeRunTimeout, false},
		{"crash", ErrTypeCLICrashed, false},
		{"nojson", ErrTypeCLICrashed, false},
		{"network", ErrTypeNetwork, false},
		{"deny", ErrTypePermissionDenied, true},
		{"invalid", ErrTypeInvalidTool, true},
		{"whatever", ErrTypeRunFailed, true},
	}
	for _, tc := range cases {
		t.Run(tc.prompt, func(t *testing.T) {
			res, err := runFake(t, context.Background(), tc.prompt, 2*time.Second)
			typ, nonRetryable := errType(err)
			if typ != tc.want || nonRetryable != tc.nonRetryable {
				t.Fatalf("err = %v (type %q, non-retryable %v), want %s non-retryable=%v", err, typ, nonRetryable, tc.want, tc.nonRetryable)
			}
			if tc.prompt == "deny" && (len(res.DeniedTools) != 1 || res.DeniedTools[0] != "Write" || !strings.Contains(err.Error(), "Write")) {
				t.Errorf("denied tools = %v, err %v", res.DeniedTools, err)
			}
			if tc.prompt == "crash" && !strings.Contains(err.Error(), "killed") {
				t.Errorf("crash error %q does not say it was killed", err)
			}
		})
	}
}

// A cancelled run (starter cancel) stops the CLI and is not retried.
func TestAgentRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	_, err := runFake(t, ctx, "sleep", 20*time.Second)
	if typ, nonRetryable := errType(err); typ != ErrTypeCancelled || !nonRetryable {
		t.Fatalf("err = %v", err)
	}
}

// Output is capped; the run still ends with what was kept.
func TestAgentRunCapsOutput(t *testing.T) {
	res, err := runFake(t, context.Background(), "flood", 10*time.Second)
	if !res.Truncated {
		t.Errorf("3 MB of output with a 1 MB cap not marked truncated (err %v)", err)
	}
	if typ, _ := errType(err); typ != ErrTypeCLICrashed {
		t.Errorf("the result line was cut off, so no JSON: err = %v", err)
	}
}
