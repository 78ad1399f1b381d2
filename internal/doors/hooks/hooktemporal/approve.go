package hooktemporal

// The permission hook (issue 36): Claude Code's and Codex's PermissionRequest. It starts an
// approval (workflows.ApprovalWorkflow), tells the session the agent waits for the person, and
// waits for the approval's end: a decision from the phone is handed to the CLI in its own format
// (hookSpecificOutput.decision); anything else (the terminal answered, the wait ran out,
// Temporal down) prints nothing, and the CLI's own prompt decides, as without intentq.
//
// The phone's answer counts only if the CLI acts on it. The hook takes it from the
// approval, hands it over only while it was not ended by its CLI and (Claude Code) the prompt is
// still open, and confirms to the approval before it prints; otherwise it tells the approval the
// terminal answered. Left open: the CLI ending the hook in the milliseconds between the
// confirmation and the print (the card then names the phone's answer).

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/redact"
	"github.com/intentq/intentq/workflows"
)

// approvalGrace is how much longer than the approval's own wait the hook waits for its end: the
// workflow ends itself at the wait, and a decision just before that must still reach the hook.
const approvalGrace = 20 * time.Second

// Approver is what the permission hook needs from Temporal; TemporalApprover is the real one.
type Approver interface {
	Start(ctx context.Context, id string, in workflows.ApprovalInput) error
	// Wait returns the approval's result once it has ended.
	Wait(ctx context.Context, id string) (workflows.ApprovalResult, error)
	// TakeAnswer waits for the phone's answer (Pending) or the approval's end.
	TakeAnswer(ctx context.Context, id string) (workflows.ApprovalResult, error)
	// HandedOver tells the approval the hook hands the phone's answer to the CLI; it returns
	// the approval's result, which is that answer unless the terminal's came first.
	HandedOver(ctx context.Context, id string) (workflows.ApprovalResult, error)
	// Follow tells the approval what happened at the terminal.
	Follow(ctx context.Context, id string, f workflows.ApprovalFollow) error
	Report(ctx context.Context, session string, ev workflows.AgentEvent) error
}

// ApprovalSettings say whether and where the session's approvals go.
type ApprovalSettings struct {
	Session string
	// CLI is the agent's kind: claude (allow for the session offered where Claude Code
	// suggests it) or codex (allow or deny only: Codex fails closed on anything more).
	CLI string
	// Chat is the Telegram chat of the card; empty: approvals are off for the session (the
	// hook reports the agent waits, and the terminal decides).
	Chat string
	// Wait is how long the hook waits for the phone.
	Wait        time.Duration
	Push        bool
	RemindEvery time.Duration
	Logger      *zap.Logger
	// ClaudeDir is where Claude Code keeps its session registry; empty: ClaudeDir().
	ClaudeDir string
}

// PermissionOutput is what the permission hook prints for a decision.
type PermissionOutput struct {
	HookSpecificOutput PermissionDecisionOutput `json:"hookSpecificOutput"`
}

// PermissionDecisionOutput carries the decision.
type PermissionDecisionOutput struct {
	HookEventName string             `json:"hookEventName"`
	Decision      PermissionDecision `json:"decision"`
}

// PermissionDecision is the CLI's decision object: behavior allow or deny, a message for the
// model when denied, and the rules to add (allow for the session).
type PermissionDecision struct {
	Behavior           string           `json:"behavior"`
	Message            string           `json:"message,omitempty"`
	UpdatedPermissions []map[string]any `json:"updatedPermissions,omitempty"`
}

// DeniedMessage is what the model is told of a denial from the phone.
const DeniedMessage = "The person denied this from their phone. Do not retry it; ask them, or do something else."

