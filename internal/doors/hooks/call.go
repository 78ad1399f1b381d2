package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/logging"
)

// Call is one run of a hook command: the event, the CLI that runs it (--cli: claude, codex,
// gemini or copilot) and the session it names (--session; empty: the agent's own, else the
// default one).
type Call struct {
	Event, CLI, Session string
}

// NewCall is the call of a hook command line: an empty --cli is Claude Code, as when it is not
// given.
func NewCall(event, cli, session string) Call {
	if cli == "" {
		cli = "claude"
	}
	return Call{Event: event, CLI: cli, Session: session}
}

// Logger is a hook run's logger: warnings and errors only, on stderr (stdout is the hook's
// answer); a no-op one when it cannot be made.
func Logger() *zap.Logger {
	logger, _ := logging.New(config.Log{Level: "warn", Format: "console"})
	if logger == nil {
		return zap.NewNop()
	}
	return logger
}

// ReadRaw reads a hook's input as the CLI gave it, up to one byte over MaxInput (which the
// input's reader refuses).
func ReadRaw(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, MaxInput+1))
}

// Caller is whom a hook run serves, read from its environment and input (Resolve).
type Caller struct {
	// Input is the hook's input as Claude Code gives it (another CLI's is turned into it).
	Input []byte
	// Agent is the agent the hook serves; Env the one its environment names (INTENTQ_AGENT_ID,
	// else the tmux pane's @agent_id) where the hook runs in its TUI's own process.
	Agent, Env string
	// Shared: the hook runs in Codex's shared daemon (another TUI's environment).
	Shared bool
	// Flat: the CLI reads the hook's output flat (Copilot CLI).
	Flat bool
	// ApprovalWait is how long the permission hook waits for the person.
	ApprovalWait time.Duration
}

// NeedsPaneCheck says whether the agent came from a binding rather than the environment: it is
// served only when the hook runs in its session's pane (a CLI session resumed in another pane,
// or a pane id tmux handed out again, serves nobody until a block binds it).
func (c Caller) NeedsPaneCheck(call Call) bool {
	return c.Agent != "" && c.Agent != c.Env && call.Session == ""
}

// Resolve reads whom a hook run serves: the agent from the environment, a Codex thread's
// binding, or (started by hand) the binding of its CLI session, made at the UserPromptSubmit of
// a block intentq typed. input is the hook's input as the CLI gave it. An unknown CLI is an
// error (NewCall makes an empty --cli Claude Code).
func Resolve(ctx context.Context, cfg *config.Config, call Call, input []byte, logger *zap.Logger) (Caller, error) {
	c := Caller{Input: input, ApprovalWait: cfg.Hooks.ApprovalWait}
	switch call.CLI {
	case "claude":
		c.Env = EnvAgent(ctx)
		c.Agent = c.Env
	case "codex":
		// The agent from the hook's thread (Codex's shared daemon runs hooks with another TUI's
		// environment). Its prompt waits for the permission hook: a short wait.
		c.Shared = SharedDaemon()
		if !c.Shared {
			c.Env = EnvAgent(ctx)
		}
		c.Agent = codexThreadAgent(cfg, input, c.Env, c.Shared, logger)
		c.ApprovalWait = cfg.Hooks.CodexApprovalWait
	case "gemini":
		// Gemini CLI runs hooks in the TUI's own process: the agent is the environment's. Its
		// input is read as Claude Code's (run keys, MCP tool names).
		c.Input = GeminiInput(input)
		c.Env = EnvAgent(ctx)
		c.Agent = c.Env
	case "copilot":
		// Copilot CLI runs hooks in the TUI's own process: the agent is the environment's. Its
		// input is read as Claude Code's, its output flat.
		c.Input = CopilotInput(input)
		c.Env = EnvAgent(ctx)
		c.Agent = c.Env
		c.Flat = true
	default:
		return Caller{}, fmt.Errorf("unknown --cli %q (claude, codex, gemini, copilot)", call.CLI)
	}
	if c.Agent == "" && call.Session == "" {
		// Started by hand: the agent its own hooks bound (never guessed).
		c.Agent = handStartedAgent(cfg, call.CLI, call.Event, c.Input, c.Shared, logger)
	}
	return c, nil
}

