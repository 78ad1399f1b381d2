// Package hooktemporal is the hooks' way through Temporal: the Backend on a Temporal client, which a
// hook uses when the worker's desk does not answer (package hooks), and the permission hook, which
// waits for the person's decision in an approval workflow (Approve).
package hooktemporal

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/inbox"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// Temporal is the hooks.Backend on a Temporal client.
type Temporal struct {
	Client client.Client
	Config *config.Config
}

// PendingPage lists at most limit intents matching f and says whether there are more.
func (t Temporal) PendingPage(ctx context.Context, f intent.Filter, limit int) (intent.Page, error) {
	return intent.ListPage(ctx, t.Client, f, limit)
}

// Text returns one intent's full text from its start event, without a worker.
func (t Temporal) Text(ctx context.Context, id string) (string, error) {
	return intent.Text(ctx, t.Client, id)
}

// Close closes one intent: by update, which answers once the intent has closed; when no worker
// takes the update in time, by the close signal, which the server keeps until a worker runs.
func (t Temporal) Close(ctx context.Context, id string) error {
	return intent.Close(ctx, t.Client, id, workflows.CloseRequest{})
}

// CloseOldest closes a chat's oldest pending intent.
func (t Temporal) CloseOldest(ctx context.Context, chat string) (string, error) {
	id, _, err := intent.CloseOldestPending(ctx, t.Client, chat, workflows.CloseRequest{})
	return id, err
}

// Unread is what is unread in an agent's inbox, read without marking it read.
func (t Temporal) Unread(ctx context.Context, agent string) (workflows.InboxUnread, error) {
	return inbox.Unread(ctx, t.Client, agent)
}

// SendInbox puts a message in an agent's inbox.
func (t Temporal) SendInbox(ctx context.Context, agent string, msg workflows.InboxSend) error {
	_, err := inbox.Send(ctx, t.Client, t.Config.Temporal.TaskQueue, inbox.InputFor(t.Config, agent), msg)
	return err
}

// Had asks session which of intents' messages its agent has in its context (its own record,
// ahead of the intents' memos).
func (t Temporal) Had(ctx context.Context, session string, intents []string) ([]workflows.HadMessage, error) {
	res, err := t.Client.QueryWorkflow(ctx, workflows.SessionWorkflowID(session), "", workflows.QueryHad, intents)
	if err != nil {
		return nil, fmt.Errorf("ask session %s what its agent had: %w", session, err)
	}
	var had []workflows.HadMessage
	if err := res.Get(&had); err != nil {
		return nil, fmt.Errorf("ask session %s what its agent had: %w", session, err)
	}
	return had, nil
}

// CommitContext asks the session to append a block Claude Code injects itself to the history.
func (t Temporal) CommitContext(ctx context.Context, session, id, text string) error {
	return t.words(ctx, session, workflows.HookWords{Contexts: []workflows.DeliveryRequest{{ID: id, Kind: workflows.KindContext, Text: text}}})
}

// Report tells the session that a hook fired; the server keeps the signal while no worker
// runs.
func (t Temporal) Report(ctx context.Context, session string, ev workflows.AgentEvent) error {
	return t.words(ctx, session, workflows.HookWords{Events: []workflows.AgentEvent{ev}})
}

// words sends what a hook reports or printed to its session as the desk does (one protocol,
// issue 34): one hook-words signal, whether a desk passes it on or the hook itself, with no desk
// answering.
func (t Temporal) words(ctx context.Context, session string, w workflows.HookWords) error {
	if err := t.Client.SignalWorkflow(ctx, workflows.SessionWorkflowID(session), "", workflows.SignalHookWords, w); err != nil {
		return fmt.Errorf("tell session %s what the hook said: %w", session, err)
	}
	return nil
}

// Take asks the session for the messages waiting for the agent.
func (t Temporal) Take(ctx context.Context, session string, req workflows.TakeRequest) (workflows.TakeResult, error) {
	handle, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.SessionWorkflowID(session), UpdateName: workflows.UpdateTake, Args: []any{req},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return workflows.TakeResult{}, fmt.Errorf("take waiting messages of session %s: %w", session, err)
	}
	var res workflows.TakeResult
	if err := handle.Get(ctx, &res); err != nil {
		return workflows.TakeResult{}, fmt.Errorf("take waiting messages of session %s: %w", session, err)
	}
	return res, nil
}

// Taken commits a take the hook printed, in the hook-words signal as every other word of a hook.
func (t Temporal) Taken(ctx context.Context, session, key string) error {
	return t.words(ctx, session, workflows.HookWords{Commits: []string{key}})
}
