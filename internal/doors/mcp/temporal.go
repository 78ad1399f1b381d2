package mcp

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/inbox"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// Temporal is the Backend on a Temporal client and the Bot API.
type Temporal struct {
	Client   client.Client
	Config   *config.Config
	Telegram *activities.Telegram
}

// Reply has the intent's workflow send the answer, exactly once.
func (t Temporal) Reply(ctx context.Context, id string, req workflows.ReplyRequest) (workflows.ReplyRecord, error) {
	return intent.Reply(ctx, t.Client, id, req)
}

// SendUnlinked sends a message that answers no pending intent (a follow-up), its parts recorded
// under key.
func (t Temporal) SendUnlinked(ctx context.Context, chatID, replyTo, text, key string) ([]int, error) {
	return t.Telegram.Send(ctx, activities.SendRequest{ChatID: chatID, ReplyTo: replyTo, Text: text, Key: key})
}

// React sets the bot's reaction on a message.
func (t Temporal) React(ctx context.Context, chatID, messageID, emoji string) error {
	return t.Telegram.React(ctx, activities.ReactRequest{ChatID: chatID, MessageID: messageID, Emoji: emoji})
}

// Pending lists the session's pending intents with their full text, oldest first.
func (t Temporal) Pending(ctx context.Context, session string) ([]PendingIntent, error) {
	list, err := intent.List(ctx, t.Client, intent.Filter{Status: workflows.StatusPending, Session: session})
	if err != nil {
		return nil, err
	}
	out := make([]PendingIntent, 0, len(list))
	for _, s := range list {
		text, err := intent.Text(ctx, t.Client, s.ID)
		if err != nil {
			text = s.Snippet
		}
		out = append(out, PendingIntent{ID: s.ID, ChatID: s.ChatID, MessageID: s.MessageID, Received: s.ReceivedAt.UTC().Format("2006-01-02T15:04:05Z"), Text: text})
	}
	return out, nil
}

// PendingInChat lists the chat's pending intents, oldest first.
func (t Temporal) PendingInChat(ctx context.Context, chatID string) ([]intent.Summary, error) {
	return intent.List(ctx, t.Client, intent.Filter{Status: workflows.StatusPending, ChatID: chatID})
}

// Change closes, links or ignores an intent.
func (t Temporal) Change(ctx context.Context, id, update string, arg any) error {
	_, err := intent.Update(ctx, t.Client, id, update, arg)
	return err
}

// InboxRead reads an agent's unread messages and marks them read.
func (t Temporal) InboxRead(ctx context.Context, agent string) ([]workflows.InboxMessage, error) {
	return inbox.Read(ctx, t.Client, agent)
}

// InboxSend puts a message in an agent's inbox.
func (t Temporal) InboxSend(ctx context.Context, agent string, msg workflows.InboxSend) error {
	_, err := inbox.Send(ctx, t.Client, t.Config.Temporal.TaskQueue, inbox.InputFor(t.Config, agent), msg)
	return err
}

// IntentSession is the session an intent was recorded for, from its search attributes (the
// server answers; no worker is needed); empty when the intent carries none.
func (t Temporal) IntentSession(ctx context.Context, id string) (string, error) {
	desc, err := t.Client.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return "", fmt.Errorf("%w: %s", intent.ErrNotFound, id)
	case err != nil:
		return "", fmt.Errorf("describe %s: %w", id, err)
	}
	var session string
	if p := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.IntentSessionKey.GetName()]; p != nil {
		if err := tclient.Payloads().FromPayload(p, &session); err != nil {
			return "", fmt.Errorf("the session of %s: %w", id, err)
		}
	}
	return session, nil
}
