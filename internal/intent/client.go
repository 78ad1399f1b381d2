package intent

// The client side of intent workflows: list, show and change intents. The starter and the
// Claude Code hooks use it; it talks to Temporal only.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/hookapi"
	"github.com/intentq/intentq/workflows"
)

// A list of intents as callers and the hooks read it (package hookapi).
type (
	// Summary is one intent in a list (`starter pending`).
	Summary = hookapi.Summary
	// Filter narrows a list; empty fields match everything.
	Filter = hookapi.Filter
	// Page is one bounded look at a list (ListPage); More says that there are others.
	Page = hookapi.Page
)

// Errors of the intent calls.
var (
	// ErrNotFound is returned for an intent that does not exist.
	ErrNotFound = hookapi.ErrNotFound
	// ErrNotOpen is returned when an update meets an intent that has already ended.
	ErrNotOpen = hookapi.ErrNotOpen
)

// IDString reads a chat or message ID that a door's JSON carries as a string or a number; empty
// when it is neither.
func IDString(raw json.RawMessage) string { return hookapi.IDString(raw) }

// Query is the visibility query for f.
func Query(f Filter) string {
	parts := []string{fmt.Sprintf("WorkflowType = '%s'", workflows.IntentWorkflowName)}
	add := func(key, value string) {
		if value != "" {
			parts = append(parts, fmt.Sprintf("%s = %s", key, quote(value)))
		}
	}
	add(workflows.IntentStatusKey.GetName(), f.Status)
	add(workflows.IntentSessionKey.GetName(), f.Session)
	add(workflows.IntentChatKey.GetName(), f.ChatID)
	if !f.ReceivedBefore.IsZero() {
		parts = append(parts, fmt.Sprintf("%s < %s", workflows.IntentReceivedAtKey.GetName(), quote(f.ReceivedBefore.UTC().Format(time.RFC3339Nano))))
	}
	return strings.Join(parts, " AND ")
}

// quote makes value a string literal of Temporal's visibility query language, whatever
// characters it holds (IDs may hold quotes and backslashes).
func quote(value string) string {
	return "'" + strings.NewReplacer(`'`, `\'`).Replace(value) + "'"
}

// List returns the intents matching f, oldest first. It reads search attributes and memos
// only, so it works while no worker runs.
func List(ctx context.Context, c client.Client, f Filter) ([]Summary, error) {
	var out []Summary
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         Query(f),
			PageSize:      1000,
			NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list intents (%s): %w", Query(f), err)
		}
		for _, info := range resp.GetExecutions() {
			out = append(out, summarize(info))
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return older(out[i], out[j]) })
	return out, nil
}

// AgeScan is how many of the most recent matching intents ListPage reads, at most, to find those
// received before Filter.ReceivedBefore, a condition it checks itself: visibility serves a range
// on a search attribute by reading every row in the range (60 ms at 10,000 pending on SQLite)
// but the most recent rows of a status at once. An older intent behind AgeScan younger ones is
// left out of that page (More is set); with that many new messages the agent has fresher work.
const AgeScan = 200

// ListPage returns at most limit intents matching f, with one call whatever the number that
// match (two when f.ReceivedBefore is set and younger intents fill the most recent rows). SQL
// visibility cannot order by receipt: the page holds the most recent. Hooks use it so that they
// answer as fast with 10,000 pending intents as with 10.
func ListPage(ctx context.Context, c client.Client, f Filter, limit int) (Page, error) {
	before := f.ReceivedBefore
	f.ReceivedBefore = time.Time{}
	page, err := listRecent(ctx, c, f, before, limit, limit+1) // one more says whether there are more
	if err == nil && !before.IsZero() && len(page.Intents) < limit && page.More {
		page, err = listRecent(ctx, c, f, before, limit, AgeScan)
	}
	return page, err
}