// Approve answers one PermissionRequest hook: it reads the input, asks the person through an
// approval and prints the decision, or nothing. It never fails the CLI: whatever goes wrong
// is logged, and the CLI's own prompt decides.
func Approve(ctx context.Context, stdin io.Reader, stdout io.Writer, s ApprovalSettings, dial func(context.Context) (Approver, func(), error)) error {
	log := s.Logger.With(zap.String("hook", hooks.EventPermissionRequest), zap.String("session", s.Session))
	data, err := hooks.ReadRaw(stdin)
	var in hooks.PermissionInput
	if err == nil && len(data) > hooks.MaxInput {
		err = fmt.Errorf("hook input is over %d bytes", hooks.MaxInput)
	}
	if err == nil {
		err = json.Unmarshal(data, &in)
	}
	if err != nil {
		log.Warn("permission hook input unusable; the terminal decides", zap.Error(err))
		return nil
	}
	if s.Session == "" || in.AgentID != "" {
		return nil // serves no session, or a subagent's prompt (shown in the main agent's terminal)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, closeFn, err := dial(dctx)
	if err != nil {
		log.Warn("permission hook could not reach Temporal; the terminal decides", zap.Error(err))
		return nil
	}
	defer closeFn()
	now := time.Now()
	if s.Chat == "" {
		if err := b.Report(dctx, s.Session, workflows.AgentEvent{Event: hooks.EventPermissionRequest, At: now, Detail: in.ToolName}); err != nil {
			log.Warn("permission hook could not tell the session", zap.Error(err))
		}
		return nil
	}
	home, _ := os.UserHomeDir()
	req, sessionRules, err := approvalInput(s, in, now, home)
	if err != nil {
		log.Warn("permission hook", zap.Error(err))
		return nil
	}
	req.Confirms = true
	id := workflows.ApprovalWorkflowID(s.Session, strings.SplitN(req.Buttons[0].Data, ":", 2)[0])
	if err := b.Start(dctx, id, req); err != nil {
		log.Warn("permission hook could not start the approval; the terminal decides", zap.Error(err))
		return nil
	}
	if err := b.Report(dctx, s.Session, workflows.AgentEvent{Event: hooks.EventPermissionRequest, At: now, Detail: id}); err != nil {
		log.Warn("permission hook could not tell the session", zap.String("approval", id), zap.Error(err))
	}
	log = log.With(zap.String("approval", id))
	// The CLI ends the hook when the terminal answers No (Claude Code): the card is told.
	ended := make(chan os.Signal, 1)
	signal.Notify(ended, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(ended)
	wctx, wcancel := context.WithTimeout(ctx, s.Wait+approvalGrace)
	defer wcancel()
	got := make(chan workflows.ApprovalResult, 1)
	go func() {
		if r, ok := awaitAnswer(wctx, b, id, log); ok {
			got <- r
		}
	}()
	select {
	case sig := <-ended:
		tellEnded(ctx, b, id, sig, log)
		return nil
	case <-wctx.Done():
		log.Warn("no end of the approval within the hook's wait; the terminal decides")
		return nil
	case r := <-got:
		if r.Pending {
			r = handOver(ctx, b, id, in.SessionID, s, ended, log)
		}
		if r.Outcome != workflows.OutcomeDecided {
			return nil
		}
		out := PermissionOutput{HookSpecificOutput: PermissionDecisionOutput{HookEventName: "PermissionRequest", Decision: PermissionDecision{Behavior: "allow"}}}
		switch r.Choice {
		case workflows.ChoiceDeny:
			out.HookSpecificOutput.Decision = PermissionDecision{Behavior: "deny", Message: DeniedMessage}
		case workflows.ChoiceAllowSession:
			out.HookSpecificOutput.Decision.UpdatedPermissions = sessionRules
		}
		log.Info("approval decided from the phone", zap.String("choice", r.Choice), zap.Int64("by", r.UserID))
		if s.CLI == "copilot" {
			// Copilot CLI 1.0.102 reads the decision flat (no hookSpecificOutput).
			return json.NewEncoder(stdout).Encode(out.HookSpecificOutput.Decision)
		}
		return json.NewEncoder(stdout).Encode(out)
	}
}

// awaitAnswer waits for the phone's answer (Pending) or the approval's end; by the end alone
// when the approval does not hand answers over (a worker from before confirmed answers runs it)
// or has ended. ok is false when the approval is gone or ctx ends first.
func awaitAnswer(ctx context.Context, b Approver, id string, log *zap.Logger) (r workflows.ApprovalResult, ok bool) {
	for ctx.Err() == nil {
		r, err := b.TakeAnswer(ctx, id)
		if err == nil {
			return r, true
		}
		var unavailable *serviceerror.Unavailable
		if !errors.As(err, &unavailable) {
			break
		}
		select { // Temporal unreachable (an embedded server restarting with its worker): ask again.
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return awaitEnd(ctx, b, id, log)
}

// awaitEnd waits for the approval's end.
func awaitEnd(ctx context.Context, b Approver, id string, log *zap.Logger) (workflows.ApprovalResult, bool) {
	for ctx.Err() == nil {
		r, err := b.Wait(ctx, id)
		if err == nil {
			return r, true
		}
		var nf *serviceerror.NotFound
		var ended *temporal.WorkflowExecutionError
		if errors.As(err, &nf) || errors.As(err, &ended) {
			log.Warn("approval gone; the terminal decides", zap.Error(err))
			return workflows.ApprovalResult{}, false
		}
		// Temporal unreachable (an embedded server restarting with its worker): ask again.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return workflows.ApprovalResult{}, false
}

// handOver hands the phone's answer to the CLI if the CLI still waits for it: the hook was not
// ended by it, Claude Code's registry does not show its prompt closed (one that shows nothing,
// a Claude Code before the registry, is taken as open), and the approval confirms the answer
// still counts. It returns the approval's result; anything but a decision prints nothing.
func handOver(ctx context.Context, b Approver, id, sessionID string, s ApprovalSettings, ended <-chan os.Signal, log *zap.Logger) workflows.ApprovalResult {
	select {
	case sig := <-ended:
		tellEnded(ctx, b, id, sig, log)
		return workflows.ApprovalResult{}
	default:
	}
	if s.CLI == "claude" {
		dir := s.ClaudeDir
		if dir == "" {
			dir = ClaudeDir()
		}
		if open, known := claudePromptOpen(dir, sessionID); known && !open {
			follow(ctx, b, id, workflows.EventPromptClosed, log)
			return workflows.ApprovalResult{}
		}
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r, err := b.HandedOver(hctx, id)
	if err != nil {
		log.Warn("the approval did not confirm the phone's answer; the terminal decides", zap.Error(err))
		return workflows.ApprovalResult{}
	}
	return r
}

// tellEnded tells the approval its CLI ended the hook (Claude Code does when the terminal
// answers No): the terminal answered.
func tellEnded(ctx context.Context, b Approver, id string, sig os.Signal, log *zap.Logger) {
	follow(ctx, b, id, workflows.EventHookEnded, log.With(zap.String("signal", sig.String())))
}

// follow tells the approval what happened at the terminal, with a short wait of its own (the
// hook is on its way out).
func follow(ctx context.Context, b Approver, id, event string, log *zap.Logger) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := b.Follow(fctx, id, workflows.ApprovalFollow{Event: event, At: time.Now()}); err != nil {
		log.Warn("the terminal answered; the card could not be told", zap.String("event", event), zap.Error(err))
	}
}

// approvalInput is the approval for a permission request: what the card shows (every field of
// the call), its buttons (opaque random data), and the rules "allow for this session" hands the
// CLI: Claude Code's own suggestions of lasting rules as far as they go no wider than the
// request, scoped to the session (sessionGrants); never a mode change. home is the person's
// home folder, never given as a folder.
func approvalInput(s ApprovalSettings, in hooks.PermissionInput, now time.Time, home string) (workflows.ApprovalInput, []map[string]any, error) {
	token, err := randomID(12)
	if err != nil {
		return workflows.ApprovalInput{}, nil, err
	}
	req := workflows.ApprovalInput{Session: s.Session, CLI: s.CLI, Chat: s.Chat, Tool: in.ToolName, Wait: s.Wait, AskedAt: now,
		Push: s.Push, RemindEvery: s.RemindEvery}
	req.Action, req.Said = describe(in.ToolName, in.ToolInput)
	req.Action, req.Said = clip(req.Action, maxCarried), clip(req.Said, maxCarried)
	req.Fields, _, req.MoreFields = fieldsOf(in.ToolInput)
	var rules []map[string]any
	if s.CLI == "claude" {
		rules, req.Grants, req.Withheld = sessionGrants(in.ToolName, in.ToolInput, in.CWD, home, in.PermissionSuggestions)
	}
	choices := []string{workflows.ChoiceAllow}
	if len(rules) > 0 {
		choices = append(choices, workflows.ChoiceAllowSession)
	}
	choices = append(choices, workflows.ChoiceDeny)
	for _, c := range choices {
		code, err := randomID(6)
		if err != nil {
			return workflows.ApprovalInput{}, nil, err
		}
		req.Buttons = append(req.Buttons, workflows.ApprovalButton{Choice: c, Data: token + ":" + code})
	}
	return req, rules, nil
}

// describe is what a tool call will do, as the agent gave it, in short for the push and the
// memo (the card shows every field: fieldsOf): the command of a shell tool, the path of a file
// tool, else the tool's whole input; and the agent's own description of it (Bash's
// description), which the card shows apart.
func describe(tool string, input json.RawMessage) (action, said string) {
	var fields map[string]any
	if json.Unmarshal(input, &fields) != nil {
		return string(input), ""
	}
	said, _ = fields["description"].(string)
	for _, key := range []string{"command", "cmd", "file_path", "path", "url", "pattern"} {
		switch v := fields[key].(type) {
		case string:
			action = v
		case []any: // Codex's exec argv
			var parts []string
			for _, p := range v {
				parts = append(parts, fmt.Sprint(p))
			}
			action = strings.Join(parts, " ")
		}
		if action != "" {
			if key != "command" && key != "cmd" {
				action = key + ": " + action
			}
			if rest := others(fields, key); rest != "" && key != "command" && key != "cmd" {
				action += "\n" + rest
			}
			return action, said
		}
	}
	delete(fields, "description")
	b, _ := json.MarshalIndent(fields, "", "  ")
	return string(b), said
}

// others is the input's other fields (not the description), for a file tool's content.
func others(fields map[string]any, key string) string {
	rest := map[string]any{}
	for k, v := range fields {
		if k != key && k != "description" {
			rest[k] = v
		}
	}
	if len(rest) == 0 {
		return ""
	}
	b, _ := json.MarshalIndent(rest, "", "  ")
	return string(b)
}

// randomID is n random bytes, URL-safe base64.
func randomID(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// TemporalApprover is the Approver on a Temporal client.
type TemporalApprover struct {
	Client    client.Client
	TaskQueue string
}

// Start starts the approval workflow.
func (t TemporalApprover) Start(ctx context.Context, id string, in workflows.ApprovalInput) error {
	memo := workflows.ApprovalMemo{Session: in.Session, Chat: in.Chat, Tool: in.Tool, Action: redact.Snippet(redact.Reveal(in.Action, 120), 160), AskedAt: in.AskedAt}
	_, err := t.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: t.TaskQueue,
		WorkflowExecutionTimeout: in.Wait + time.Hour, Memo: map[string]any{workflows.MemoKey: memo}}, workflows.ApprovalWorkflowName, in)
	if err != nil {
		return fmt.Errorf("start approval %s: %w", id, err)
	}
	return nil
}

// Wait waits for the approval's result.
func (t TemporalApprover) Wait(ctx context.Context, id string) (workflows.ApprovalResult, error) {
	var r workflows.ApprovalResult
	if err := t.Client.GetWorkflow(ctx, id, "").Get(ctx, &r); err != nil {
		return r, fmt.Errorf("wait for approval %s: %w", id, err)
	}
	return r, nil
}

// TakeAnswer waits for the phone's answer or the approval's end (workflows.UpdateTakeAnswer).
func (t TemporalApprover) TakeAnswer(ctx context.Context, id string) (workflows.ApprovalResult, error) {
	return t.update(ctx, id, workflows.UpdateTakeAnswer)
}

// HandedOver confirms handing the phone's answer over (workflows.UpdateHandedOver).
func (t TemporalApprover) HandedOver(ctx context.Context, id string) (workflows.ApprovalResult, error) {
	return t.update(ctx, id, workflows.UpdateHandedOver)
}

// update runs the approval's update name and returns its result.
func (t TemporalApprover) update(ctx context.Context, id, name string) (workflows.ApprovalResult, error) {
	var r workflows.ApprovalResult
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name,
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &r)
	}
	if err != nil {
		return r, fmt.Errorf("%s on approval %s: %w", name, id, err)
	}
	return r, nil
}

// Follow signals the approval what happened at the terminal.
func (t TemporalApprover) Follow(ctx context.Context, id string, f workflows.ApprovalFollow) error {
	if err := t.Client.SignalWorkflow(ctx, id, "", workflows.SignalFollowed, f); err != nil {
		return fmt.Errorf("tell approval %s: %w", id, err)
	}
	return nil
}

// Report tells the session the agent waits for the person.
func (t TemporalApprover) Report(ctx context.Context, session string, ev workflows.AgentEvent) error {
	return Temporal{Client: t.Client}.Report(ctx, session, ev)
}
