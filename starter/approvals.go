package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/intentq/intentq/workflows"
)

// approvalRow is one approval as `starter approvals` lists it: what was asked, and who
// answered, when and from where (issue 36).
type approvalRow struct {
	ID string `json:"id"`
	workflows.ApprovalMemo
	// Open: it still waits for an answer; else Result says how it ended.
	Open   bool                      `json:"open"`
	Result *workflows.ApprovalResult `json:"result,omitempty"`
}

func newApprovals() *cobra.Command {
	var asJSON bool
	var session string
	var limit int
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "the permissions agents asked for, newest first: what, and who answered, when and from where",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, c, err := connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			rows, err := listApprovals(cmd.Context(), c, session, limit)
			if err != nil {
				return err
			}
			if asJSON {
				if rows == nil {
					rows = []approvalRow{}
				}
				return printJSON(cmd.OutOrStdout(), rows)
			}
			return writeApprovals(cmd.OutOrStdout(), rows)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "only this session's")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// listApprovals reads the approvals from visibility, and each ended one's result.
func listApprovals(ctx context.Context, c client.Client, session string, limit int) ([]approvalRow, error) {
	query := fmt.Sprintf("WorkflowType = '%s'", workflows.ApprovalWorkflowName)
	if session != "" {
		query += fmt.Sprintf(" AND WorkflowId STARTS_WITH '%s'", strings.ReplaceAll(workflows.ApprovalIDPrefix+session+"/", "'", ""))
	}
	var rows []approvalRow
	var token []byte
	for len(rows) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: int32(limit)})
		if err != nil {
			return nil, fmt.Errorf("list approvals: %w", err)
		}
		for _, e := range resp.Executions {
			if len(rows) == limit {
				break
			}
			row := approvalRow{ID: e.GetExecution().GetWorkflowId(), Open: e.GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING}
			if p, ok := e.GetMemo().GetFields()[workflows.MemoKey]; ok {
				_ = converter.GetDefaultDataConverter().FromPayload(p, &row.ApprovalMemo)
			}
			if !row.Open {
				var r workflows.ApprovalResult
				if err := c.GetWorkflow(ctx, row.ID, e.GetExecution().GetRunId()).Get(ctx, &r); err == nil {
					row.Result = &r
				}
			}
			rows = append(rows, row)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	return rows, nil
}

func writeApprovals(w io.Writer, rows []approvalRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no approvals")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ASKED\tSESSION\tTOOL\tACTION\tANSWER\tBY\tVIA\tAT")
	for _, r := range rows {
		answer, by, via, at := "waiting", "", "", ""
		if res := r.Result; res != nil {
			answer, by, via, at = res.Outcome, res.By, res.Via, res.At.Local().Format(time.DateTime)
			if res.Choice != "" {
				answer = res.Choice
			} else if res.Outcome == workflows.OutcomeTerminal {
				answer, via = res.Detail, "terminal"
			}
		} else if !r.Open {
			answer = "ended"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.AskedAt.Local().Format(time.DateTime), r.Session, r.Tool, r.Action, answer, by, via, at)
	}
	return tw.Flush()
}
