package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/private"
	intentqhooks "github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/platform/usersvc"
)

func newSetup() *cobra.Command {
	var service, remove, dryRun bool
	var workerPath, cli, codexDir, geminiDir, copilotDir string
	cmd := &cobra.Command{
		Use:   "setup [--cli claude|codex|gemini|copilot] [--service [--remove]] [--dry-run]",
		Short: "install intentq's hooks into the secretary's Claude Code settings (or Codex's, --cli codex, or Gemini CLI's, --cli gemini); --service also runs the worker as a user service with a watchdog",
		Long: "setup writes intentq's hooks (session-start, user-prompt-submit, pre-tool-use, post-tool-use, stop,\nnotification) into claude.settings, merging\n" +
			"with what is there (a backup first; running it again changes nothing), allows intentq's MCP tools\n" +
			"that act only for the calling session (not inbox_send) there, registers `starter mcp` as the MCP server \"intentq\" in ~/.claude.json, and prints how\n" +
			"Codex, Copilot CLI and Kimi register it.\n\n" +
			"--service also installs the worker as a user service that the system keeps running (a systemd\n" +
			"user unit on Linux, a launchd agent on macOS) and a watchdog timer that runs\n" +
			"`starter doctor --notify` every 5 minutes, so a dead worker still tells the phone. Secrets stay\n" +
			"in their files. --service --remove undoes it. --dry-run prints what would change.\n\n" +
			"--cli codex installs the same hooks into Codex's hooks.json ($CODEX_HOME, else ~/.codex; or\n" +
			"--codex-home), registers the MCP server in its config.toml, and records there the hooks' trust as\n" +
			"Codex's own review does, so that Codex does not ask for it at its next start: only for the exact\n" +
			"commands it writes. A hook that looks like intentq's but is not one of them (another program, a\n" +
			"shell line) is left as it is, untrusted, and named.\n\n" +
			"--cli gemini installs them into Gemini CLI's settings.json ($GEMINI_CLI_HOME/.gemini, else\n" +
			"~/.gemini; or --gemini-home) under its event names, registers the MCP server there (mcpServers), and\n" +
			"writes policies/intentq.toml, which lets the session-scoped MCP tools run without a confirmation.\n\n" +
			"--cli copilot installs them into Copilot CLI's hooks/intentq.json ($COPILOT_HOME, else ~/.copilot;\n" +
			"or --copilot-home) under Claude Code's event names, and registers the MCP server in its\n" +
			"mcp-config.json.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if remove && !service {
				return usage(cmd, errors.New("--remove goes with --service"))
			}
			cfg, _, err := load(cmd)
			if err != nil {
				return err
			}
			starter, err := selfPath()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch cli {
			case "claude":
			case "codex":
				if service {
					return usage(cmd, errors.New("--service goes without --cli codex (run setup --service once)"))
				}
				home, err := codexHome(codexDir)
				if err != nil {
					return err
				}
				return setupCodex(out, home, starter, dryRun)
			case "copilot":
				if service {
					return usage(cmd, errors.New("--service goes without --cli copilot (run setup --service once)"))
				}
				home, err := intentqhooks.CopilotHome(copilotDir)
				if err != nil {
					return err
				}
				return setupCopilot(out, home, starter, dryRun)
			case "gemini":
				if service {
					return usage(cmd, errors.New("--service goes without --cli gemini (run setup --service once)"))
				}
				home, err := geminiHome(geminiDir)
				if err != nil {
					return err
				}
				return setupGemini(out, home, starter, dryRun)
			default:
				return usage(cmd, fmt.Errorf("--cli %s: setup knows claude, codex, gemini and copilot", cli))
			}
			if !remove {
				if err := setupHooks(out, cfg.Claude.Settings, starter, dryRun); err != nil {
					return err
				}
				claudeJSON := filepath.Join(filepath.Dir(cfg.Claude.Home), ".claude.json")
				if err := setupMCP(out, claudeJSON, starter, dryRun); err != nil {
					return err
				}
				fmt.Fprintf(out, "other agent CLIs register the same MCP server like this:\n%s", mcpLines(starter))
			}
			if !service {
				return nil
			}
			if workerPath == "" {
				workerPath = filepath.Join(filepath.Dir(starter), "worker")
			}
			if workerPath, err = filepath.Abs(workerPath); err != nil {
				return err
			}
			if _, err := os.Stat(workerPath); err != nil && !remove {
				return fmt.Errorf("the worker binary %s: %w (build it next to starter with make build, or pass --worker)", workerPath, err)
			}
			configFile, err := config.FilePath(cmd.Flags())
			if err != nil {
				return err
			}
			home, err := os.UserHomeDir()
			if err != nil {
				return fmt.Errorf("home directory: %w", err)
			}
			plan, err := usersvc.For(runtime.GOOS, usersvc.Spec{Worker: workerPath, Starter: starter, Config: configFile,
				DataDir: cfg.DataDir, Home: home, UID: os.Getuid()})
			if err != nil {
				return err
			}
			if remove {
				return removeService(out, plan, dryRun)
			}
			return installService(out, plan, dryRun)
		},
	}
	cmd.Flags().BoolVar(&service, "service", false, "also run the worker as a user service, with a watchdog timer (doctor --notify)")
	cmd.Flags().BoolVar(&remove, "remove", false, "with --service: stop and remove the user service and its timer")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change and change nothing")
	cmd.Flags().StringVar(&workerPath, "worker", "", "the worker binary for the service (default: worker next to starter)")
	cmd.Flags().StringVar(&cli, "cli", "claude", "the agent CLI to install the hooks and the MCP server into: claude, codex, gemini or copilot")
	cmd.Flags().StringVar(&copilotDir, "copilot-home", "", "Copilot CLI's folder (default $COPILOT_HOME, else ~/.copilot)")
	cmd.Flags().StringVar(&codexDir, "codex-home", "", "with --cli codex: Codex's folder (default $CODEX_HOME, else ~/.codex)")
	cmd.Flags().StringVar(&geminiDir, "gemini-home", "", "with --cli gemini: Gemini CLI's folder (default $GEMINI_CLI_HOME/.gemini, else ~/.gemini)")
	return cmd
}

