// Package mcp is intentq's MCP server (`starter mcp`): the tools an agent CLI (Claude Code,
// Codex, Copilot, Kimi) uses to answer the person and to keep its intents straight. Where the
// official Telegram plugin has the same tool (reply, react), the arguments are named as there,
// so prompts written for it keep working. Tool errors are tool results with a clear message;
// the server never crashes on bad input.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// Backend is what the tools need; *Temporal is the real one.
type Backend interface {
	Reply(ctx context.Context, id string, req workflows.ReplyRequest) (workflows.ReplyRecord, error)
	SendUnlinked(ctx context.Context, chatID, replyTo, text string) ([]int, error)
	React(ctx context.Context, chatID, messageID, emoji string) error
	Pending(ctx context.Context, session string) ([]PendingIntent, error)
	OldestPending(ctx context.Context, chatID string) (string, error)
	Change(ctx context.Context, id, update string, arg any) error
	InboxRead(ctx context.Context, agent string) ([]workflows.InboxMessage, error)
	InboxSend(ctx context.Context, agent string, msg workflows.InboxSend) error
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
	// Session is the intentq session of the agent (pending lists its intents).
	Session string
	// Agent is the agent's inbox name (inbox_read default).
	Agent string
}

// ReplyArgs are the reply tool's arguments (the official plugin's names, plus intent).
type ReplyArgs struct {
	ChatID  string `json:"chat_id" jsonschema:"the chat to answer (from the message's chat=)"`
	Text    string `json:"text" jsonschema:"the answer; longer than 4096 characters is sent in parts"`
	ReplyTo string `json:"reply_to,omitempty" jsonschema:"the message_id answered; omitted: the chat's oldest pending message"`
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
	Agent string `json:"agent,omitempty" jsonschema:"whose inbox; default this agent's"`
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
	sdk.AddTool(srv, &sdk.Tool{Name: "reply", Description: "Send an answer to the person on Telegram, as a reply to their message, and close that message's intent. Repeating the same call sends nothing twice."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a ReplyArgs) (*sdk.CallToolResult, ReplyResult, error) {
			res, err := reply(ctx, b, a)
			return nil, res, err
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "react", Description: "Put an emoji reaction on a message of the person."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a ReactArgs) (*sdk.CallToolResult, Done, error) {
			if a.ChatID == "" || a.MessageID == "" || a.Emoji == "" {
				return nil, Done{}, errors.New("react needs chat_id, message_id and emoji")
			}
			if err := b.React(ctx, a.ChatID, a.MessageID, a.Emoji); err != nil {
				return nil, Done{}, err
			}
			return nil, Done{OK: true}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "pending", Description: "The messages still waiting for an answer in this session, oldest first, with their full text."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, PendingList, error) {
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
				if a.Intent == "" {
					return nil, Done{}, errors.New(c.name + " needs intent (intent/<chat>/<message>)")
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
				if err := b.Change(ctx, a.Intent, c.update, arg); err != nil {
					return nil, Done{}, err
				}
				return nil, Done{OK: true, Detail: a.Intent + " " + c.name + "d"}, nil
			})
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "inbox_read", Description: "Read an agent's unread inbox messages (agent-to-agent), oldest first; marks them read."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a InboxReadArgs) (*sdk.CallToolResult, InboxList, error) {
			agent := a.Agent
			if agent == "" {
				agent = s.Agent
			}
			if agent == "" {
				return nil, InboxList{}, errors.New("inbox_read needs agent (this agent has no id: set INTENTQ_AGENT_ID)")
			}
			msgs, err := b.InboxRead(ctx, agent)
			if msgs == nil {
				msgs = []workflows.InboxMessage{}
			}
			return nil, InboxList{Messages: msgs}, err
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "inbox_send", Description: "Send a message to another agent's inbox; its session is nudged."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a InboxSendArgs) (*sdk.CallToolResult, Done, error) {
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

// reply finds the intent answered and has its workflow send the answer exactly once.
func reply(ctx context.Context, b Backend, a ReplyArgs) (ReplyResult, error) {
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
		oldest, err := b.OldestPending(ctx, a.ChatID)
		if errors.Is(err, intent.ErrNotFound) {
			// Nothing waits in this chat: a follow-up; sent as it is.
			ids, err := b.SendUnlinked(ctx, a.ChatID, "", a.Text)
			return ReplyResult{MessageIDs: ids}, err
		}
		if err != nil {
			return ReplyResult{}, err
		}
		id = oldest
	}
	rec, err := b.Reply(ctx, id, workflows.ReplyRequest{Key: workflows.ReplyKey(a.Text), Text: a.Text})
	if err != nil {
		return ReplyResult{}, fmt.Errorf("reply to %s: %w", id, err)
	}
	return ReplyResult{Intent: id, MessageIDs: rec.MessageIDs, Closed: true, Repeated: rec.Repeated}, nil
}
