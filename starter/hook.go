package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/logging"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/redact"
)

func newHook() *cobra.Command {
	var session string
	cmd := &cobra.Command{
		Use:       "hook " + strings.Join(hooks.Events(), "|"),
		Short:     "answer a Claude Code hook (JSON on stdin); always exits 0 and allows when anything fails",
		Args:      args(cobra.ExactArgs(1)),
		ValidArgs: hooks.Events(),
		RunE: func(cmd *cobra.Command, a []string) error {
			logger, _ := logging.New(config.Log{Level: "warn", Format: "console"})
			if logger == nil {
				logger = zap.NewNop()
			}
			cfg, err := config.Load(cmd.Flags())
			if err != nil {
				// Never wedge the agent, but never fail silently either: the person hears of it
				// once per cause, and doctor shows it.
				logger.Warn("hook: config unusable; allowing", zap.Error(err))
				_, _ = hooks.ReadInput(cmd.InOrStdin())
				reportHookError(cmd.Context(), config.Fallback(cmd.Flags()), err, logger)
				return nil
			}
			if err := hooks.ClearError(cfg.DataDir); err != nil {
				logger.Warn("hook", zap.Error(err))
			}
			s := hookSettings(cmd.Context(), cfg, session, logger)
			dial := func(ctx context.Context) (hooks.Backend, func(), error) {
				c, err := tclient.Dial(ctx, cfg, zap.NewNop())
				if err != nil {
					return nil, nil, err
				}
				return hooks.Temporal{Client: c, Config: cfg}, func() { c.Close() }, nil
			}
			return hooks.Run(cmd.Context(), a[0], cmd.InOrStdin(), cmd.OutOrStdout(), s, dial, cfg.Hooks.Timeout)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "the intentq session this agent serves (default: the agent's own, else the default session)")
	cmd.AddCommand(newHookPolicy())
	return cmd
}

// hookSettings resolves the hook's agent (INTENTQ_AGENT_ID, else tmux @agent_id of $TMUX_PANE)
// and session (--session, else the agent's session, else the default one).
func hookSettings(ctx context.Context, cfg *config.Config, session string, logger *zap.Logger) hooks.Settings {
	agent := os.Getenv("INTENTQ_AGENT_ID")
	if agent == "" {
		agent = tmuxAgentID(ctx)
	}
	if session == "" {
		if _, ok := cfg.Sessions[agent]; ok && agent != "" {
			session = agent
		} else if def, err := cfg.SessionFor(""); err == nil {
			session = def
		}
	}
	h := cfg.Hooks
	return hooks.Settings{
		Session:            session,
		ReplyTools:         h.ReplyTools,
		RemindTools:        h.RemindTools,
		RemindAfter:        h.RemindAfter,
		RemindEvery:        h.RemindEvery,
		Agent:              agent,
		DataDir:            cfg.DataDir,
		ExemptRoles:        h.ExemptRoles,
		Coordinator:        h.Coordinator,
		CompletionPatterns: append(append([]string{}, hooks.DefaultCompletionPatterns...), h.CompletionPatterns...),
		ErrorPatterns:      append(append([]string{}, hooks.DefaultErrorPatterns...), h.ErrorPatterns...),
		Logger:             logger,
	}
}

// tmuxAgentID reads the pane option @agent_id of $TMUX_PANE; empty when there is none.
func tmuxAgentID(ctx context.Context) string {
	pane := os.Getenv("TMUX_PANE")
	if pane == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tmux", "show-options", "-pqv", "-t", pane, "@agent_id").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// reportHookError keeps the cause of a hook that could not do its work in data_dir (for
// doctor) and pushes it to ntfy the first time this cause is seen; secrets masked.
func reportHookError(ctx context.Context, cfg *config.Config, cause error, logger *zap.Logger) {
	msg := redact.Secrets(cause.Error())
	_, isNew, err := hooks.RecordError(cfg.DataDir, msg, time.Now())
	if err != nil {
		logger.Warn("hook", zap.Error(err))
	}
	if isNew {
		alert(ctx, cfg, "intentq: hooks are not working", "The Claude Code hooks allow everything until this is fixed: "+msg)
	}
}
