package workflows

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
	"github.com/intentq/intentq/internal/redact"
)

// Headless sessions (SPEC P1-P7): instead of typing into a pane, each prompt runs the agent CLI
// once, headless, FIFO per session and one at a time, under the global permit limit.
const (
	HeadlessWorkflowName = "HeadlessSession"
	UpdatePrompt         = "prompt"
	UpdateCancel         = "cancel"
	QueryAudit           = "audit"
)

// Prompt statuses.
const (
	PromptQueued    = "queued"
	PromptWaiting   = "waiting" // for a global permit
	PromptRunning   = "running"
	PromptSucceeded = "succeeded"
	PromptFailed    = "failed"
	PromptCancelled = "cancelled"
)

// Retry of runs (SPEC P6): at most 3 attempts, 1 s, 2 s, 4 s apart, capped at 60 s.
const (
	MaxRunAttempts   = 3
	RunBackoffFirst  = time.Second
	RunBackoffCap    = 60 * time.Second
	maxKeptPrompts   = 200
	maxResultInAudit = 64 << 10
)

// HeadlessConfig names a headless session. The worker runs a prompt only for a session its own
// config has, as that config says (activities.RunSpec: command, arguments, work folder,
// timeout, tool policy, environment): whoever can write to the Temporal namespace writes this
// input too (issue 23).
type HeadlessConfig struct {
	Name string `json:"name"`
	// Command and BaseArgs are what older workers ran; they are ignored (kept so inputs and
	// states that carry them still decode, and for the config signal of older starters).
	Command  string   `json:"command"`
	BaseArgs []string `json:"base_args"`
	// Timeout only bounds how long the workflow waits for a run; the run itself is bounded by
	// the worker's scheduler.run_timeout.
	Timeout time.Duration `json:"timeout"`
}

// PromptRequest submits a prompt. Key makes it idempotent (the same key twice runs once).
type PromptRequest struct {
	Key     string `json:"key"`
	Channel string `json:"channel"`
	Text    string `json:"text"`
	// ToolFlags are ignored: the worker renders the tool policy of the channel and session
	// from its own config (SPEC P5, issue 23). Kept so older requests decode.
	ToolFlags []string `json:"tool_flags,omitempty"`
	// NoRetry: the policy allows a non-idempotent tool and the prompt is not marked safe to
	// repeat, so a failed run is not tried again (SPEC P6).
	NoRetry bool `json:"no_retry,omitempty"`
	// ReplyTo is a workflow (an intent) told through SignalPromptDone when the prompt ends.
	ReplyTo string `json:"reply_to,omitempty"`
}

// Signals of headless prompts from other workflows (a Telegram intent, SPEC P11).
const (
	SignalPrompt     = "prompt"
	SignalPromptDone = "prompt-done"
)

// Invocation is one attempt of a run.
type Invocation struct {
	Attempt    int       `json:"attempt"`
	StartedAt  time.Time `json:"started_at"`
	ExitCode   int       `json:"exit_code"`
	DurationMS int64     `json:"duration_ms"`
	CostUSD    float64   `json:"cost_usd"`
	Tokens     int64     `json:"tokens"`
	Error      string    `json:"error,omitempty"`
}

// PromptRecord is a prompt with its status and runs (the audit, SPEC P4).
type PromptRecord struct {
	ID          string       `json:"id"`
	Key         string       `json:"key"`
	Channel     string       `json:"channel"`
	Text        string       `json:"text"`
	Status      string       `json:"status"`
	QueuedAt    time.Time    `json:"queued_at"`
	FinishedAt  *time.Time   `json:"finished_at,omitempty"`
	Result      string       `json:"result,omitempty"`
	Error       string       `json:"error,omitempty"`
	CostUSD     float64      `json:"cost_usd"`
	Invocations []Invocation `json:"invocations,omitempty"`
}

// HeadlessState is a headless session's state, carried over by continue-as-new.
type HeadlessState struct {
	Config    HeadlessConfig `json:"config"`
	Prompts   []PromptRecord `json:"prompts"`
	Seq       int64          `json:"seq"`
	CostUSD   float64        `json:"cost_usd"`
	ResumeID  string         `json:"resume_id,omitempty"`
	Succeeded int64          `json:"succeeded"`
	Failed    int64          `json:"failed"`
}

