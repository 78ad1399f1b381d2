// Package mcp is intentq's MCP server (`starter mcp`): the tools an agent CLI (Claude Code,
// Codex, Copilot, Kimi) uses to answer the person and to keep its intents straight. Where the
// official Telegram plugin has the same tool (reply, react), the arguments are named as there,
// so prompts written for it keep working. Tool errors are tool results with a clear message;
// the server never crashes on bad input.
//
// The tools act for one session only (issue 23): the chats it serves (sessions.<name>.chats, or
// for the default session the chats no session lists), and only those in
// telegram.allowed_chat_ids when that list is set; the intents recorded for it; the agent's own
// inbox. Anything else is refused as a tool error before anything is sent or changed, so a
// prompt-injected agent cannot post to a chat an attacker opened with the bot, nor settle
// another session's intents.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// Backend is what the tools need; *Temporal is the real one.
type Backend interface {
	Reply(ctx context.Context, id string, req workflows.ReplyRequest) (workflows.ReplyRecord, error)
	// SendUnlinked sends a follow-up; its parts are recorded under key, so a retry with the
	// same key resumes after what went out.
	SendUnlinked(ctx context.Context, chatID, replyTo, text, key string) ([]int, error)
	React(ctx context.Context, chatID, messageID, emoji string) error
	Pending(ctx context.Context, session string) ([]PendingIntent, error)
	// PendingInChat lists the chat's pending intents, oldest first.
	PendingInChat(ctx context.Context, chatID string) ([]intent.Summary, error)
	Change(ctx context.Context, id, update string, arg any) error
	InboxRead(ctx context.Context, agent string) ([]workflows.InboxMessage, error)
	InboxSend(ctx context.Context, agent string, msg workflows.InboxSend) error
	// IntentSession is the session an intent was recorded for (intent.ErrNotFound when there
	// is no such intent).
	IntentSession(ctx context.Context, id string) (string, error)
}

// PendingIntent is one pending intent with its full text.
type PendingIntent struct {
	ID        string `json:"id"`
	ChatID    string `json:"chat_id"`
	MessageID string `json:"message_id"`
	User      string `json:"user,omitempty"`
	Received  string `json:"received_at"`
	Text      string `json:"text"`
}

// Settings say whom the server serves.
type Settings struct {
	// Session is the intentq session of the agent: the only one whose chats and intents the
	// tools act on (empty: none).
	Session string
	// Agent is the agent's inbox name: the only inbox inbox_read reads, and the sender of
	// inbox_send.
	Agent string
	// Config says which chats the session serves (sessions.<name>.chats, the default session)
	// and which chats are allowed at all (telegram.allowed_chat_ids); nil: no chat.
	Config *config.Config
	// Bound, when Session is empty, is asked at each call for the session of the tmux pane the
	// agent runs in: an agent started by hand names none in its environment, and its hooks bind
	// it by the first message intentq types into it (issue 37). With none, why says why the
	// server cannot tell its session; the tools refuse with that reason (issue 61).
	Bound func() (session string, why error)

	// unknown is why Bound named no session.
	unknown error
}

// resolved is s with its session: Session, else the agent's binding (Bound).
func (s Settings) resolved() Settings {
	if s.Session == "" && s.Bound != nil {
		s.Session, s.unknown = s.Bound()
	}
	return s
}

// ReplyArgs are the reply tool's arguments (the official plugin's names, plus intent).
type ReplyArgs struct {
	ChatID  string `json:"chat_id" jsonschema:"the chat to answer (from the message's chat=)"`
	Text    string `json:"text" jsonschema:"the answer; longer than 4096 characters is sent in parts"`
	ReplyTo string `json:"reply_to,omitempty" jsonschema:"the message_id answered (from the message's msg_id=); omitted: the chat's only pending message, or a follow-up when none waits; refused when several wait"`
	Intent  string `json:"intent,omitempty" jsonschema:"the intent answered (intent/<chat>/<message>), instead of chat_id and reply_to"`
}

// ReplyResult says what was sent.
type ReplyResult struct {
	Intent     string `json:"intent,omitempty"`
	MessageIDs []int  `json:"message_ids"`
	Closed     bool   `json:"closed"`
	Repeated   bool   `json:"repeated,omitempty"`
}

// ReactArgs are the react tool's arguments (as the official plugin's).
type ReactArgs struct {
	ChatID    string `json:"chat_id"`
	MessageID string `json:"message_id"`
	Emoji     string `json:"emoji" jsonschema:"one of Telegram's reaction emoji, e.g. 👍"`
}