// selfPath is this starter's absolute path, links resolved: the hooks and the watchdog run it.
func selfPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the starter binary: %w", err)
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return "", fmt.Errorf("find the starter binary: %w", err)
	}
	return p, nil
}

func installService(out io.Writer, plan usersvc.Plan, dryRun bool) error {
	for _, f := range plan.Files {
		if dryRun {
			fmt.Fprintf(out, "would write %s:\n%s\n", f.Path, f.Content)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := os.WriteFile(f.Path, f.Content, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		fmt.Fprintf(out, "wrote %s\n", f.Path)
	}
	return runAll(out, plan.Enable, dryRun, false)
}

func removeService(out io.Writer, plan usersvc.Plan, dryRun bool) error {
	// Stopping what is not running is fine: remove what is there.
	if err := runAll(out, plan.Disable, dryRun, true); err != nil {
		return err
	}
	for _, f := range plan.Files {
		if dryRun {
			fmt.Fprintf(out, "would remove %s\n", f.Path)
			continue
		}
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", f.Path, err)
		}
		fmt.Fprintf(out, "removed %s\n", f.Path)
	}
	if len(plan.Enable) > 0 && plan.Enable[0][0] == "systemctl" {
		return runAll(out, plan.Enable[:1], dryRun, false) // daemon-reload
	}
	return nil
}

// runAll runs commands in order; with tolerate, a failing command is reported and skipped.
func runAll(out io.Writer, commands [][]string, dryRun, tolerate bool) error {
	for _, c := range commands {
		line := strings.Join(c, " ")
		if dryRun {
			fmt.Fprintf(out, "would run %s\n", line)
			continue
		}
		res, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		if err != nil {
			if tolerate {
				fmt.Fprintf(out, "%s: %v (%s)\n", line, err, strings.TrimSpace(string(res)))
				continue
			}
			return fmt.Errorf("%s: %w: %s", line, err, strings.TrimSpace(string(res)))
		}
		fmt.Fprintf(out, "ran %s\n", line)
	}
	return nil
}

// setupHooks merges intentq's hooks into the settings file: every other key, and other hooks,
// stay as they are; an event that already runs `starter hook <arg>` is left alone. It also
// allows intentq's session-scoped MCP tools (preAllowedTools), so no dialog stops a reply, and
// drops the whole-server entry "mcp__intentq" that an older setup wrote.
func setupHooks(out io.Writer, path, starter string, dryRun bool) error {
	return updateJSONFile(out, path, "hooks", dryRun, func(settings map[string]any) (bool, error) {
		hooks, err := objectAt(settings, "hooks")
		if err != nil {
			return false, err
		}
		changed := false
		for _, h := range intentqhooks.ClaudeEvents {
			groups, _ := hooks[h.Name].([]any)
			if group := intentqhooks.Group(groups, h.Arg); group != nil {
				changed = retarget(group, starter) || changed
				// post-tool-use hands over messages after every tool: an older setup limited it
				// to the reply and reminder tools.
				if _, limited := group["matcher"]; limited && h.Arg == intentqhooks.EventPostToolUse {
					delete(group, "matcher")
					changed = true
				}
				continue
			}
			group := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hookCommand(starter, h.Arg), "timeout": intentqhooks.TimeoutFor(h.Arg)}}}
			hooks[h.Name] = append(groups, group)
			changed = true
		}
		settings["hooks"] = hooks
		perms, err := objectAt(settings, "permissions")
		if err != nil {
			return false, err
		}
		allow, _ := perms["allow"].([]any)
		if i := slices.Index(allow, any(wholeServer)); i >= 0 {
			allow = slices.Delete(allow, i, i+1)
			perms["allow"], settings["permissions"] = allow, perms
			changed = true
		}
		for _, tool := range preAllowedTools {
			if !containsAny(allow, tool) {
				allow = append(allow, tool)
				perms["allow"], settings["permissions"] = allow, perms
				changed = true
			}
		}
		return changed, nil
	})
}

