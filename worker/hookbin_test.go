package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hookBinBeside is intentq-hook copied into a folder of its own beside a starter that only
// records how it was run (its arguments and when the hook began, one line per run, in the
// returned log, and its input in log.stdin): what intentq-hook hands over, and whether it does.
func hookBinBeside(t *testing.T) (hookBin, log string) {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(binaries(t), "intentq-hook"))
	if err != nil {
		t.Fatal(err)
	}
	hookBin = filepath.Join(dir, "intentq-hook")
	if err := os.WriteFile(hookBin, data, 0o700); err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(dir, "starter.log")
	script := "#!/bin/sh\necho \"$* began=${INTENTQ_HOOK_STARTED:+set}\" >> '" + log + "'\ncat >> '" + log + ".stdin'\n"
	if err := os.WriteFile(filepath.Join(dir, "starter"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return hookBin, log
}

// runHookBin runs intentq-hook with args and input; it must exit 0.
func runHookBin(t *testing.T, hookBin string, env []string, input string, args ...string) (stdout string) {
	t.Helper()
	cmd := exec.Command(hookBin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(input)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("intentq-hook %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// Issue 38: intentq-hook, the hook binary without the Temporal SDK, answers a hook through the
// worker's desk itself, and hands whole to the starter beside it (the same command line, the
// same input) what it does not answer: no desk here (no worker), the permission hook, any other
// command; an agent bound to no pane is never its to judge.
func TestHookBinaryHandsOverWhatItDoesNotAnswer(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	hookBin, log := hookBinBeside(t)
	env, home, _ := ingestEnv(t, "INTENTQ_AGENT_ID=secretary")
	configFile := writeConfig(t, env, home, "sessions:\n  secretary: {tmux_target: \"secretary:0\", default: true}\n")
	env = append(env, "INTENTQ_CONFIG="+configFile)
	handed := func() (runs []string, input string) {
		b, _ := os.ReadFile(log)
		in, _ := os.ReadFile(log + ".stdin")
		return strings.Split(strings.TrimSpace(string(b)), "\n"), string(in)
	}

	// No worker yet: the starter answers (it goes to Temporal), with the hook's input.
	stop := `{"session_id":"s","stop_hook_active":false}`
	runHookBin(t, hookBin, env, stop, "hook", "stop", "--cli", "claude")
	if runs, input := handed(); len(runs) != 1 || runs[0] != "hook stop --cli claude began=set" || input != stop {
		t.Fatalf("with no desk the starter ran %q with %q", runs, input)
	}
	// The permission hook waits for the person through Temporal: the starter's, untouched.
	perm := `{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"}}`
	runHookBin(t, hookBin, env, perm, "hook", "permission-request")
	// Not a hook: the starter's command.
	runHookBin(t, hookBin, env, "", "pending", "--json")
	if runs, input := handed(); len(runs) != 3 || runs[1] != "hook permission-request began=set" || runs[2] != "pending --json began=set" || input != stop+perm {
		t.Fatalf("handed over %q with %q", runs, input)
	}

	// With the worker here, its desk answers: the starter is not run, and the session hears the
	// hook (its agent is working after the prompt it reported).
	readyWorker(t, env)
	runHookBin(t, hookBin, env, `{"session_id":"s","prompt":"hello","prompt_id":"p1"}`, "hook", "user-prompt-submit")
	if runs, _ := handed(); len(runs) != 3 {
		t.Fatalf("the desk answered, yet the starter ran: %q", runs)
	}
	eventually(t, "the session to hear the hook", 30*time.Second, func() bool {
		out, _ := run(t, filepath.Join(binaries(t), "starter"), env, "", "session", "show", "secretary")
		return strings.Contains(out, "agent working") && strings.Contains(out, "last hook user-prompt-submit")
	}, func() string {
		out, _ := run(t, filepath.Join(binaries(t), "starter"), env, "", "session", "show", "secretary")
		return out
	})
}