// listRecent reads the size most recent intents matching f and keeps the most recent limit of
// those received before before (all when zero), oldest first; More: others match, or there are
// rows it did not read.
func listRecent(ctx context.Context, c client.Client, f Filter, before time.Time, limit, size int) (Page, error) {
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: Query(f), PageSize: int32(size)})
	if err != nil {
		return Page{}, fmt.Errorf("list intents (%s): %w", Query(f), err)
	}
	var page Page
	for _, info := range resp.GetExecutions() {
		if s := summarize(info); before.IsZero() || s.ReceivedAt.Before(before) {
			page.Intents = append(page.Intents, s)
		}
	}
	if len(page.Intents) > limit {
		page.Intents, page.More = page.Intents[:limit], true
	}
	if len(resp.GetExecutions()) >= size {
		page.More = true
	}
	sort.SliceStable(page.Intents, func(i, j int) bool { return older(page.Intents[i], page.Intents[j]) })
	return page, nil
}

// AwaitListed waits, up to timeout, until the list (visibility, which trails the workflow by a
// moment) shows intent id with status: after a change, a person's next `starter pending` then
// agrees with what they just did. It gives up quietly: the change itself is done.
func AwaitListed(ctx context.Context, c client.Client, id, status string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	query := fmt.Sprintf("WorkflowId = %s", quote(id))
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1})
		if err == nil && len(resp.GetExecutions()) == 1 && summarize(resp.GetExecutions()[0]).Status == status {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// older orders intents by receipt, then (for equal times) by chat and numeric message ID, which
// Telegram assigns in order.
func older(a, b Summary) bool {
	if !a.ReceivedAt.Equal(b.ReceivedAt) {
		return a.ReceivedAt.Before(b.ReceivedAt)
	}
	if a.ChatID == b.ChatID {
		ma, errA := strconv.ParseInt(a.MessageID, 10, 64)
		mb, errB := strconv.ParseInt(b.MessageID, 10, 64)
		if errA == nil && errB == nil {
			return ma < mb
		}
	}
	return a.ID < b.ID
}

func summarize(info *workflowpb.WorkflowExecutionInfo) Summary {
	s := Summary{ID: info.GetExecution().GetWorkflowId()}
	s.ChatID, s.MessageID, _ = workflows.ParseIntentID(s.ID)
	fields := info.GetSearchAttributes().GetIndexedFields()
	decode(fields[workflows.IntentStatusKey.GetName()], &s.Status)
	decode(fields[workflows.IntentSessionKey.GetName()], &s.Session)
	decode(fields[workflows.IntentReceivedAtKey.GetName()], &s.ReceivedAt)
	var memo workflows.IntentMemo
	decode(info.GetMemo().GetFields()[workflows.MemoKey], &memo)
	s.Reminders = memo.Reminders
	s.LastRemindedAt = memo.LastRemindedAt
	s.Snippet = memo.Snippet
	s.Source = memo.Source
	s.Delivered = memo.Delivered
	decode(info.GetMemo().GetFields()[workflows.MemoTextKey], &s.Text)
	return s
}

func decode(p *commonpb.Payload, v any) {
	if p != nil {
		_ = tclient.Payloads().FromPayload(p, v)
	}
}

// ResolveID accepts `intent/<chat>/<msg>` or `<chat>/<msg>` and returns the workflow ID.
func ResolveID(id string) (string, error) {
	chat, msg, err := workflows.ParseIntentID(id)
	if err != nil {
		return "", err
	}
	return workflows.IntentID(chat, msg), nil
}

// Show returns everything about one intent: the live state of an open intent, or the final
// state of an ended one.
func Show(ctx context.Context, c client.Client, id string) (workflows.IntentView, error) {
	id, err := ResolveID(id)
	if err != nil {
		return workflows.IntentView{}, err
	}
	resp, err := c.QueryWorkflow(ctx, id, "", workflows.QueryState)
	if err == nil {
		var v workflows.IntentView
		if err := resp.Get(&v); err != nil {
			return v, fmt.Errorf("decode state of %s: %w", id, err)
		}
		return v, nil
	}
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return workflows.IntentView{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return workflows.IntentView{}, fmt.Errorf("query %s: %w", id, err)
}

// Status returns an intent's status from visibility, without a worker.
func Status(ctx context.Context, c client.Client, id string) (string, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return "", fmt.Errorf("%w: %s", ErrNotFound, id)
	case err != nil:
		return "", fmt.Errorf("describe %s: %w", id, err)
	}
	var status string
	decode(desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.IntentStatusKey.GetName()], &status)
	if status == "" && desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		status = strings.ToLower(desc.GetWorkflowExecutionInfo().GetStatus().String())
	}
	return status, nil
}

