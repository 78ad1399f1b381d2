package service_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

// Issue 23 against the real server: a headless session's runs are what the worker's config
// says (its CLI, its work folder, a scrubbed environment), whatever the workflow's input says;
// a HeadlessSession the config does not have runs nothing, its prompt fails and the person is
// alerted. With WRITE_HEADLESS_HISTORY=<file> the session's history is saved for the replay
// tests in package workflows (testdata/headless.json).
func TestHeadlessRunsFromWorkerConfig(t *testing.T) {
	cfg := testenv.Config(t)
	ntfy := fakentfy.New()
	defer ntfy.Close()
	cfg.Ntfy.URL, cfg.Ntfy.Topic = ntfy.URL(), "ops"
	fake, _ := filepath.Abs("../../activities/testdata/fakeclaude.sh")
	cfg.CLIs["fake"] = config.CLI{Command: fake, HeadlessArgs: []string{"-p", "--output-format", "json"}}
	cfg.Sessions["batch"] = config.Session{CLI: "fake", Mode: config.ModeHeadless}
	cfg.Policies.Global.Env = []string{"FAKE_CANARY"}
	t.Setenv("FAKE_CANARY", "1")
	t.Setenv("GITHUB_TOKEN", "ghp_not_for_runs")
	t.Setenv("INTENTQ_TELEGRAM_TOKEN", "123:not-for-runs")
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	prompts := []workflows.PromptRequest{
		{Key: "a", Channel: "telegram", Text: "ok first"}, {Key: "b", Text: "network"}, {Key: "c", Channel: "web", Text: "deny this"},
		{Key: "d", Text: "pwd"}, {Key: "e", Text: "env"},
	}
	for _, p := range prompts {
		if _, err := headless.Submit(ctx, svc.Client(), cfg, "batch", p, true); err != nil {
			t.Fatal(err)
		}
	}
	var st workflows.HeadlessState
	waitUntil(t, "all prompts to finish", 90*time.Second, func() bool {
		var err error
		st, err = headless.Audit(ctx, svc.Client(), "batch")
		return err == nil && st.Succeeded+st.Failed == int64(len(prompts))
	})
	if out := os.Getenv("WRITE_HEADLESS_HISTORY"); out != "" {
		writeHistory(t, svc, workflows.SessionWorkflowID("batch"), out)
	}
	if p := st.Prompts[1]; p.Status != workflows.PromptFailed || len(p.Invocations) != 3 {
		t.Errorf("network error: %+v", p)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(cfg.DataDir, "headless", "batch", "cli", "work"))
	if got := st.Prompts[3].Result; got != want {
		t.Errorf("ran in %q, want the session's folder %s", got, want)
	}
	env := strings.Fields(st.Prompts[4].Result)
	if !slices.Contains(env, "PATH") || !slices.Contains(env, "FAKE_CANARY") || slices.Contains(env, "GITHUB_TOKEN") || slices.Contains(env, "INTENTQ_TELEGRAM_TOKEN") {
		t.Errorf("the run's environment: %v", env)
	}

	// A HeadlessSession that the config does not have, started by a holder of the token with a
	// program of its choice: nothing runs, the prompt fails, the person is told.
	pwned := filepath.Join(t.TempDir(), "pwned")
	evil := workflows.HeadlessState{Config: workflows.HeadlessConfig{Name: "evil", Command: "/bin/sh", BaseArgs: []string{"-c", "touch " + pwned}, Timeout: time.Minute}}
	if _, err := svc.Client().SignalWithStartWorkflow(ctx, workflows.SessionWorkflowID("evil"), workflows.SignalPrompt,
		workflows.PromptRequest{Key: "k", Channel: "cli", Text: "hi", ToolFlags: []string{"--dangerously-skip-permissions"}},
		client.StartWorkflowOptions{TaskQueue: cfg.Temporal.TaskQueue}, workflows.HeadlessWorkflowName, evil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the evil prompt to end", 60*time.Second, func() bool {
		a, err := headless.Audit(ctx, svc.Client(), "evil")
		if err != nil || len(a.Prompts) != 1 || a.Prompts[0].FinishedAt == nil {
			return false
		}
		if a.Prompts[0].Status != workflows.PromptFailed || !strings.Contains(a.Prompts[0].Error, "nothing was run") {
			t.Fatalf("evil prompt: %+v", a.Prompts[0])
		}
		return true
	})
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the workflow's program ran")
	}
	waitUntil(t, "the alert", 20*time.Second, func() bool {
		for _, m := range ntfy.Messages() {
			if strings.Contains(m.Title, "headless run refused") && strings.Contains(m.Message, `"evil"`) {
				return true
			}
		}
		return false
	})
}
