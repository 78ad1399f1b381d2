package workflows

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

// tellResults sends each intent (reqs[i].ReplyTo) its result on signal, all at once, and waits
// until the server has taken them. One activity sends them all (a local one, quickStep): a
// workflow's own SignalExternalWorkflow costs the session a workflow task per intent (50 per
// typed block), and a hook's take waited behind those tasks.
func (s *session) tellResults(ctx workflow.Context, signal string, reqs []DeliveryRequest, results []DeliveryResult) {
	if len(reqs) == 0 {
		return
	}
	req := activities.SignalAllRequest{Signal: signal, Key: fmt.Sprintf("%s/%s/%d", workflow.GetInfo(ctx).WorkflowExecution.RunID, signal, s.tells)}
	s.tells++
	for i, r := range reqs {
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