// ConfirmLimit is the longest list Confirm checks row by row.
const ConfirmLimit = 100

// Confirm drops from list the intents whose status is no longer status, as each workflow's own
// state says (visibility trails a change by a moment): a list taken right after a close, by
// whoever closed it, agrees with the close. Rows that cannot be checked stay; a list longer
// than ConfirmLimit is returned as it is.
func Confirm(ctx context.Context, c client.Client, list []Summary, status string) []Summary {
	if status == "" || len(list) == 0 || len(list) > ConfirmLimit {
		return list
	}
	now := make([]string, len(list))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, s := range list {
		g.Go(func() error {
			if st, err := Status(gctx, c, s.ID); err == nil {
				now[i] = st
			}
			return nil
		})
	}
	_ = g.Wait()
	out := list[:0:0]
	for i, s := range list {
		if now[i] == "" || now[i] == status {
			out = append(out, s)
		}
	}
	return out
}

// Update sends one of the intent workflow's updates (close, link, ignore, remind-now) and
// waits for its answer. An intent that does not exist or has ended says so in the error.
func Update(ctx context.Context, c client.Client, id, name string, arg any) (workflows.IntentState, error) {
	return update[workflows.IntentState](ctx, c, id, name, arg)
}

// Edit puts the person's edited text in place of an intent's message that has not reached the
// agent (workflows.UpdateEdit).
func Edit(ctx context.Context, c client.Client, id, text string) (workflows.EditResult, error) {
	return update[workflows.EditResult](ctx, c, id, workflows.UpdateEdit, workflows.EditRequest{Text: text})
}

// update sends update name with arg to intent id and waits for its outcome (T).
func update[T any](ctx context.Context, c client.Client, id, name string, arg any) (T, error) {
	var st T
	id, err := ResolveID(id)
	if err != nil {
		return st, err
	}
	opts := client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   name,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	}
	if arg != nil {
		opts.Args = []any{arg}
	}
	handle, err := c.UpdateWorkflow(ctx, opts)
	if err == nil {
		err = handle.Get(ctx, &st)
	}
	if err == nil {
		return st, nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		if appErr.Type() == workflows.ErrTypeIntentNotOpen {
			return st, fmt.Errorf("%w: %s", ErrNotOpen, appErr.Message())
		}
		return st, tclient.Refusal(err)
	}
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		// Either it never existed, or it has ended (closed or ignored) and the workflow is done.
		status, serr := Status(ctx, c, id)
		if serr != nil {
			return st, serr
		}
		return st, fmt.Errorf("%w: intent %s is already %s; cannot %s it", ErrNotOpen, id, status, name)
	}
	return st, fmt.Errorf("%s %s: %w", name, id, err)
}

// CloseOldestPending closes the oldest pending intent of a chat, for a reply that names no
// message: N replies close N intents. Visibility lags a moment behind, so an intent that turns
// out to be closed already is passed over for the next one.
func CloseOldestPending(ctx context.Context, c client.Client, chatID string, req workflows.CloseRequest) (string, workflows.IntentState, error) {
	list, err := List(ctx, c, Filter{Status: workflows.StatusPending, ChatID: chatID})
	if err != nil {
		return "", workflows.IntentState{}, err
	}
	for _, s := range list {
		st, err := Update(ctx, c, s.ID, workflows.UpdateClose, req)
		if errors.Is(err, ErrNotOpen) {
			continue
		}
		return s.ID, st, err
	}
	return "", workflows.IntentState{}, fmt.Errorf("%w: chat %s has no pending intent", ErrNotFound, chatID)
}