// mergeCLIHooks adds intentq's hooks for another agent CLI (Codex, Gemini CLI) to the "hooks" of a
// settings document in Claude Code's shape: for each event, a group running `starter hook <arg>
// <flag>` with timeout(arg) (in the CLI's unit). Every other hook stays; an event that already
// runs `starter hook <arg>` is left alone, only given flag if it lacks it (a hook installed by
// hand, or for Claude Code, reads the CLI's input only with it); one an older setup pointed at
// another argument (Codex's PermissionRequest at notification) is pointed at the current one.
func mergeCLIHooks(doc map[string]any, events []intentqhooks.ClaudeEvent, flag, starter string, timeout func(arg string) int) (bool, error) {
	hooks, err := objectAt(doc, "hooks")
	if err != nil {
		return false, err
	}
	changed := false
	for _, h := range events {
		groups, _ := hooks[h.Name].([]any)
		if h.Arg == intentqhooks.EventPermissionRequest {
			if group := intentqhooks.Group(groups, intentqhooks.EventNotification); group != nil {
				list, _ := group["hooks"].([]any)
				for _, e := range list {
					entry, _ := e.(map[string]any)
					if cmd, _ := entry["command"].(string); intentqhooks.IsIntentqHook(cmd) {
						entry["command"] = strings.Replace(cmd, " hook "+intentqhooks.EventNotification, " hook "+h.Arg, 1)
						entry["timeout"] = timeout(h.Arg)
						changed = true
					}
				}
			}
		}
		if group := intentqhooks.Group(groups, h.Arg); group != nil {
			changed = retarget(group, starter) || changed
			list, _ := group["hooks"].([]any)
			for _, e := range list {
				entry, _ := e.(map[string]any)
				cmd, _ := entry["command"].(string)
				if intentqhooks.IsIntentqHook(cmd) && !strings.Contains(cmd, flag) {
					entry["command"] = cmd + " " + flag
					changed = true
				}
			}
			continue
		}
		entry := map[string]any{"type": "command", "command": hookCommand(starter, h.Arg) + " " + flag, "timeout": timeout(h.Arg)}
		hooks[h.Name] = append(groups, map[string]any{"hooks": []any{entry}})
		changed = true
	}
	doc["hooks"] = hooks
	return changed, nil
}

// hookProgram is the program the agents' hooks run: intentq-hook beside the starter, else the
// starter.
func hookProgram(starter string) string {
	p := filepath.Join(filepath.Dir(starter), intentqhooks.Binary)
	if intentqhooks.Runnable(p) == nil {
		return p
	}
	return starter
}

// hookCommand is the command line of intentq's hook for arg.
func hookCommand(starter, arg string) string {
	return shellQuote(hookProgram(starter)) + " hook " + arg
}

// retarget points intentq's hooks that a setup wrote from this starter's folder (the starter,
// intentq-hook), or whose program is gone (a starter that moved), at the hook program there now
// (hookProgram: back at the starter when intentq-hook is gone) and reports whether it changed
// one; others stay as they are.
func retarget(group map[string]any, starter string) bool {
	changed := false
	list, _ := group["hooks"].([]any)
	for _, e := range list {
		entry, _ := e.(map[string]any)
		cmd, _ := entry["command"].(string)
		prog, rest := intentqhooks.CommandProgram(cmd)
		if !intentqhooks.IsIntentqHook(cmd) {
			continue
		}
		if to := movedProgram(prog, starter); to != prog {
			entry["command"] = shellQuote(to) + rest
			changed = true
		}
	}
	return changed
}

// movedProgram is the program to run in place of prog, an intentq hook's: the hook program beside
// starter now (hookProgram) when prog is an absolute path a setup wrote from this starter's
// folder or one that is gone (a starter that moved); prog otherwise.
func movedProgram(prog, starter string) string {
	to := hookProgram(starter)
	if !filepath.IsAbs(prog) || prog == to {
		return prog
	}
	if _, err := os.Stat(prog); err == nil && prog != starter && prog != filepath.Join(filepath.Dir(starter), intentqhooks.Binary) {
		return prog
	}
	return to
}

