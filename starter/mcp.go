package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/doors/mcp"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// version is what `starter mcp` reports to its client.
const version = "1"

func newMCP() *cobra.Command {
	var session string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "serve intentq's MCP tools on stdio (reply, react, pending, close, link, ignore, inbox_read, inbox_send) for an agent CLI",
		Long: "mcp is started by the agent CLI (starter setup registers it with Claude Code). Its reply tool sends\n" +
			"the answer to the person on Telegram as a reply and closes the intent, exactly once however often it\n" +
			"is called. The tools act for one session only: --session, else the agent's own (INTENTQ_AGENT_ID or\n" +
			"the tmux pane's @agent_id naming a session), else the session whose tmux target is the pane it runs\n" +
			"in (the one its agent was bound to there first). Never the default session: a server that cannot tell its\n" +
			"session refuses every tool that reads or changes a session's messages, and says why. reply and react\n" +
			"reach only the chats that session serves within telegram.allowed_chat_ids, the intent tools only its\n" +
			"intents, inbox_read only the agent's own inbox. Logs go to stderr; stdout carries the protocol.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, logger, err := load(cmd)
			if err != nil {
				return err
			}
			if _, ok := cfg.Sessions[session]; session != "" && !ok {
				return usage(cmd, fmt.Errorf("--session %s: no such session in the config", session))
			}
			// Under Codex's shared daemon the environment is another TUI's: no pane counts.
			pane := hooks.PaneOfEnv(hooks.SharedDaemon())
			settings := mcpSettings(cfg, session, hooks.EnvAgent(cmd.Context()), pane, func(bound string) bool {
				return inItsPane(cmd.Context(), cfg, bound, pane)
			})
			b := &lazyBackend{cfg: cfg, logger: logger}
			defer b.close()
			srv := mcp.NewServer(b, settings, version)
			return srv.Run(cmd.Context(), &sdk.StdioTransport{})
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "the intentq session this agent serves (default: the agent's own, else the one whose tmux pane it runs in; never the default session)")
	return cmd
}

// mcpSettings say whom `starter mcp` serves: the session --session names, else the one its agent
// (INTENTQ_AGENT_ID or the pane's @agent_id) names, else, asked at each call, the session of the
// tmux pane it runs in (inItsPane: the session's tmux target is that pane now): the one the
// agent there was bound to (an agent started by hand, bound by the first message intentq types
// into it), else the one session of this host whose pane it is. Never the default session
// (issue 61): setup registers `starter mcp` for every agent of the person's, in any project and
// pane, so a server that cannot tell its session acts for none, and its tools say why.
func mcpSettings(cfg *config.Config, session, agent string, pane hooks.Pane, inItsPane func(session string) bool) mcp.Settings {
	settings := mcp.Settings{Session: session, Agent: agent, Config: cfg}
	if session != "" {
		return settings
	}
	if _, ok := cfg.Sessions[agent]; ok && agent != "" {
		settings.Session = agent
		return settings
	}
	if agent != "" {
		why := fmt.Errorf("its agent %q (INTENTQ_AGENT_ID, or the tmux pane's @agent_id) names no session in the config, and --session names none", agent)
		settings.Bound = func() (string, error) { return "", why }
		return settings
	}
	var mu sync.Mutex
	last := "" // the session found last, asked first
	settings.Bound = func() (string, error) {
		switch {
		case pane.Shared:
			return "", errors.New("it runs in Codex's shared daemon, which serves every Codex window with the first one's environment, and --session names no session")
		case pane.ID == "":
			return "", errors.New("it was started with no --session and no INTENTQ_AGENT_ID, outside tmux")
		}
		mu.Lock()
		defer mu.Unlock()
		if last != "" && inItsPane(last) {
			return last, nil
		}
		if bound := hooks.PaneAgent(cfg.DataDir, pane); bound != "" && inItsPane(bound) {
			last = bound
			return bound, nil
		}
		var here []string
		for _, name := range cfg.SessionNames() {
			if s := cfg.Sessions[name]; cfg.Local(name) && !s.Human && s.Mode != config.ModeHeadless && inItsPane(name) {
				here = append(here, name)
			}
		}
		switch len(here) {
		case 0:
			return "", fmt.Errorf("it was started with no --session and no INTENTQ_AGENT_ID or @agent_id, in tmux pane %s, which is no session's tmux target", pane.ID)
		case 1:
			last = here[0]
			return last, nil
		}
		return "", fmt.Errorf("it was started with no --session and no INTENTQ_AGENT_ID or @agent_id, in tmux pane %s, which is the tmux target of %d sessions (%s)", pane.ID, len(here), strings.Join(here, ", "))
	}
	return settings
}

// lazyBackend dials Temporal on first use, and again after a failure, so the MCP server starts
// (and answers with clear tool errors) while Temporal is down.
type lazyBackend struct {
	cfg    *config.Config
	logger *zap.Logger
	mu     sync.Mutex
	c      client.Client
}

