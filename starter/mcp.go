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
			"the tmux pane's @agent_id naming a session), else the default session; reply and react reach only\n" +
			"the chats that session serves within telegram.allowed_chat_ids, the intent tools only its intents,\n" +
			"inbox_read only the agent's own inbox. Logs go to stderr; stdout carries the protocol.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, logger, err := load(cmd)
			if err != nil {
				return err
			}
			agent := hooks.EnvAgent(cmd.Context())
			if _, ok := cfg.Sessions[session]; session != "" && !ok {
				return usage(cmd, fmt.Errorf("--session %s: no such session in the config", session))
			}
			// The session: --session, else the agent's own (INTENTQ_AGENT_ID or the pane's
			// @agent_id naming a session), else the default session. The tools act only on its
			// chats (within telegram.allowed_chat_ids) and intents, and on the agent's own inbox.
			s := hookSettings(cmd.Context(), cfg, session, logger)
			settings := mcp.Settings{Session: s.Session, Agent: agent, Config: cfg}
			if session == "" && agent == "" {
				// An agent started by hand: the session its hooks bind it to (by the first
				// message intentq types into it), asked at each call, else the default one.
				def := s.Session
				// Under Codex's shared daemon the environment is another TUI's: no pane counts.
				pane := hooks.PaneOfEnv(hooks.SharedDaemon())
				settings.Session, settings.Bound = "", func() string {
					if bound := hooks.PaneAgent(cfg.DataDir, pane); bound != "" && inItsPane(cmd.Context(), cfg, bound, pane) {
						return bound
					}
					return def
				}
			}
			b := &lazyBackend{cfg: cfg, logger: logger}
			defer b.close()
			srv := mcp.NewServer(b, settings, version)
			return srv.Run(cmd.Context(), &sdk.StdioTransport{})
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "the intentq session this agent serves (default: the agent's own, else the default session)")
	return cmd
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