// wholeServer is the permission rule that allows every tool of the intentq MCP server: setup
// no longer writes it, and removes it where an older setup did.
const wholeServer = "mcp__intentq"

// preAllowedTools are the intentq MCP tools setup allows without a prompt: only those whose
// reach is limited to the calling session (issue 23): reply and react to the chats the session
// serves within telegram.allowed_chat_ids, pending, close, link and ignore on the session's own
// intents, inbox_read on the agent's own inbox. inbox_send reaches any agent's inbox and is
// left to Claude Code's prompt.
var preAllowedTools = []string{
	"mcp__intentq__reply", "mcp__intentq__react", "mcp__intentq__pending",
	"mcp__intentq__close", "mcp__intentq__link", "mcp__intentq__ignore", "mcp__intentq__inbox_read",
}

// setupMCP registers `starter mcp` as the MCP server "intentq" in Claude Code's user config
// (~/.claude.json, mcpServers), keeping everything else.
func setupMCP(out io.Writer, path, starter string, dryRun bool) error {
	return updateJSONFile(out, path, "the intentq MCP server", dryRun, func(doc map[string]any) (bool, error) {
		servers, err := objectAt(doc, "mcpServers")
		if err != nil {
			return false, err
		}
		want := map[string]any{"type": "stdio", "command": starter, "args": []any{"mcp"}, "env": map[string]any{}}
		if old, _ := json.Marshal(servers["intentq"]); string(old) == mustJSON(want) {
			return false, nil
		}
		servers["intentq"] = want
		doc["mcpServers"] = servers
		return true, nil
	})
}

// mcpLines are how the other agent CLIs register the MCP server, printed for the person.
func mcpLines(starter string) string {
	q, _ := json.Marshal(starter)
	return "Gemini CLI: `setup --cli gemini` writes it and its hooks into ~/.gemini/settings.json\n" +
		"Codex (~/.codex/config.toml; `setup --cli codex` writes these and its hooks):\n" +
		"  [mcp_servers.intentq]\n  command = " + string(q) + "\n  args = [\"mcp\"]\n" +
		"  env_vars = [\"" + strings.Join(intentqhooks.CodexMCPEnv, "\", \"") + "\"]\n" +
		"Copilot CLI (~/.copilot/mcp-config.json, mcpServers):\n" +
		"  \"intentq\": {\"type\": \"local\", \"command\": " + string(q) + ", \"args\": [\"mcp\"], \"tools\": [\"*\"]}\n" +
		"Kimi CLI (~/.kimi/mcp.json, mcpServers):\n" +
		"  \"intentq\": {\"command\": " + string(q) + ", \"args\": [\"mcp\"]}\n"
}

// objectAt is the JSON object under key (a new one when there is none); anything else there is
// an error, not overwritten.
func objectAt(doc map[string]any, key string) (map[string]any, error) {
	switch v := doc[key].(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("%q is not an object", key)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// updateJSONFile applies change to the JSON object in path (an empty object when the file is
// missing or empty) and writes it back when it changed: a backup first, atomically, 0600. With
// dryRun the difference is printed instead. what names the change in what is printed.
func updateJSONFile(out io.Writer, path, what string, dryRun bool, change func(map[string]any) (bool, error)) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	doc := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &doc); err != nil {
			return fmt.Errorf("%s is not JSON (%v): fix it first; nothing was changed", path, err)
		}
	}
	changed, err := change(doc)
	if err != nil {
		return fmt.Errorf("%s: %w; nothing was changed", path, err)
	}
	if !changed {
		fmt.Fprintf(out, "%s already in %s\n", what, path)
		return nil
	}
	updated, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	updated = append(updated, '\n')
	if dryRun {
		fmt.Fprintf(out, "would change %s:\n%s", path, lineDiff(string(old), string(updated)))
		return nil
	}
	if len(old) > 0 {
		backup := fmt.Sprintf("%s.bak-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.WriteFile(backup, old, 0o600); err != nil {
			return fmt.Errorf("back up %s: %w", path, err)
		}
		fmt.Fprintf(out, "backed up %s to %s\n", path, backup)
	}
	if err := private.WriteFile(path, updated); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s written to %s\n", what, path)
	return nil
}

// shellQuote quotes a path for the command line an agent CLI runs through a shell (hooks.ShellWord).
func shellQuote(s string) string { return intentqhooks.ShellWord(s) }

// lineDiff is a line diff of a and b: lines only in a with "-", only in b with "+", both with
// two spaces (longest common subsequence; settings files are small).
func lineDiff(a, b string) string {
	x, y := strings.Split(strings.TrimSuffix(a, "\n"), "\n"), strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	if a == "" {
		x = nil
	}
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			sb.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("+ " + y[j] + "\n")
			j++
		default:
			sb.WriteString("- " + x[i] + "\n")
			i++
		}
	}
	return sb.String()
}