// ChangeArgs close, link or ignore an intent.
type ChangeArgs struct {
	Intent string `json:"intent" jsonschema:"intent/<chat>/<message> or <chat>/<message>"`
	Reason string `json:"reason,omitempty"`
	Job    string `json:"job,omitempty" jsonschema:"link only: the job the intent is tied to"`
}

// InboxReadArgs read an agent's inbox.
type InboxReadArgs struct {
	Agent string `json:"agent,omitempty" jsonschema:"this agent's own id, or omitted; no other inbox can be read"`
}

// InboxSendArgs put a message in an agent's inbox.
type InboxSendArgs struct {
	To      string `json:"to"`
	Content string `json:"content"`
	Type    string `json:"type,omitempty" jsonschema:"e.g. task, report_completed; default message"`
}

// Done is a plain acknowledgement.
type Done struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// PendingList is the pending tool's answer.
type PendingList struct {
	Intents []PendingIntent `json:"intents"`
}

// InboxList is the inbox_read tool's answer.
type InboxList struct {
	Messages []workflows.InboxMessage `json:"messages"`
}

// NewServer builds the MCP server with every tool.
func NewServer(b Backend, s Settings, version string) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "intentq", Version: version}, &sdk.ServerOptions{
		Instructions: "Messages from the person arrive as 【新着メッセージ】msg_id=<id> chat=<chat>. Answer each with the reply tool " +
			"(chat_id=<chat>, reply_to=<id>): that sends it to the person and closes the message, so reminders stop. " +
			"pending lists what still waits; close, link and ignore settle a message without a reply.",
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "reply", Description: "Send an answer to the person on Telegram, as a reply to their message (reply_to = its msg_id), and close that message's intent. " +
		"The same answer to the same message is sent once, however often it is called; a call that ended in an error may be repeated as it was: it goes to the same message, at most once. " +
		"Without reply_to: the chat's only pending message is answered; with none pending the text is sent as a follow-up (each time it is asked for); with several pending the call is refused and lists them."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a ReplyArgs) (*sdk.CallToolResult, ReplyResult, error) {
			s := s.resolved()
			res, err := reply(ctx, b, s, a)
			return nil, res, err
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "react", Description: "Put an emoji reaction on a message of the person."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a ReactArgs) (*sdk.CallToolResult, Done, error) {
			s := s.resolved()
			if a.ChatID == "" || a.MessageID == "" || a.Emoji == "" {
				return nil, Done{}, errors.New("react needs chat_id, message_id and emoji")
			}
			if err := s.servesChat(a.ChatID); err != nil {
				return nil, Done{}, err
			}
			if err := b.React(ctx, a.ChatID, a.MessageID, a.Emoji); err != nil {
				return nil, Done{}, err
			}
			return nil, Done{OK: true}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "pending", Description: "The messages still waiting for an answer in this session, oldest first, with their full text."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, PendingList, error) {
			s := s.resolved()
			if s.Session == "" {
				return nil, PendingList{}, s.noSession()
			}
			list, err := b.Pending(ctx, s.Session)
			if list == nil {
				list = []PendingIntent{}
			}
			return nil, PendingList{Intents: list}, err
		})
	for _, c := range []struct{ name, update, desc string }{
		{"close", workflows.UpdateClose, "Close a message that is answered some other way; reminders stop."},
		{"link", workflows.UpdateLink, "Tie a message to a job (job); reminders stop until it is closed."},
		{"ignore", workflows.UpdateIgnore, "Give up on a message, with a reason."},
	} {
		sdk.AddTool(srv, &sdk.Tool{Name: c.name, Description: c.desc},
			func(ctx context.Context, _ *sdk.CallToolRequest, a ChangeArgs) (*sdk.CallToolResult, Done, error) {
				s := s.resolved()
				if a.Intent == "" {
					return nil, Done{}, errors.New(c.name + " needs intent (intent/<chat>/<message>)")
				}
				id, err := intent.ResolveID(a.Intent)
				if err != nil {
					return nil, Done{}, err
				}
				if err := s.ownsIntent(ctx, b, id); err != nil {
					return nil, Done{}, err
				}
				var arg any
				switch c.update {
				case workflows.UpdateClose:
					arg = workflows.CloseRequest{Reason: a.Reason}
				case workflows.UpdateLink:
					if a.Job == "" {
						return nil, Done{}, errors.New("link needs job")
					}
					arg = workflows.LinkRequest{Job: a.Job}
				default:
					arg = workflows.IgnoreRequest{Reason: a.Reason}
				}
				if err := b.Change(ctx, id, c.update, arg); err != nil {
					return nil, Done{}, err
				}
				return nil, Done{OK: true, Detail: a.Intent + " " + c.name + "d"}, nil
			})
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "inbox_read", Description: "Read this agent's unread inbox messages (agent-to-agent), oldest first; marks them read."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a InboxReadArgs) (*sdk.CallToolResult, InboxList, error) {
			s := s.resolved()
			if s.Agent == "" {
				return nil, InboxList{}, errors.New("inbox_read: this agent has no id (set INTENTQ_AGENT_ID, or the tmux pane option @agent_id)")
			}
			if a.Agent != "" && a.Agent != s.Agent {
				return nil, InboxList{}, fmt.Errorf("refused: inbox_read reads only this agent's own inbox (%s), not %s's", s.Agent, a.Agent)
			}
			msgs, err := b.InboxRead(ctx, s.Agent)
			if msgs == nil {
				msgs = []workflows.InboxMessage{}
			}
			return nil, InboxList{Messages: msgs}, err
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "inbox_send", Description: "Send a message to another agent's inbox; its session is nudged."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a InboxSendArgs) (*sdk.CallToolResult, Done, error) {
			s := s.resolved()
			if a.To == "" || a.Content == "" {
				return nil, Done{}, errors.New("inbox_send needs to and content")
			}
			if err := b.InboxSend(ctx, a.To, workflows.InboxSend{From: s.Agent, Type: a.Type, Content: a.Content}); err != nil {
				return nil, Done{}, err
			}
			return nil, Done{OK: true}, nil
		})
	return srv
}