func (l *lazyBackend) backend(ctx context.Context) (mcp.Temporal, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := tclient.Dial(dctx, l.cfg, l.logger)
		cancel()
		if err != nil {
			return mcp.Temporal{}, fmt.Errorf("intentq is not reachable (is the worker running?): %w", err)
		}
		l.c = c
	}
	return mcp.Temporal{Client: l.c, Config: l.cfg, Telegram: &activities.Telegram{Token: l.cfg.Telegram.Token.Reveal(), Endpoint: l.cfg.Telegram.APIEndpoint, SentDir: filepath.Join(l.cfg.DataDir, "sent")}}, nil
}

func (l *lazyBackend) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		l.c.Close()
	}
}

// with runs f on the backend, dialing first when needed.
func with[T any](ctx context.Context, l *lazyBackend, f func(mcp.Temporal) (T, error)) (T, error) {
	b, err := l.backend(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(b)
}

func (l *lazyBackend) Reply(ctx context.Context, id string, req workflows.ReplyRequest) (workflows.ReplyRecord, error) {
	return with(ctx, l, func(b mcp.Temporal) (workflows.ReplyRecord, error) { return b.Reply(ctx, id, req) })
}

func (l *lazyBackend) SendUnlinked(ctx context.Context, chatID, replyTo, text, key string) ([]int, error) {
	if !l.cfg.Telegram.Token.IsSet() {
		return nil, errors.New("no telegram.token: intentq cannot send to Telegram")
	}
	return with(ctx, l, func(b mcp.Temporal) ([]int, error) { return b.SendUnlinked(ctx, chatID, replyTo, text, key) })
}

func (l *lazyBackend) React(ctx context.Context, chatID, messageID, emoji string) error {
	_, err := with(ctx, l, func(b mcp.Temporal) (struct{}, error) { return struct{}{}, b.React(ctx, chatID, messageID, emoji) })
	return err
}

func (l *lazyBackend) Pending(ctx context.Context, session string) ([]mcp.PendingIntent, error) {
	return with(ctx, l, func(b mcp.Temporal) ([]mcp.PendingIntent, error) { return b.Pending(ctx, session) })
}

func (l *lazyBackend) PendingInChat(ctx context.Context, chatID string) ([]intent.Summary, error) {
	return with(ctx, l, func(b mcp.Temporal) ([]intent.Summary, error) { return b.PendingInChat(ctx, chatID) })
}

func (l *lazyBackend) Change(ctx context.Context, id, update string, arg any) error {
	_, err := with(ctx, l, func(b mcp.Temporal) (struct{}, error) { return struct{}{}, b.Change(ctx, id, update, arg) })
	return err
}

func (l *lazyBackend) InboxRead(ctx context.Context, agent string) ([]workflows.InboxMessage, error) {
	return with(ctx, l, func(b mcp.Temporal) ([]workflows.InboxMessage, error) { return b.InboxRead(ctx, agent) })
}

func (l *lazyBackend) IntentSession(ctx context.Context, id string) (string, error) {
	return with(ctx, l, func(b mcp.Temporal) (string, error) { return b.IntentSession(ctx, id) })
}

func (l *lazyBackend) InboxSend(ctx context.Context, agent string, msg workflows.InboxSend) error {
	_, err := with(ctx, l, func(b mcp.Temporal) (struct{}, error) { return struct{}{}, b.InboxSend(ctx, agent, msg) })
	return err
}

func newReply() *cobra.Command {
	var asJSON bool
	var textFile string
	cmd := &cobra.Command{
		Use:   "reply INTENT [--text-file PATH | TEXT|-]",
		Short: "send an answer to the person as a reply to the intent's message and close it; the same answer twice is sent once",
		Long: "reply sends the answer as a reply to the intent's message and closes the intent. The answer is\n" +
			"read from standard input, or from --text-file; a TEXT argument also works but is " + inlineTextNote + ".",
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var inline *string
			if len(a) == 2 {
				inline = &a[1]
			}
			text, err := readText(cmd, "answer", inline, textFile, 1<<20)
			if err != nil {
				return err
			}
			if strings.TrimSpace(text) == "" {
				return usage(cmd, errors.New("the answer is empty"))
			}
			_, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			rec, err := intent.Reply(cmd.Context(), c, a[0], workflows.ReplyRequest{Text: text})
			if err != nil {
				return err
			}
			if id, err := intent.ResolveID(a[0]); err == nil {
				intent.AwaitListed(cmd.Context(), c, id, workflows.StatusClosed, 5*time.Second) // read your writes
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rec)
			}
			verb := "sent"
			if rec.Repeated {
				verb = "already sent"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s as Telegram message(s) %v; %s closed\n", verb, rec.MessageIDs, a[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sent reply as JSON")
	cmd.Flags().StringVar(&textFile, "text-file", "", textFileHelp)
	return cmd
}
