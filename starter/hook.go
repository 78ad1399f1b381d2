package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/logging"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/base/trust"
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
			if cli == "" {
				cli = "claude"
			}
			// Read here once: for the agent (a Codex thread's, a hand-started agent's session id
			// and receipt), to turn another CLI's input into Claude Code's, and for the permission
			// hook, which reads it again.
			data, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), hooks.MaxInput+1))
			if err != nil {
				logger.Warn("hook: input unreadable; printing nothing (the CLI goes on as without intentq)", zap.Error(err))
				return nil
			}
			// agent serves the hook; env is the one the environment names where the hook runs
			// in its TUI's own process.
			var agent, env string
			shared, flat := false, false
			wait := cfg.Hooks.ApprovalWait
			switch cli {
			case "claude":
				env = envAgent(cmd.Context())
				agent = env
			case "codex":
				// The agent from the hook's thread (Codex's shared daemon runs hooks with another
				// TUI's environment). Its prompt waits for the permission hook: a short wait.
				shared = hooks.SharedDaemon()
				if !shared {
					env = envAgent(cmd.Context())
				}
				agent = codexThreadAgent(cfg, data, env, shared, logger)
				wait = cfg.Hooks.CodexApprovalWait
			case "gemini":
				// Gemini CLI runs hooks in the TUI's own process: the agent is the environment's.
				// Its input is read as Claude Code's (hooks.GeminiInput: run keys, MCP tool names).
				data = hooks.GeminiInput(data)
				env = envAgent(cmd.Context())
				agent = env
			case "copilot":
				// Copilot CLI runs hooks in the TUI's own process: the agent is the environment's.
				// Its input is read as Claude Code's (hooks.CopilotInput), its output flat.
				data = hooks.CopilotInput(data)
				env = envAgent(cmd.Context())
				agent = env
				flat = true
			default:
				logger.Warn("hook: unknown --cli; allowing", zap.String("cli", cli))
				return nil
			}
			if agent == "" && session == "" {
				// Started by hand: the agent its own hooks bound (never guessed).
				agent = handStartedAgent(cfg, cli, a[0], data, shared, logger)
			}
			if agent != "" && agent != env && session == "" && !inItsPane(cmd.Context(), cfg, agent, hooks.PaneOfEnv(shared)) {
				// A binding holds only in its session's pane: a CLI session resumed in another
				// pane, or a pane id tmux handed out again, serves nobody until a block binds it.
				logger.Warn("hook: the agent's binding is to a session whose pane this is not; serving no session", zap.String("cli", cli), zap.String("session", agent))
				agent = ""
			}
			// Claude Code's settings may serve the default session; the other CLIs' hook files are
			// the person's, read by every agent they run: a hook that names no agent serves no
			// session there.
			s := settingsFor(cfg, session, agent, cli == "claude", logger)
			s.Flat = flat
			stdin := bytes.NewReader(data)
			if a[0] == hooks.EventPermissionRequest {
				return hooktemporal.Approve(cmd.Context(), stdin, cmd.OutOrStdout(), approvalSettings(cfg, s.Session, cli, wait, logger), approver(cfg))
			}
			return hooks.Run(cmd.Context(), a[0], stdin, cmd.OutOrStdout(), s, hookBackend(cfg), cfg.Hooks.Timeout)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "the intentq session this agent serves (default: the agent's own, else the default session)")
	cmd.Flags().StringVar(&cli, "cli", "claude", "the agent CLI that runs the hook: claude, codex (its agent is found from its thread: session_id), gemini (Gemini CLI's input) or copilot (Copilot CLI's input and flat output)")
	cmd.AddCommand(newHookPolicy())
	return cmd
}

// hookBackend is what a hook asks: the worker's hook desk for its take, commit and report (no
// round trip to Temporal), and Temporal, dialed only when the hook needs it, for the rest and
// whenever the desk does not answer.
func hookBackend(cfg *config.Config) hooks.Dial {
	return func(ctx context.Context) (hooks.Backend, func(), error) {
		temporal, closeFn := hooks.Lazy(func(ctx context.Context) (hooks.Backend, func(), error) {
			c, err := tclient.Dial(ctx, cfg, zap.NewNop())
			if err != nil {
				return nil, nil, err
			}
			return hooktemporal.Temporal{Client: c, Config: cfg}, func() { c.Close() }, nil
		})
		tok, err := trust.ReadToken(trust.TokenPath(cfg.DataDir))
		if err != nil {
			return temporal, closeFn, nil
		}
		return hooks.ThroughDesk(cfg.DataDir, tok, temporal), closeFn, nil
	}
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

// hookSettings resolves the hook's agent (INTENTQ_AGENT_ID, else tmux @agent_id of $TMUX_PANE)
// and session (--session, else the agent's session, else the default one).
func hookSettings(ctx context.Context, cfg *config.Config, session string, logger *zap.Logger) hooks.Settings {
	return settingsFor(cfg, session, envAgent(ctx), true, logger)
}

// envAgent is the agent the environment names: INTENTQ_AGENT_ID, else the tmux pane's @agent_id.
func envAgent(ctx context.Context) string {
	agent := os.Getenv("INTENTQ_AGENT_ID")
	if agent == "" {
		agent = tmuxAgentID(ctx)
	}
	return agent
}

// codexThreadAgent is a Codex hook's agent from its thread (hooks.ThreadAgent): the agent the
// thread is bound to, else env, the environment's where the hook runs in its own TUI's process
// (not Codex's shared daemon, shared).
func codexThreadAgent(cfg *config.Config, input []byte, env string, shared bool, logger *zap.Logger) string {
	var in hooks.Input
	_ = json.Unmarshal(input, &in)
	agent, err := hooks.ThreadAgent(cfg.DataDir, in.SessionID, env, shared)
	if err != nil {
		logger.Warn("hook: the Codex thread's agent", zap.String("thread", in.SessionID), zap.Error(err))
	}
	return agent
}

// handStartedAgent is the agent of a CLI the person started by hand (its environment names
// none): the one its session id is bound to, else, at the UserPromptSubmit of a block intentq
// typed, the session that block was typed for (hooks.BindByReceipt); "" until then.
func handStartedAgent(cfg *config.Config, cli, event string, input []byte, shared bool, logger *zap.Logger) string {
	var in hooks.Input
	if json.Unmarshal(input, &in) != nil || in.SessionID == "" {
		return ""
	}
	agent, err := hooks.BoundAgent(cfg.DataDir, cli, in.SessionID)
	if err != nil {
		logger.Warn("hook: the agent's binding", zap.String("cli", cli), zap.Error(err))
	}
	if agent != "" || event != hooks.EventUserPromptSubmit {
		return agent
	}
	agent, err = hooks.BindByReceipt(cfg.DataDir, cli, in.SessionID, in.Prompt, hooks.PaneOfEnv(shared),
		func(name string) string { return cfg.Sessions[name].CLI }, time.Now())
	if err != nil {
		logger.Warn("hook: a block intentq typed reached an agent it does not bind", zap.String("cli", cli), zap.Error(err))
	}
	return agent
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

// settingsFor is the hooks' settings for agent; the session is --session, else the agent's,
// else (with orDefault) the default one.
func settingsFor(cfg *config.Config, session, agent string, orDefault bool, logger *zap.Logger) hooks.Settings {
	if session == "" {
		if _, ok := cfg.Sessions[agent]; ok && agent != "" {
			session = agent
		} else if def, err := cfg.SessionFor(""); err == nil && orDefault {
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
		StopTyped:          cfg.CLIs[cfg.Sessions[session].CLI].StopReasonTwice,
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