// reply finds the intent answered and has its workflow send the answer exactly once. The chat
// must be one the session serves and the intent the session's own; otherwise nothing is sent.
func reply(ctx context.Context, b Backend, s Settings, a ReplyArgs) (ReplyResult, error) {
	if strings.TrimSpace(a.Text) == "" {
		return ReplyResult{}, errors.New("reply needs text")
	}
	id := a.Intent
	switch {
	case id != "":
		resolved, err := intent.ResolveID(id)
		if err != nil {
			return ReplyResult{}, err
		}
		id = resolved
	case a.ChatID == "":
		return ReplyResult{}, errors.New("reply needs chat_id (or intent)")
	case a.ReplyTo != "":
		if err := workflows.CheckIDPart("reply_to", a.ReplyTo); err != nil {
			return ReplyResult{}, err
		}
		if err := workflows.CheckIDPart("chat_id", a.ChatID); err != nil {
			return ReplyResult{}, err
		}
		id = workflows.IntentID(a.ChatID, a.ReplyTo)
	default:
		if err := s.servesChat(a.ChatID); err != nil {
			return ReplyResult{}, err
		}
		return replyInChat(ctx, b, s, a)
	}
	return replyToIntent(ctx, b, s, id, a.Text)
}

// replyInChat answers without reply_to (issue 32): the call is reserved against its target
// before anything is sent, so a retry after an error goes to the same message, at most once.
// The target is the chat's one pending message (not one this tool answered within ReplyWindow,
// which a late list may still show); with none, the text is a follow-up; with more than one, the
// agent must say which it answers (a tool error lists them; nothing is sent).
func replyInChat(ctx context.Context, b Backend, s Settings, a ReplyArgs) (ReplyResult, error) {
	l := s.ledger()
	l.mu.Lock()
	defer l.mu.Unlock()
	key, now := callKey(a.ChatID, a.Text), time.Now()
	call, retry := l.unsettled(key, now)
	if !retry {
		pending, err := b.PendingInChat(ctx, a.ChatID)
		if err != nil {
			return ReplyResult{}, err
		}
		answered := l.answered(now)
		pending = slices.DeleteFunc(pending, func(p intent.Summary) bool { return answered[p.ID] })
		if len(pending) > 1 {
			return ReplyResult{}, ambiguous(a.ChatID, pending)
		}
		call = sentReply{Key: key, At: now}
		if len(pending) == 1 {
			call.Intent = pending[0].ID
		} else {
			call.SendKey = followUpKey(a.ChatID)
		}
		if err := l.keep(call); err != nil {
			return ReplyResult{}, fmt.Errorf("nothing was sent: %w", err)
		}
	}
	var res ReplyResult
	var err error
	if call.Intent != "" {
		res, err = replyToIntent(ctx, b, s, call.Intent, a.Text)
	} else {
		res.MessageIDs, err = b.SendUnlinked(ctx, a.ChatID, "", a.Text, call.SendKey)
	}
	if err != nil {
		return res, err // the call stays reserved: the same call again goes to the same place
	}
	call.MessageIDs, call.Settled, call.At = res.MessageIDs, true, time.Now()
	if err := l.keep(call); err != nil {
		return res, fmt.Errorf("sent, but not recorded as sent: %w", err)
	}
	return res, nil
}

