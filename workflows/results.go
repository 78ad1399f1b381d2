package workflows

import (
	"encoding/json"
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

// tellResults sends each intent (reqs[i].ReplyTo) its result on signal, all at once, and waits
// until the server has taken them; delivery results that were held (holdResults) go with them,
// first. One activity sends them all (a local one, quickStep): a workflow's own
// SignalExternalWorkflow costs the session a workflow task per intent (50 per typed block), and a
// hook's take waited behind those tasks.
func (s *session) tellResults(ctx workflow.Context, signal string, reqs []DeliveryRequest, results []DeliveryResult) {
	if signal == SignalDeliveryResult && len(s.heldReqs) > 0 {
		reqs, results = append(s.heldReqs, reqs...), append(s.heldResults, results...)
		s.heldReqs, s.heldResults = nil, nil
	}
	if len(reqs) == 0 {
		return
	}
	req := activities.SignalAllRequest{Signal: signal, Key: fmt.Sprintf("%s/%s/%d", workflow.GetInfo(ctx).WorkflowExecution.RunID, signal, s.tells)}
	s.tells++
	for i, r := range reqs {
		if r.Again {
			continue // presented again after a reset: its intent was told of the message already
		}
		arg, err := json.Marshal(results[i])
		if err != nil {
			workflow.GetLogger(ctx).Error("delivery result not encoded", "session", s.Config.Name, "request", r.ID, "error", err)
			continue
		}
		req.Targets = append(req.Targets, activities.SignalTarget{WorkflowID: r.ReplyTo, Arg: arg})
	}
	if err := s.quickStep(ctx, signalActivityOptions, activities.SignalAllName, req).Get(ctx, nil); err != nil {
		// The intents ask again once their wait runs out, and are answered then.
		workflow.GetLogger(ctx).Warn("results not sent to their intents", "session", s.Config.Name, "count", len(reqs), "error", err)
	}
}

// quickStep runs a quick step of the session's on its host: as a local activity with opts'
// timeout and retries (sessionQuickStepsLocal), else, for a run from before, as an activity.
func (s *session) quickStep(ctx workflow.Context, opts workflow.ActivityOptions, name string, arg any) workflow.Future {
	if !s.quickStepsLocal {
		return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), name, arg)
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: opts.StartToCloseTimeout, RetryPolicy: opts.RetryPolicy})
	return workflow.ExecuteLocalActivity(lctx, name, arg)
}

// holdResults tells the results of what reached the agent (a typed block, a hook's commit), or
// holds them while more waits to be typed (sessionResultsAfterBacklog): a burst's blocks are
// typed one after another, and their intents are told together afterwards. Failures are told
// at once, and so is everything held once the first held result is policy.ResultsHold old.
func (s *session) holdResults(ctx workflow.Context, reqs []DeliveryRequest, results []DeliveryResult) {
	s.noteDelivered(reqs, results) // told or held, the session's own record answers QueryHad
	now := workflow.Now(ctx)
	failed := slices.ContainsFunc(results, func(r DeliveryResult) bool { return !r.OK })
	if !s.resultsAfterBacklog || len(s.Queue) == 0 || failed || (len(s.heldReqs) > 0 && now.Sub(s.heldSince) >= policy.ResultsHold) {
		s.tellResults(ctx, SignalDeliveryResult, reqs, results)
		return
	}
	if len(s.heldReqs) == 0 {
		s.heldSince = now
	}
	s.heldReqs, s.heldResults = append(s.heldReqs, reqs...), append(s.heldResults, results...)
}

// tellHeld tells the held results now (the queue is empty, or the run continues as new).
func (s *session) tellHeld(ctx workflow.Context) {
	if len(s.heldReqs) > 0 {
		s.tellResults(ctx, SignalDeliveryResult, nil, nil)
	}
}

// tellHeldDue tells the held results once the first of them is policy.ResultsHold old: the
// session waits for its pane meanwhile, and its intents must not wait past their own timeout.
func (s *session) tellHeldDue(ctx workflow.Context) {
	if len(s.heldReqs) > 0 && workflow.Now(ctx).Sub(s.heldSince) >= policy.ResultsHold {
		s.tellHeld(ctx)
	}
}
