package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/testenv"
)

// standInAgentEnv, set to a file (not an INTENTQ_ name: the hooks it runs read those as config), makes the test binary a stand-in agent with hooks instead of
// running tests (TestMain): what BenchmarkN26BurstNeverSlowsTheAgent types into. It reads the
// pane's terminal raw (the shell sets `stty raw -echo`) with bracketed paste on; a prompt ends
// at Enter (a carriage return outside a bracketed paste). For each prompt it reports, as Claude Code does, through
// `intentq-hook hook user-prompt-submit` (the receipt that confirms a typed delivery; setup
// installs intentq-hook beside the starter), appends the prompt to the file, and ends its turn at
// once (`intentq-hook hook stop`). What the hooks hand
// over is written to the file too. The starter is
// standInStarter; the hooks' config comes from the environment.
const (
	standInAgentEnv = "STANDIN_AGENT_OUT"
	standInStarter  = "STANDIN_AGENT_STARTER"
)

// standInProcess is the stand-in's name in the pane (tmux's pane_current_command).
const standInProcess = "worker.test"

// standInAgentCommand is the pane's shell line that runs the stand-in, writing prompts to out.
func standInAgentCommand(t testing.TB, out, starter string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("stty raw -echo; exec env %s=%s %s=%s %s", standInAgentEnv, out, standInStarter, starter, self)
}

// standInSecretary is a worker's environment whose default session, secretary, serves the
// Telegram chat 42 (bot token tok, at bot) with the stand-in agent already running in its
// pane: the environment, the home, and the file where the stand-in writes what reaches it.
func standInSecretary(t testing.TB, bin, tok string, bot *fakebot.Server) (env []string, home, pane string) {
	t.Helper()
	env, home, _ = ingestEnv(t, "INTENTQ_AGENT_ID=secretary", "INTENTQ_REMINDERS_FIRST_AFTER=1h",
		"INTENTQ_TELEGRAM_TOKEN="+tok, "INTENTQ_TELEGRAM_API_ENDPOINT="+bot.Endpoint())
	configFile := writeConfig(t, env, home, "telegram:\n  allowed_chat_ids: [42]\n  allowed_user_ids: [42]\n"+
		"sessions:\n  secretary: {tmux_target: \"secretary:0\", chats: [42], default: true}\n")
	env = append(env, "INTENTQ_CONFIG="+configFile,
		"INTENTQ_CLIS_CLAUDE_PROCESS_NAMES="+testenv.StandInProcessNames+","+standInProcess)
	pane = filepath.Join(home, "pane.out")
	tmuxSession(t, env, "secretary", standInAgentCommand(t, pane, filepath.Join(bin, "starter")))
	return env, home, pane
}

// runStandInAgent is the stand-in's main loop; it returns when the terminal closes.
func runStandInAgent(out, starter string) {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer f.Close()
	// What the hooks say (their warnings) goes to out.hooks, with when each ran and how long.
	logf, err := os.OpenFile(out+".hooks", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer logf.Close()
	// A hook's output reaches the agent as Claude Code passes it on: the context it adds, and
	// the reason of a blocked stop, are written to out like a prompt (by the caller: a
	// user-prompt-submit hook's context reaches the model after the prompt, FACTS.md).
	hook := func(event string, input any) (context string) {
		b, _ := json.Marshal(input)
		cmd := exec.Command(filepath.Join(filepath.Dir(starter), "intentq-hook"), "hook", event)
		var stdout, stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(b), &stdout, &stderr
		began := time.Now()
		err := cmd.Run()
		var printed hooks.Output
		if stdout.Len() > 0 && json.Unmarshal(stdout.Bytes(), &printed) == nil {
			if printed.HookSpecificOutput != nil && printed.HookSpecificOutput.AdditionalContext != "" {
				context += printed.HookSpecificOutput.AdditionalContext + "\n"
			}
			if printed.Decision == "block" {
				context += printed.Reason + "\n"
			}
		}
		fmt.Fprintf(logf, "%s %s %dms err=%v handed over %v %s\n", began.Format("15:04:05.000"), event, time.Since(began).Milliseconds(), err, messageIDs(context), stderr.String())
		return context
	}
	const pasteStart, pasteEnd = "\x1b[200~", "\x1b[201~"
	// Bracketed paste on, as Claude Code turns it on: a typed block arrives as one paste, one
	// prompt (without it, tmux pastes each line break as Enter, and a block of 50 messages
	// becomes 50 prompts and 100 hook runs).
	_, _ = os.Stdout.WriteString("\x1b[?2004h")
	in := bufio.NewReader(os.Stdin)
	var prompt strings.Builder
	pasting := false
	n := 0
	for {
		c, err := in.ReadByte()
		if err != nil {
			return
		}
		prompt.WriteByte(c)
		s := prompt.String()
		switch {
		case strings.HasSuffix(s, pasteStart):
			pasting = true
			prompt.Reset()
			prompt.WriteString(strings.TrimSuffix(s, pasteStart))
		case strings.HasSuffix(s, pasteEnd):
			pasting = false
			prompt.Reset()
			prompt.WriteString(strings.TrimSuffix(s, pasteEnd))
		case c == '\r' && !pasting:
			text := strings.ReplaceAll(strings.TrimSuffix(s, "\r"), "\r", "\n")
			prompt.Reset()
			if strings.TrimSpace(text) == "" {
				continue
			}
			n++
			fmt.Fprintf(logf, "%s prompt %v\n", time.Now().Format("15:04:05.000"), messageIDs(text))
			added := hook("user-prompt-submit", map[string]any{"session_id": "s", "prompt": text, "prompt_id": fmt.Sprintf("standin-%d", n)})
			_, _ = f.WriteString(text + "\n" + added)
			_, _ = f.WriteString(hook("stop", map[string]any{"session_id": "s", "stop_hook_active": false, "last_assistant_message": "ok"}))
		}
	}
}

// messageIDs are the msg_id= of the messages a text carries with intentq's header, in order.
func messageIDs(text string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`msg_id=(\d+)`).FindAllStringSubmatch(text, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// standInMain runs the stand-in agent when the environment asks for it, and reports whether it
// did (TestMain then exits).
func standInMain() bool {
	out := os.Getenv(standInAgentEnv)
	if out == "" {
		return false
	}
	runStandInAgent(out, os.Getenv(standInStarter))
	return true
}