// ambiguous is the tool error for an answer without reply_to in a chat where several messages
// wait: which one it answers is the agent's to say.
func ambiguous(chat string, pending []intent.Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "nothing was sent: chat %s has %d pending messages; call reply again with reply_to set to the message_id you answer:", chat, len(pending))
	for i, p := range pending {
		if i == 10 {
			fmt.Fprintf(&b, "\n(and %d more: the pending tool lists them all)", len(pending)-i)
			break
		}
		fmt.Fprintf(&b, "\n- reply_to=%s (received %s): %s", p.MessageID, p.ReceivedAt.UTC().Format(time.RFC3339), p.Snippet)
	}
	return errors.New(b.String())
}

// replyToIntent sends text as the answer to intent id, through its workflow (once per text).
func replyToIntent(ctx context.Context, b Backend, s Settings, id, text string) (ReplyResult, error) {
	// The intent's workflow sends to the intent's chat: that chat must be served, and the
	// intent the session's own.
	chat, _, err := workflows.ParseIntentID(id)
	if err != nil {
		return ReplyResult{}, err
	}
	if err := s.servesChat(chat); err != nil {
		return ReplyResult{}, err
	}
	if err := s.ownsIntent(ctx, b, id); err != nil {
		return ReplyResult{}, err
	}
	rec, err := b.Reply(ctx, id, workflows.ReplyRequest{Key: workflows.ReplyKey(text), Text: text})
	if err != nil {
		return ReplyResult{}, fmt.Errorf("reply to %s: %w", id, err)
	}
	return ReplyResult{Intent: id, MessageIDs: rec.MessageIDs, Closed: true, Repeated: rec.Repeated}, nil
}

// errNoSession is why a server with no Session and no Bound cannot tell its session.
var errNoSession = errors.New("it was started with no --session and no agent that names a session")

// noSession refuses every chat and intent when the server cannot tell its session (issue 61):
// it never falls back to the default session, since every agent of the person's may run
// `starter mcp`. It says why, and what to do.
func (s Settings) noSession() error {
	why := s.unknown
	if why == nil {
		why = errNoSession
	}
	return fmt.Errorf("refused, nothing was read, sent or changed: this MCP server cannot tell which intentq session it serves: %w. "+
		"Start the agent with `starter run-agent SESSION`, or register this server as `starter mcp --session SESSION`", why)
}

// servesChat refuses a chat the session does not serve: not a Telegram chat ID, outside
// telegram.allowed_chat_ids (when that list is set), or mapped to another session (a chat
// that no session lists is the default session's).
func (s Settings) servesChat(chatID string) error {
	if s.Session == "" || s.Config == nil {
		return s.noSession()
	}
	id, err := strconv.ParseInt(chatID, 10, 64)
	if err != nil || strconv.FormatInt(id, 10) != chatID {
		return fmt.Errorf("refused: chat %q is not a Telegram chat ID (a number, as in the message's chat=)", chatID)
	}
	if allowed := s.Config.Telegram.AllowedChatIDs; len(allowed) > 0 && !slices.Contains(allowed, id) {
		return fmt.Errorf("refused: chat %s is not in telegram.allowed_chat_ids; nothing was sent", chatID)
	}
	owner, err := s.Config.SessionFor(chatID)
	if err != nil || owner != s.Session {
		return fmt.Errorf("refused: chat %s is not served by session %s (sessions.%s.chats, or the default session for chats no session lists); nothing was sent", chatID, s.Session, s.Session)
	}
	return nil
}

// ownsIntent refuses an intent recorded for another session (an intent with no recorded
// session belongs to its chat's session).
func (s Settings) ownsIntent(ctx context.Context, b Backend, id string) error {
	if s.Session == "" {
		return s.noSession()
	}
	owner, err := b.IntentSession(ctx, id)
	if err != nil {
		return err
	}
	if owner == "" && s.Config != nil {
		if chat, _, perr := workflows.ParseIntentID(id); perr == nil {
			owner, _ = s.Config.SessionFor(chat)
		}
	}
	if owner != s.Session {
		return fmt.Errorf("refused: %s belongs to another session, not %s; it was left as it is", id, s.Session)
	}
	return nil
}