// HeadlessSessionWorkflow runs a session's prompts FIFO, one at a time (SPEC P1), each under a
// global permit (P2), retried per P6, with every invocation recorded (P4) and the cost summed
// (P7). A prompt that finished is never run again (P3): the state is the workflow's.
func HeadlessSessionWorkflow(ctx workflow.Context, st HeadlessState) error {
	h := &headless{HeadlessState: st, flags: map[string]PromptRequest{}}
	if err := workflow.SetQueryHandler(ctx, QueryAudit, func() (HeadlessState, error) { return h.HeadlessState, nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePrompt, h.submit, workflow.UpdateHandlerOptions{Validator: func(r PromptRequest) error {
		if r.Text == "" {
			return errors.New("prompt text is empty")
		}
		return nil
	}}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateCancel, h.cancel); err != nil {
		return err
	}
	prompts := workflow.GetSignalChannel(ctx, SignalPrompt)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var r PromptRequest
			prompts.Receive(ctx, &r)
			if r.Text != "" {
				_, _ = h.submit(ctx, r)
			}
		}
	})
	configure := workflow.GetSignalChannel(ctx, SignalConfigure)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var c HeadlessConfig
			configure.Receive(ctx, &c)
			h.Config = c
		}
	})
	historyLong := func() bool {
		return historyTooLong(ctx, policy.MaxHistoryEvents)
	}
	for {
		i := h.next()
		if i < 0 {
			if historyLong() {
				if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
					return err
				}
				return workflow.NewContinueAsNewError(ctx, HeadlessWorkflowName, h.HeadlessState)
			}
			if err := workflow.Await(ctx, func() bool { return h.next() >= 0 || historyLong() }); err != nil {
				return err
			}
			continue
		}
		h.run(ctx, i)
	}
}

type headless struct {
	HeadlessState
	flags map[string]PromptRequest // tool flags and retry switch by prompt ID (not in the audit)
	// running is the prompt being run and stopRun cancels it (starter cancel).
	running string
	stopRun workflow.CancelFunc
}

// cancel stops a prompt (SPEC P6: cancelled by the user, not retried): a queued one never runs,
// a running one has its CLI stopped.
func (h *headless) cancel(ctx workflow.Context, id string) (PromptRecord, error) {
	i := h.index(id)
	if i < 0 {
		return PromptRecord{}, fmt.Errorf("no prompt %s in session %s", id, h.Config.Name)
	}
	switch h.Prompts[i].Status {
	case PromptQueued, PromptWaiting:
		now := workflow.Now(ctx)
		h.Prompts[i].Status, h.Prompts[i].FinishedAt, h.Prompts[i].Error = PromptCancelled, &now, "cancelled by the user"
	case PromptRunning:
		if h.running == id && h.stopRun != nil {
			h.stopRun()
		}
	default:
		return h.Prompts[i], fmt.Errorf("prompt %s is already %s", id, h.Prompts[i].Status)
	}
	return h.Prompts[i], nil
}

func (h *headless) submit(ctx workflow.Context, r PromptRequest) (PromptRecord, error) {
	if r.Key != "" {
		for _, p := range h.Prompts {
			if p.Key == r.Key {
				return p, nil // the same key twice runs once
			}
		}
	}
	h.Seq++
	p := PromptRecord{ID: fmt.Sprintf("%s#%d", h.Config.Name, h.Seq), Key: r.Key, Channel: r.Channel, Text: r.Text,
		Status: PromptQueued, QueuedAt: workflow.Now(ctx)}
	if p.Key == "" {
		p.Key = p.ID
	}
	h.flags[p.ID] = r
	h.Prompts = append(h.Prompts, p)
	h.trim()
	return p, nil
}

// next is the index of the oldest queued prompt, or -1.
func (h *headless) next() int {
	for i, p := range h.Prompts {
		if p.Status == PromptCancelled {
			continue
		}
		if p.Status == PromptQueued {
			return i
		}
	}
	return -1
}

// trim keeps the audit bounded: the oldest finished prompts go first.
func (h *headless) trim() {
	for len(h.Prompts) > maxKeptPrompts {
		i := 0
		for i < len(h.Prompts) && h.Prompts[i].FinishedAt == nil {
			i++
		}
		if i == len(h.Prompts) {
			return
		}
		h.Prompts = append(h.Prompts[:i], h.Prompts[i+1:]...)
	}
}