// OldestPending returns the oldest pending intent of a chat as visibility sees it.
func OldestPending(ctx context.Context, c client.Client, chatID string) (Summary, error) {
	list, err := List(ctx, c, Filter{Status: workflows.StatusPending, ChatID: chatID})
	if err != nil {
		return Summary{}, err
	}
	if len(list) == 0 {
		return Summary{}, fmt.Errorf("%w: chat %s has no pending intent", ErrNotFound, chatID)
	}
	return list[0], nil
}

// closeUpdateWait is how long Close waits for a worker to take the close update before it
// sends the close signal instead.
const closeUpdateWait = 2 * time.Second

// Close closes an intent (the agent replied). The close update answers once the intent has
// closed; when no worker takes it within closeUpdateWait (the worker is down), the close signal
// is sent instead: the server keeps it, and the intent closes as soon as a worker runs it. An
// intent that has ended is ErrNotOpen, one that never existed ErrNotFound.
func Close(ctx context.Context, c client.Client, id string, req workflows.CloseRequest) error {
	uctx, cancel := context.WithTimeout(ctx, closeUpdateWait)
	_, err := Update(uctx, c, id, workflows.UpdateClose, req)
	cancel()
	if err == nil || ctx.Err() != nil || uctx.Err() == nil {
		return err
	}
	id, err = ResolveID(id)
	if err != nil {
		return err
	}
	err = c.SignalWorkflow(ctx, id, "", workflows.SignalClose, req)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		if status, serr := Status(ctx, c, id); serr == nil {
			return fmt.Errorf("%w: intent %s is already %s", ErrNotOpen, id, status)
		}
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("signal close to %s: %w", id, err)
	}
	return nil
}

// Text returns an intent's full text from the start event of its current run: it needs the
// server only, not a worker, so the hooks can present intents while the worker is down.
func Text(ctx context.Context, c client.Client, id string) (string, error) {
	id, err := ResolveID(id)
	if err != nil {
		return "", err
	}
	iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !iter.HasNext() {
		return "", fmt.Errorf("%w: %s has no history", ErrNotFound, id)
	}
	ev, err := iter.Next()
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return "", fmt.Errorf("%w: %s", ErrNotFound, id)
	case err != nil:
		return "", fmt.Errorf("read the start of %s: %w", id, err)
	}
	attrs := ev.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil {
		return "", fmt.Errorf("%s: the first event is %s, not the start", id, ev.GetEventType())
	}
	var in workflows.IntentInput
	if err := tclient.Payloads().FromPayloads(attrs.GetInput(), &in); err != nil {
		return "", fmt.Errorf("decode the input of %s: %w", id, err)
	}
	return in.Text, nil
}

// Reply has the intent's workflow send an answer to the person and close the intent, exactly
// once per answer: the update's ID is the answer's key, so the server runs a repeated request
// once, and an intent that has ended answers a repeat from its record of what was sent.
func Reply(ctx context.Context, c client.Client, id string, req workflows.ReplyRequest) (workflows.ReplyRecord, error) {
	id, err := ResolveID(id)
	if err != nil {
		return workflows.ReplyRecord{}, err
	}
	if req.Key == "" {
		req.Key = workflows.ReplyKey(req.Text)
	}
	handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateID: "reply/" + req.Key, UpdateName: workflows.UpdateReply,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var rec workflows.ReplyRecord
	if err == nil {
		err = handle.Get(ctx, &rec)
	}
	if err == nil {
		return rec, nil
	}
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeIntentNotOpen, errors.As(err, &notFound):
		// Ended: a repeat of an answer already sent is answered from the final state.
		var st workflows.IntentState
		if gerr := c.GetWorkflow(ctx, id, "").Get(ctx, &st); gerr == nil {
			for _, r := range st.Replies {
				if r.Key == req.Key {
					r.Repeated = true
					return r, nil
				}
			}
			return rec, fmt.Errorf("%w: intent %s is already %s", ErrNotOpen, id, st.Status)
		}
		if errors.As(err, &notFound) {
			return rec, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return rec, fmt.Errorf("%w: %s", ErrNotOpen, appErr.Message())
	case errors.As(err, &appErr):
		return rec, tclient.Refusal(err)
	}
	return rec, fmt.Errorf("reply to %s: %w", id, err)
}
