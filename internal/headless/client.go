// Package headless is the client side of headless sessions (SPEC P1-P8): the one place a prompt
// is prepared from the config (Prepare), and the calls that queue, cancel and audit prompts.
package headless

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/redact"
	"github.com/intentq/intentq/internal/toolpolicy"
	"github.com/intentq/intentq/workflows"
)

// ErrNotHeadless: the session is not configured with mode headless.
var ErrNotHeadless = errors.New("not a headless session in the config")

// Submit prepares a prompt for a headless session of cfg (Prepare) and queues it; it returns
// the prompt's record (an existing one for a key already submitted).
func Submit(ctx context.Context, c client.Client, cfg *config.Config, session string, req workflows.PromptRequest, safeToRepeat bool) (workflows.PromptRecord, error) {
	if s, ok := cfg.Sessions[session]; !ok || s.Mode != config.ModeHeadless {
		return workflows.PromptRecord{}, fmt.Errorf("session %q: %w", session, ErrNotHeadless)
	}
	req, err := Prepare(cfg, session, req, safeToRepeat)
	if err != nil {
		return workflows.PromptRecord{}, err
	}
	handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.SessionWorkflowID(session), UpdateName: workflows.UpdatePrompt,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var rec workflows.PromptRecord
	if err == nil {
		err = handle.Get(ctx, &rec)
	}
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return rec, fmt.Errorf("session %s is not running (is it configured with mode: headless and the worker up?)", session)
	case err != nil:
		return rec, fmt.Errorf("submit prompt to %s: %w", session, tclient.Refusal(err))
	}
	return rec, nil
}

// Audit returns a headless session's prompts, invocations and cost.
func Audit(ctx context.Context, c client.Client, session string) (workflows.HeadlessState, error) {
	resp, err := c.QueryWorkflow(ctx, workflows.SessionWorkflowID(session), "", workflows.QueryAudit)
	var st workflows.HeadlessState
	if err != nil {
		return st, fmt.Errorf("audit of session %s: %w", session, err)
	}
	if err := resp.Get(&st); err != nil {
		return st, fmt.Errorf("decode audit of %s: %w", session, err)
	}
	return st, nil
}

// Prepare readies a prompt for a headless session from the config: secrets masked (SPEC
// P8), the tool policy of its channel and session checked (a CLI that cannot enforce it is an
// error now rather than at run time, P5), and no automatic retry when the policy allows a
// non-idempotent tool and the prompt is not marked safe to repeat (P6). The policy's flags are
// not sent: the worker renders them from its own config when the prompt runs (issue 23).
func Prepare(cfg *config.Config, session string, req workflows.PromptRequest, safeToRepeat bool) (workflows.PromptRequest, error) {
	req.Text = redact.Secrets(req.Text)
	req.ToolFlags = nil
	if req.Channel == "" {
		req.Channel = toolpolicy.ChannelCLI
	}
	eff, err := cfg.Policies.Resolve(req.Channel, session)
	if err != nil {
		return req, fmt.Errorf("tool policy for %s on %s: %w", req.Channel, session, err)
	}
	kind := cfg.Sessions[session].CLI
	if _, err := toolFlags(eff, kind); err != nil {
		return req, fmt.Errorf("tool policy for %s on %s (clis.%s): %w", req.Channel, session, kind, err)
	}
	req.NoRetry = !safeToRepeat && len(toolpolicy.NonIdempotent(eff)) > 0
	return req, nil
}

// Cancel stops a queued or running prompt of a headless session.
func Cancel(ctx context.Context, c client.Client, session, promptID string) (workflows.PromptRecord, error) {
	handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.SessionWorkflowID(session), UpdateName: workflows.UpdateCancel,
		Args: []any{promptID}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var rec workflows.PromptRecord
	if err == nil {
		err = handle.Get(ctx, &rec)
	}
	if err != nil {
		return rec, fmt.Errorf("cancel %s: %w", promptID, tclient.Refusal(err))
	}
	return rec, nil
}
