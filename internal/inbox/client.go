package inbox

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/workflows"
)

// Send puts a message in an agent's inbox, starting the inbox when it does not exist yet
// (update-with-start: one call, no race between creating and sending). in describes the inbox
// if it has to be started.
func Send(ctx context.Context, c client.Client, taskQueue string, in workflows.InboxInput, msg workflows.InboxSend) (workflows.InboxMessage, error) {
	id := workflows.InboxID(in.Agent)
	start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.InboxWorkflowName, in)
	handle, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   id,
			UpdateName:   workflows.UpdateInboxSend,
			Args:         []any{msg},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	var m workflows.InboxMessage
	if err == nil {
		err = handle.Get(ctx, &m)
	}
	if err != nil {
		return m, fmt.Errorf("send to inbox %s: %w", id, tclient.Refusal(err))
	}
	return m, nil
}

// Read returns an agent's unread messages and marks them read.
func Read(ctx context.Context, c client.Client, agent string) ([]workflows.InboxMessage, error) {
	handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflows.InboxID(agent),
		UpdateName:   workflows.UpdateInboxRead,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var msgs []workflows.InboxMessage
	if err == nil {
		err = handle.Get(ctx, &msgs)
	}
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return nil, nil // no inbox yet: nothing unread
	case err != nil:
		return nil, fmt.Errorf("read inbox of %s: %w", agent, err)
	}
	return msgs, nil
}

// Messages returns all messages of an agent's inbox without marking them read.
func Messages(ctx context.Context, c client.Client, agent string) ([]workflows.InboxMessage, error) {
	resp, err := c.QueryWorkflow(ctx, workflows.InboxID(agent), "", workflows.QueryInbox)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("query inbox of %s: %w", agent, err)
	}
	var msgs []workflows.InboxMessage
	if err := resp.Get(&msgs); err != nil {
		return nil, fmt.Errorf("decode inbox of %s: %w", agent, err)
	}
	return msgs, nil
}

// Unread is what is unread in an agent's inbox (workflows.UnreadOf), read without marking it
// read.
func Unread(ctx context.Context, c client.Client, agent string) (workflows.InboxUnread, error) {
	msgs, err := Messages(ctx, c, agent)
	if err != nil {
		return workflows.InboxUnread{}, err
	}
	return workflows.UnreadOf(msgs), nil
}

// InputFor describes the inbox of agent from the config: the agent's session is the
// session of the same name (unless it is the human's pane), nudged every reminders.repeat_every.
func InputFor(cfg *config.Config, agent string) workflows.InboxInput {
	in := workflows.InboxInput{Agent: agent, RepeatEvery: cfg.Reminders.RepeatEvery, TellsSession: true}
	if s, ok := cfg.Sessions[agent]; ok && !s.Human && s.Mode == config.ModeTmux {
		in.Session = agent
	}
	return in
}