// run executes prompt i: permit, attempts with backoff, audit, release.
func (h *headless) run(ctx workflow.Context, i int) {
	id := h.Prompts[i].ID
	req := h.flags[id]
	h.set(id, func(p *PromptRecord) { p.Status = PromptWaiting })
	if err := AcquirePermit(ctx); err != nil {
		h.finish(ctx, id, "", fmt.Errorf("no permit: %w", err))
		return
	}
	defer ReleasePermit(ctx)
	if h.Prompts[h.index(id)].Status == PromptCancelled {
		return // cancelled while it waited for the permit
	}
	h.set(id, func(p *PromptRecord) { p.Status = PromptRunning })
	runCtx, stop := workflow.WithCancel(ctx)
	h.running, h.stopRun = id, stop
	defer func() { h.running, h.stopRun = "", nil }()

	attempts := MaxRunAttempts
	if req.NoRetry {
		attempts = 1
	}
	backoff := RunBackoffFirst
	var lastErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		actx := workflow.WithActivityOptions(runCtx, workflow.ActivityOptions{
			StartToCloseTimeout: policy.Or(h.Config.Timeout, policy.DefaultRunTimeout) + time.Minute,
			// A worker that dies mid-run stops heartbeating; the attempt fails over in 30 s.
			HeartbeatTimeout: 30 * time.Second,
			// A run goes to whichever worker polls (several workers share the runs), not eagerly
			// to the one that holds this session's workflow.
			DisableEagerExecution: true,
			// Attempts are counted here, so each one is audited.
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		started := workflow.Now(ctx)
		var res activities.RunResult
		// The run names the session and carries the prompt: the worker resolves the rest from
		// its own config. Only the activity's input changed from older code (it is not part of
		// what replay compares), so running sessions replay without a version marker.
		p := h.Prompts[h.index(id)]
		err := workflow.ExecuteActivity(actx, activities.AgentRunName, activities.RunRequest{
			Session: h.Config.Name, Channel: p.Channel, Prompt: p.Text, ResumeID: h.ResumeID,
		}).Get(ctx, &res)
		if appErr, ok := asApplicationError(err); ok && appErr.HasDetails() {
			_ = appErr.Details(&res) // a failed attempt still reports exit code, cost, tokens
		}
		inv := Invocation{Attempt: attempt, StartedAt: started, ExitCode: res.ExitCode, DurationMS: res.DurationMS,
			CostUSD: res.CostUSD, Tokens: res.InputTokens + res.OutputTokens + res.CacheReadTokens + res.CacheCreationTokens}
		if err != nil {
			inv.Error = redact.Secrets(err.Error())
		}
		h.set(id, func(p *PromptRecord) { p.Invocations = append(p.Invocations, inv); p.CostUSD += res.CostUSD })
		h.CostUSD += res.CostUSD
		count(ctx, metricRunCost, map[string]string{"session": h.Config.Name}, int64(res.CostUSD*1e6))
		if res.SessionID != "" {
			h.ResumeID = res.SessionID
		}
		if err == nil {
			h.finish(ctx, id, res.Result, nil)
			return
		}
		if runCtx.Err() != nil {
			h.finishAs(ctx, id, PromptCancelled, "cancelled by the user")
			return
		}
		lastErr = err
		if appErr, ok := asApplicationError(err); ok && appErr.NonRetryable() {
			break
		}
		if attempt < attempts {
			_ = workflow.Sleep(ctx, backoff)
			backoff = min(2*backoff, RunBackoffCap)
		}
	}
	h.finish(ctx, id, "", lastErr)
}

func (h *headless) finish(ctx workflow.Context, id, result string, err error) {
	now := workflow.Now(ctx)
	h.set(id, func(p *PromptRecord) {
		p.FinishedAt = &now
		// What the CLI answered is kept masked (SPEC P8): a run can echo a secret it found.
		result = redact.Secrets(result)
		if len(result) > maxResultInAudit {
			cut := maxResultInAudit
			for cut > 0 && !utf8.RuneStart(result[cut]) {
				cut--
			}
			result = result[:cut] + "…"
		}
		p.Result = result
		if err != nil {
			p.Status, p.Error = PromptFailed, redact.Secrets(err.Error())
		} else {
			p.Status = PromptSucceeded
		}
	})
	outcome := PromptSucceeded
	if err != nil {
		h.Failed++
		outcome = PromptFailed
	} else {
		h.Succeeded++
	}
	count(ctx, metricRuns, map[string]string{"session": h.Config.Name, "outcome": outcome}, 1)
	if replyTo := h.flags[id].ReplyTo; replyTo != "" {
		if i := h.index(id); i >= 0 {
			if serr := workflow.SignalExternalWorkflow(ctx, replyTo, "", SignalPromptDone, h.Prompts[i]).Get(ctx, nil); serr != nil {
				workflow.GetLogger(ctx).Info("prompt result not taken", "prompt", id, "reply_to", replyTo, "error", serr)
			}
		}
	}
	delete(h.flags, id)
}

// finishAs ends a prompt with a status of its own (cancelled).
func (h *headless) finishAs(ctx workflow.Context, id, status, reason string) {
	now := workflow.Now(ctx)
	h.set(id, func(p *PromptRecord) { p.Status, p.Error, p.FinishedAt = status, reason, &now })
	delete(h.flags, id)
}

func (h *headless) index(id string) int {
	for i := range h.Prompts {
		if h.Prompts[i].ID == id {
			return i
		}
	}
	return -1
}

func (h *headless) set(id string, f func(*PromptRecord)) {
	if i := h.index(id); i >= 0 {
		f(&h.Prompts[i])
	}
}
