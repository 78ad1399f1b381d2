package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/workflows"
)

// maxFloorRuns bounds how many open runs of one workflow type the version-floor check reads
// (one history event each).
const maxFloorRuns = 5000

// VersionFloor names the open session and intent runs this build cannot replay: those started
// at a version below workflows.SessionFloor or workflows.IntentFloor (docs/design.md, "Changes
// to running workflows"). Such a run is not lost: its workflow tasks fail until a worker of an
// older build runs it, or it is closed.
func VersionFloor(ctx context.Context, c client.Client, namespace string) Result {
	const name = "version floor"
	var below []string
	checked := 0
	for _, k := range []struct {
		typ   string
		floor int
	}{{workflows.SessionWorkflowName, workflows.SessionFloor}, {workflows.IntentWorkflowName, workflows.IntentFloor}} {
		runs, err := openRuns(ctx, c, namespace, k.typ)
		if err != nil {
			return Result{Name: name, Detail: err.Error()}
		}
		for _, run := range runs {
			v, err := startedVersion(ctx, c, namespace, run)
			if err != nil {
				return Result{Name: name, Detail: err.Error()}
			}
			checked++
			if v < k.floor {
				below = append(below, fmt.Sprintf("%s (version %d, floor %d)", run.GetWorkflowId(), v, k.floor))
			}
		}
	}
	if len(below) > 0 {
		shown := below[:min(len(below), 5)]
		return Result{Name: name, Detail: fmt.Sprintf("%d open runs older than this build replays: %s", len(below), strings.Join(shown, ", ")),
			Hint: "run the build before until they end: a session moves up at its next worker start, an intent when answered or closed (starter close)"}
	}
	return Result{Name: name, OK: true, Detail: fmt.Sprintf("%d open sessions and intents, all at session version %d / intent version %d or later", checked, workflows.SessionFloor, workflows.IntentFloor)}
}

// openRuns lists the running executions of a workflow type, at most maxFloorRuns.
func openRuns(ctx context.Context, c client.Client, namespace, typ string) ([]*commonpb.WorkflowExecution, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", typ)
	var runs []*commonpb.WorkflowExecution
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: q, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list open %s runs: %w", typ, err)
		}
		for _, info := range resp.GetExecutions() {
			runs = append(runs, info.GetExecution())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 || len(runs) >= maxFloorRuns {
			return runs, nil
		}
	}
}

// startedVersion is the version in a run's input (its first event; 0 when it carries none).
func startedVersion(ctx context.Context, c client.Client, namespace string, run *commonpb.WorkflowExecution) (int, error) {
	resp, err := c.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace: namespace, Execution: run, MaximumPageSize: 1, HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
	})
	if err != nil {
		return 0, fmt.Errorf("read the start of %s: %w", run.GetWorkflowId(), err)
	}
	events := resp.GetHistory().GetEvents()
	if len(events) == 0 || events[0].GetWorkflowExecutionStartedEventAttributes() == nil {
		return 0, errors.New("the history of " + run.GetWorkflowId() + " does not begin with its start")
	}
	var in struct {
		Version int `json:"version"`
	}
	if err := tclient.Payloads().FromPayloads(events[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		return 0, fmt.Errorf("read the input of %s: %w", run.GetWorkflowId(), err)
	}
	return in.Version, nil
}
