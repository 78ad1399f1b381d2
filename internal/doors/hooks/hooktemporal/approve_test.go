package hooktemporal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/workflows"
)

// fakeApprover is an approval the phone answered: TakeAnswer gives taken, HandedOver confirms
// (handed), Wait gives ended; it records what the hook told it.
type fakeApprover struct {
	taken   workflows.ApprovalResult
	takeErr error
	handed  workflows.ApprovalResult
	ended   workflows.ApprovalResult

	mu       sync.Mutex
	started  workflows.ApprovalInput
	follows  []string
	handOver int
}

func (f *fakeApprover) Start(_ context.Context, _ string, in workflows.ApprovalInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = in
	return nil
}

func (f *fakeApprover) Wait(context.Context, string) (workflows.ApprovalResult, error) {
	return f.ended, nil
}

func (f *fakeApprover) TakeAnswer(context.Context, string) (workflows.ApprovalResult, error) {
	return f.taken, f.takeErr
}

func (f *fakeApprover) HandedOver(context.Context, string) (workflows.ApprovalResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handOver++
	return f.handed, nil
}

func (f *fakeApprover) Follow(_ context.Context, _ string, fl workflows.ApprovalFollow) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.follows = append(f.follows, fl.Event)
	return nil
}

func (f *fakeApprover) Report(context.Context, string, workflows.AgentEvent) error { return nil }

// deny is the phone's Deny as the approval gives it: pending (taken), then counted (handed).
func deny(pending bool) workflows.ApprovalResult {
	return workflows.ApprovalResult{Outcome: workflows.OutcomeDecided, Choice: workflows.ChoiceDeny, By: "Ann", UserID: 42, Pending: pending}
}

// registry writes Claude Code's registry entry for session s1 in a new folder and returns it;
// status "" writes none.
func registry(t *testing.T, status, waitingFor string) string {
	t.Helper()
	dir := t.TempDir()
	if status == "" {
		return dir
	}
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	entry := `{"pid":19848,"sessionId":"s1","kind":"interactive","status":"` + status + `","waitingFor":"` + waitingFor + `","statusUpdatedAt":1796157585137}`
	other := `{"pid":19849,"sessionId":"s2","status":"waiting","waitingFor":"permission prompt","statusUpdatedAt":1796157585138}`
	for name, body := range map[string]string{"19848.json": entry, "19849.json": other} {
		if err := os.WriteFile(filepath.Join(dir, "sessions", name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// approveWith runs the permission hook for session s1's Bash call against f, and returns what
// it printed.
func approveWith(t *testing.T, f *fakeApprover, claudeDir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	s := ApprovalSettings{Session: "secretary", CLI: "claude", Chat: "42", Wait: time.Minute, Logger: zap.NewNop(), ClaudeDir: claudeDir}
	in := `{"session_id":"s1","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"sleep 60"}}`
	err := Approve(ctx, strings.NewReader(in), &out, s, func(context.Context) (Approver, func(), error) { return f, func() {}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if !f.started.Confirms {
		t.Error("the hook did not ask to confirm its hand-over")
	}
	return out.String()
}

// Case (a): Yes at the terminal, then a long tool run; the phone's Deny comes meanwhile.
// Claude Code's registry shows the session busy, not at its prompt: the hook prints nothing,
// tells the approval the prompt had closed, and never confirms the Deny.
func TestPhoneAnswerAfterThePromptClosedIsNotHandedOver(t *testing.T) {
	f := &fakeApprover{taken: deny(true), handed: deny(false)}
	if out := approveWith(t, f, registry(t, "busy", "")); out != "" {
		t.Errorf("the hook printed %q for a prompt the terminal had answered", out)
	}
	if f.handOver != 0 || len(f.follows) != 1 || f.follows[0] != workflows.EventPromptClosed {
		t.Errorf("the approval was told: handed over %d times, follows %v", f.handOver, f.follows)
	}
}

// The prompt still open (the registry shows the session waiting at a permission prompt): the
// hook confirms, then prints the decision the approval confirmed.
func TestPhoneAnswerAtAnOpenPromptIsHandedOver(t *testing.T) {
	f := &fakeApprover{taken: deny(true), handed: deny(false)}
	out := approveWith(t, f, registry(t, "waiting", "permission prompt"))
	if !strings.Contains(out, `"behavior":"deny"`) || f.handOver != 1 || len(f.follows) != 0 {
		t.Errorf("printed %q, handed over %d times, follows %v", out, f.handOver, f.follows)
	}
}

// The approval answers the confirmation with the terminal's answer (its next hook came
// first): nothing is printed.
func TestPhoneAnswerTheTerminalBeatIsNotPrinted(t *testing.T) {
	f := &fakeApprover{taken: deny(true), handed: workflows.ApprovalResult{Outcome: workflows.OutcomeTerminal}}
	if out := approveWith(t, f, registry(t, "waiting", "permission prompt")); out != "" || f.handOver != 1 {
		t.Errorf("printed %q, handed over %d times", out, f.handOver)
	}
}

// A Claude Code with no registry entry for the session tells nothing: the answer is handed over
// as before; an approval that does not hand over (run by a worker from before confirmed
// answers) is waited for to its end, and its decision printed.
func TestPhoneAnswerWithoutRegistryOrHandOver(t *testing.T) {
	f := &fakeApprover{taken: deny(true), handed: deny(false)}
	if out := approveWith(t, f, registry(t, "", "")); !strings.Contains(out, `"behavior":"deny"`) || f.handOver != 1 {
		t.Errorf("no registry: printed %q, handed over %d times", out, f.handOver)
	}
	old := &fakeApprover{takeErr: errors.New("unknown update take-answer"), ended: deny(false)}
	if out := approveWith(t, old, registry(t, "busy", "")); !strings.Contains(out, `"behavior":"deny"`) || old.handOver != 0 {
		t.Errorf("an approval from before confirmed answers: printed %q, handed over %d times", out, old.handOver)
	}
}
