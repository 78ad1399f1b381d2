package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/agentcli"
	"github.com/intentq/intentq/internal/platform/plugin"
)

func newPatchPlugin() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "patch-plugin",
		Short: "patch the Claude Code Telegram plugin to record every message through ingest (idempotent)",
		Long: "patch-plugin resolves the plugin from the secretary's settings.json, inserts the ingest block\n" +
			"before the anchor in handleInbound, checks it with bun, removes the old v1 block from the cache\n" +
			"and verifies the result. On failure nothing is changed, ntfy is told, and it exits 1.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := load(cmd)
			if err != nil {
				return err
			}
			out, err := ensurePlugin(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			verb := "already patched"
			if out.Patch.Changed {
				verb = "patched"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", verb, out.Target.ServerTS)
			if out.Cache.Changed {
				fmt.Fprintf(cmd.OutOrStdout(), "removed the v1 block (%d bytes) from %s\n", out.Cache.RemovedBytes, out.Cache.File)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was done as JSON")
	return cmd
}

// ensurePlugin patches the plugin; a failure is pushed to ntfy (file names and the error only).
func ensurePlugin(ctx context.Context, cfg *config.Config) (plugin.Outcome, error) {
	out, err := plugin.Ensure(cfg)
	if err != nil {
		alert(ctx, cfg, "intentq: plugin patch failed", err.Error())
		return out, fmt.Errorf("plugin patch failed (nothing changed): %w", err)
	}
	return out, nil
}

// alert pushes a failure to ntfy when it is configured; best effort.
func alert(ctx context.Context, cfg *config.Config, title, message string) {
	if cfg.Ntfy.URL == "" || cfg.Ntfy.Topic == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n := &activities.Ntfy{URL: cfg.Ntfy.URL, Token: cfg.Ntfy.Token.Reveal()}
	_ = n.Publish(ctx, activities.Push{Topic: cfg.Ntfy.Topic, Title: title, Message: message, Priority: 4, Tags: []string{"warning"}})
}

func newRunAgent() *cobra.Command {
	return &cobra.Command{
		Use:   "run-agent [SESSION]",
		Short: "patch and verify the plugin, then start the session's agent CLI in its tmux session (fail closed)",
		Long: "run-agent replaces run-claude.sh: with claude.patch_plugin set it patches and verifies the\n" +
			"Telegram plugin first and does not start the agent when that fails. It then starts the CLI\n" +
			"(clis.<kind>.command and model; for Claude Code --settings claude.settings, where the hooks\n" +
			"are, and --channels plugin:telegram@<marketplace> when the plugin is the door; for Codex\n" +
			"--no-daemon, so that its hooks and MCP server run with this pane's environment) in a detached\n" +
			"tmux session named after the session's tmux_target, unless that session already runs. The\n" +
			"agent's id (the session's name) is INTENTQ_AGENT_ID in its environment and the tmux option\n" +
			"@agent_id of its pane, so the Stop hook knows whose inbox to read.",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			cfg, _, err := load(cmd)
			if err != nil {
				return err
			}
			name, err := cfg.SessionFor("")
			if len(a) == 1 {
				name, err = a[0], nil
			}
			if err != nil {
				return err
			}
			s, ok := cfg.Sessions[name]
			if !ok || s.Mode != config.ModeTmux || s.Human {
				return fmt.Errorf("session %q is not a tmux agent session in the config", name)
			}
			cli := cfg.CLIs[s.CLI]
			opts := agentcli.LaunchOptions{Settings: cfg.Claude.Settings}
			// The Telegram plugin is Claude Code's: a Codex session (launched with --no-daemon, so
			// that its hooks and MCP server run with this pane's environment) does without it.
			if cfg.Claude.PatchPlugin && cli.ChannelsFlag != "" {
				out, err := ensurePlugin(cmd.Context(), cfg)
				if err != nil {
					return fmt.Errorf("%w; the agent was not started", err)
				}
				opts.Channels = []string{"plugin:telegram@" + out.Target.Marketplace}
			}
			tmuxSession := strings.Split(s.TmuxTarget, ":")[0]
			if exec.CommandContext(cmd.Context(), "tmux", "has-session", "-t", "="+tmuxSession).Run() == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "tmux session %s already runs; not started again\n", tmuxSession)
				return nil
			}
			argv := append([]string{"new-session", "-d", "-s", tmuxSession, "-e", "INTENTQ_AGENT_ID=" + name, "--"}, cli.LaunchWith(opts)...)
			if out, err := exec.CommandContext(cmd.Context(), "tmux", argv...).CombinedOutput(); err != nil {
				return fmt.Errorf("start %s in tmux session %s: %w: %s", cli.Command, tmuxSession, err, strings.TrimSpace(string(out)))
			}
			if out, err := exec.CommandContext(cmd.Context(), "tmux", "set-option", "-p", "-t", "="+tmuxSession+":", "@agent_id", name).CombinedOutput(); err != nil {
				return fmt.Errorf("set @agent_id of tmux session %s: %w: %s", tmuxSession, err, strings.TrimSpace(string(out)))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "started %s in tmux session %s\n", cli.Command, tmuxSession)
			return nil
		},
	}
}
