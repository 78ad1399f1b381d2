package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/doors/hooks/hooktemporal"
	"github.com/intentq/intentq/internal/redact"
)

func newHook() *cobra.Command {
	var session, cli string
	cmd := &cobra.Command{
		Use:       "hook " + strings.Join(hooks.Events(), "|"),
		Short:     "answer a Claude Code hook (JSON on stdin); always exits 0 and allows when anything fails",
		Args:      args(cobra.ExactArgs(1)),
		ValidArgs: hooks.Events(),
		RunE: func(cmd *cobra.Command, a []string) error {
			logger := hooks.Logger()
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
			// Read here once: for the agent (a Codex thread's, a hand-started agent's session id
			// and receipt), to turn another CLI's input into Claude Code's, and for the permission
			// hook, which reads it again.
			data, err := hooks.ReadRaw(cmd.InOrStdin())
			if err != nil {
				logger.Warn("hook: input unreadable; printing nothing (the CLI goes on as without intentq)", zap.Error(err))
				return nil
			}
			call := hooks.NewCall(a[0], cli, session)
			c, err := hooks.Resolve(cmd.Context(), cfg, call, data, logger)
			if err != nil {
				logger.Warn("hook: allowing", zap.Error(err))
				return nil
			}
			if c.NeedsPaneCheck(call) && !inItsPane(cmd.Context(), cfg, c.Agent, hooks.PaneOfEnv(c.Shared)) {
				// A binding holds only in its session's pane: a CLI session resumed in another
				// pane, or a pane id tmux handed out again, serves nobody until a block binds it.
				logger.Warn("hook: the agent's binding is to a session whose pane this is not; serving no session", zap.String("cli", call.CLI), zap.String("session", c.Agent))
				c.Agent = ""
			}
			s := hooks.CallSettings(cfg, call, c, logger)
			data = c.Input
			stdin := bytes.NewReader(data)
			if a[0] == hooks.EventPermissionRequest {
				return hooktemporal.Approve(cmd.Context(), stdin, cmd.OutOrStdout(), approvalSettings(cfg, s.Session, call.CLI, c.ApprovalWait, logger), approver(cfg))
			}
			// A hook intentq-hook handed over has what is left of its time.
			timeout := hooks.Budget(cfg.Hooks.Timeout, os.Getenv(config.EnvHookStarted), time.Now())
			return hooks.Run(cmd.Context(), a[0], stdin, cmd.OutOrStdout(), s, hookBackend(cfg), timeout)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "the intentq session this agent serves (default: the agent's own, else the default session)")
	cmd.Flags().StringVar(&cli, "cli", "claude", "the agent CLI that runs the hook: claude, codex (its agent is found from its thread: session_id), gemini (Gemini CLI's input) or copilot (Copilot CLI's input and flat output)")
	cmd.AddCommand(newHookPolicy(), newHookBackend())
	return cmd
}

// newHookBackend is `starter hook backend`: what intentq-hook (the hook binary without the
// Temporal SDK) asks when the worker's desk does not answer, answered with a Temporal client of
// its own, dialed at the first call, in the desk's protocol on stdin and stdout. Only
// intentq-hook runs it.
func newHookBackend() *cobra.Command {
	return &cobra.Command{
		Use:    "backend",
		Short:  "answer intentq-hook's calls through Temporal, in the hook desk's protocol on stdin and stdout",
		Hidden: true,
		Args:   args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags())
			if err != nil {
				return err
			}
			b, closeFn := temporalBackend(cfg)
			defer closeFn()
			return desksocket.ServeStream(cmd.InOrStdin(), cmd.OutOrStdout(), b)
		},
	}
}

// hookBackend is what a hook asks: the worker's hook desk for its take, commit and report (no
// round trip to Temporal), and Temporal, dialed only when the hook needs it, for the rest and
// whenever the desk does not answer.
func hookBackend(cfg *config.Config) hooks.Dial {
	return func(ctx context.Context) (hooks.Backend, func(), error) {
		temporal, closeFn := temporalBackend(cfg)
		tok, err := trust.ReadToken(trust.TokenPath(cfg.DataDir))
		if err != nil {
			return temporal, closeFn, nil
		}
		return hooks.ThroughDesk(cfg.DataDir, tok, temporal), closeFn, nil
	}
}

// temporalBackend is the hooks' Backend on a Temporal client, dialed at its first call.
func temporalBackend(cfg *config.Config) (hooks.Backend, func()) {
	return hooks.Lazy(func(ctx context.Context) (hooks.Backend, func(), error) {
		c, err := tclient.Dial(ctx, cfg, zap.NewNop())
		if err != nil {
			return nil, nil, err
		}
		return hooktemporal.Temporal{Client: c, Config: cfg}, func() { c.Close() }, nil
	})
}

// approvalSettings are the permission hook's settings for session: its card's chat (none:
// approvals off), how long to wait for the phone, and its pushes.
func approvalSettings(cfg *config.Config, session, cli string, wait time.Duration, logger *zap.Logger) hooktemporal.ApprovalSettings {
	return hooktemporal.ApprovalSettings{Session: session, CLI: cli, Chat: cfg.ApprovalChat(session), Wait: wait,
		Push: cfg.NtfyTopicFor(session) != "", RemindEvery: cfg.Reminders.RepeatEvery, Logger: logger}
}

// approver dials Temporal for the permission hook.
func approver(cfg *config.Config) func(context.Context) (hooktemporal.Approver, func(), error) {
	return func(ctx context.Context) (hooktemporal.Approver, func(), error) {
		c, err := tclient.Dial(ctx, cfg, zap.NewNop())
		if err != nil {
			return nil, nil, err
		}
		return hooktemporal.TemporalApprover{Client: c, TaskQueue: cfg.Temporal.TaskQueue}, c.Close, nil
	}
}

// inItsPane reports whether pane, where a hook or an MCP server runs, is the pane session's
// tmux target names now. Codex's shared daemon runs with another TUI's environment: there the
// pane says nothing (true).
func inItsPane(ctx context.Context, cfg *config.Config, session string, pane hooks.Pane) bool {
	if pane.Shared {
		return true
	}
	s, ok := cfg.Sessions[session]
	if !ok || pane.ID == "" || s.TmuxTarget == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	id, socket, err := (&activities.Tmux{}).Pane(ctx, s.TmuxTarget)
	return err == nil && id == pane.ID && (pane.Socket == "" || socket == pane.Socket)
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