// EnvAgent is the agent the environment names: INTENTQ_AGENT_ID, else the tmux pane's @agent_id.
func EnvAgent(ctx context.Context) string {
	agent := os.Getenv("INTENTQ_AGENT_ID")
	if agent == "" {
		agent = TmuxAgentID(ctx)
	}
	return agent
}

// TmuxAgentID reads the pane option @agent_id of $TMUX_PANE; empty when there is none.
func TmuxAgentID(ctx context.Context) string {
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

// codexThreadAgent is a Codex hook's agent from its thread (ThreadAgent): the agent the thread
// is bound to, else env, the environment's where the hook runs in its own TUI's process (not
// Codex's shared daemon, shared).
func codexThreadAgent(cfg *config.Config, input []byte, env string, shared bool, logger *zap.Logger) string {
	var in Input
	_ = json.Unmarshal(input, &in)
	agent, err := ThreadAgent(cfg.DataDir, in.SessionID, env, shared)
	if err != nil {
		logger.Warn("hook: the Codex thread's agent", zap.String("thread", in.SessionID), zap.Error(err))
	}
	return agent
}

// handStartedAgent is the agent of a CLI the person started by hand (its environment names
// none): the one its session id is bound to, else, at the UserPromptSubmit of a block intentq
// typed, the session that block was typed for (BindByReceipt); "" until then.
func handStartedAgent(cfg *config.Config, cli, event string, input []byte, shared bool, logger *zap.Logger) string {
	var in Input
	if json.Unmarshal(input, &in) != nil || in.SessionID == "" {
		return ""
	}
	agent, err := BoundAgent(cfg.DataDir, cli, in.SessionID)
	if err != nil {
		logger.Warn("hook: the agent's binding", zap.String("cli", cli), zap.Error(err))
	}
	if agent != "" || event != EventUserPromptSubmit {
		return agent
	}
	agent, err = BindByReceipt(cfg.DataDir, cli, in.SessionID, in.Prompt, PaneOfEnv(shared),
		func(name string) string { return cfg.Sessions[name].CLI }, time.Now())
	if err != nil {
		logger.Warn("hook: a block intentq typed reached an agent it does not bind", zap.String("cli", cli), zap.Error(err))
	}
	return agent
}

// SettingsFor is the hooks' settings for agent; the session is session, else the agent's, else
// (with orDefault) the default one.
func SettingsFor(cfg *config.Config, session, agent string, orDefault bool, logger *zap.Logger) Settings {
	if session == "" {
		if _, ok := cfg.Sessions[agent]; ok && agent != "" {
			session = agent
		} else if def, err := cfg.SessionFor(""); err == nil && orDefault {
			session = def
		}
	}
	h := cfg.Hooks
	return Settings{
		Session:            session,
		ReplyTools:         h.ReplyTools,
		RemindTools:        h.RemindTools,
		RemindAfter:        h.RemindAfter,
		RemindEvery:        h.RemindEvery,
		Agent:              agent,
		DataDir:            cfg.DataDir,
		ExemptRoles:        h.ExemptRoles,
		Coordinator:        h.Coordinator,
		CompletionPatterns: append(append([]string{}, DefaultCompletionPatterns...), h.CompletionPatterns...),
		ErrorPatterns:      append(append([]string{}, DefaultErrorPatterns...), h.ErrorPatterns...),
		StopTyped:          cfg.CLIs[cfg.Sessions[session].CLI].StopReasonTwice,
		Logger:             logger,
	}
}

// CallSettings are the settings of a hook run for whom it serves: Claude Code's settings may
// serve the default session; the other CLIs' hook files are the person's, read by every agent
// they run, so a hook there that names no agent serves no session.
func CallSettings(cfg *config.Config, call Call, c Caller, logger *zap.Logger) Settings {
	s := SettingsFor(cfg, call.Session, c.Agent, call.CLI == "claude", logger)
	s.Flat = c.Flat
	return s
}
