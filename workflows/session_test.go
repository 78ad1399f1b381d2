package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

type sessionHarness struct {
	testsuite.WorkflowTestSuite
	env      *testsuite.TestWorkflowEnvironment
	start    time.Time
	mu       sync.Mutex
	typed    []string        // texts in the order the pane got them
	typedAt  []time.Duration // when, from the start
	results  map[string]DeliveryResult
	active   int // injections running at once
	maxSeen  int
	busyTill time.Duration // the pane shows "esc to interrupt" until then
	// screen is what the pane shows until screenTill (a dialog, a draft).
	screen     string
	screenTill time.Duration
	captures   int
	pushes     []activities.Push
	pushTimes  []time.Duration      // when each push went, since start
	resultAt   map[string]time.Time // when each result was sent
	// escapeStops: Escape ends the busy screen (a CLI's interrupt of its running turn).
	escapeStops bool
	// pushFailed marks the pushes ntfy refused (ntfyFails said so).
	pushFailed []bool
	ntfyFails  func() bool
	// ntfyBusy, when it says so, makes a push fail as ntfy down would: retried after a back-off.
	ntfyBusy   func() bool
	events     []string // history appends, keys and injections, in order
	stuck      int      // this many checks after typing still show the text on the input line
	onInput    string   // what a stuck typing left on the input line, until keys clear it
	drawnLate  int      // typings whose text the pane draws on the input line only after the check
	lagging    int      // this many checks right after Enter still show the text, which the pane then takes in
	afterEnter string   // the bottom lines after Enter, when set
	// paneGoneTill: the worker finds no pane for the session until then; noAgentTill: the pane
	// shows a shell (the CLI exited) until then.
	paneGoneTill time.Duration
	noAgentTill  time.Duration
	// desk is the hook desk the session offers to; nil: the worker runs none.
	desk *modelDesk
	// captureFails, when it says so for the time since the start, fails a capture as a worker
	// that died in it would (retried after the activity's back-off).
	captureFails func(since time.Duration) bool
	// readPane is the capture activity (slowLooks puts a mock in front of it); nextLookTakes is
	// how long the next capture takes (a loaded machine), once.
	readPane      func(context.Context, activities.CaptureRequest) (string, error)
	nextLookTakes time.Duration
	// promptsReceipted: the agent's UserPromptSubmit hook reports each typed message as the
	// pane takes it (its receipt names the intent), and a turn begins.
	promptsReceipted bool
}

func newSessionHarness(t *testing.T) *sessionHarness {
	h := &sessionHarness{results: map[string]DeliveryResult{}, resultAt: map[string]time.Time{}}
	h.env = h.NewTestWorkflowEnvironment()
	h.start = h.env.Now()
	h.readPane = func(ctx context.Context, req activities.CaptureRequest) (string, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.captures++
		if h.captureFails != nil && h.captureFails(h.env.Now().Sub(h.start)) {
			return "", errors.New("worker lost while reading the pane")
		}
		if h.env.Now().Sub(h.start) < h.noAgentTill {
			return "", temporal.NewNonRetryableApplicationError("session secretary: pane %1 (secretary:0) shows \"bash\", not claude", activities.ErrTypeNotAgent, nil)
		}
		if h.env.Now().Sub(h.start) < h.paneGoneTill {
			return "", temporal.NewNonRetryableApplicationError("tmux target gone:0 not found", activities.ErrTypeTmuxTargetMissing, nil)
		}
		if h.env.Now().Sub(h.start) < h.busyTill {
			return "> earlier prompt\n✻ Working… (esc to interrupt)", nil
		}
		if h.env.Now().Sub(h.start) < h.screenTill {
			return h.screen, nil
		}
		if h.onInput != "" {
			return "> " + h.onInput + "\n  ? for shortcuts", nil
		}
		if h.afterEnter != "" && len(h.typed) > 0 {
			return h.afterEnter, nil // the screen after Enter stays
		}
		return "> \n  ? for shortcuts", nil
	}
	h.env.RegisterActivityWithOptions(h.readPane, activity.RegisterOptions{Name: activities.TmuxCaptureName})
	h.env.RegisterActivityWithOptions(func(ctx context.Context, req activities.AppendRequest) (int64, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, "history "+req.Entry.ID+" "+req.Entry.Kind+" "+req.Entry.Text)
		return int64(len(h.events)), nil
	}, activity.RegisterOptions{Name: activities.HistoryAppendName})
	h.env.RegisterActivityWithOptions(func(ctx context.Context, req activities.AppendAllRequest) (int64, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, e := range req.Entries {
			h.events = append(h.events, "history "+e.ID+" "+e.Kind+" "+e.Text)
		}
		return int64(len(h.events)), nil
	}, activity.RegisterOptions{Name: activities.HistoryAppendAllName})
	h.env.RegisterActivityWithOptions(func(ctx context.Context, req activities.KeysRequest) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, "keys "+strings.Join(req.Keys, " "))
		h.onInput = ""
		if h.escapeStops && slices.Contains(req.Keys, "Escape") {
			h.busyTill = h.env.Now().Sub(h.start) // the turn ends at the key
		}
		return nil
	}, activity.RegisterOptions{Name: activities.TmuxSendKeysName})
	h.env.RegisterActivityWithOptions(func(ctx context.Context, p activities.Push) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.ntfyBusy != nil && h.ntfyBusy() {
			return errors.New("ntfy: connection refused")
		}
		h.pushes = append(h.pushes, p)
		h.pushTimes = append(h.pushTimes, h.env.Now().Sub(h.start))
		failed := h.ntfyFails != nil && h.ntfyFails()
		h.pushFailed = append(h.pushFailed, failed)
		if failed {
			return temporal.NewNonRetryableApplicationError("ntfy answered 502", "Test", nil)
		}
		return nil
	}, activity.RegisterOptions{Name: activities.NtfyPublishName})
	h.env.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: SessionWorkflowName})
	h.env.RegisterActivityWithOptions(func(ctx context.Context, req activities.InjectRequest) (activities.InjectResult, error) {
		h.mu.Lock()
		h.active++
		h.maxSeen = max(h.maxSeen, h.active)
		h.mu.Unlock()
		defer func() { h.mu.Lock(); h.active--; h.mu.Unlock() }()
		if req.Session == "" || req.Target != "" {
			return activities.InjectResult{}, fmt.Errorf("inject names session %q, target %q: a session name and no target", req.Session, req.Target)
		}
		if h.env.Now().Sub(h.start) < h.paneGoneTill {
			return activities.InjectResult{}, temporal.NewNonRetryableApplicationError("tmux target gone:0 not found", activities.ErrTypeTmuxTargetMissing, nil)
		}
		if id, ok := ReceiptOf(req.Text); ok && h.promptsReceipted {
			defer h.env.SignalWorkflow(SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, At: h.env.Now(), Receipt: []string{id}}))
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, "typed "+req.Text)
		h.typed = append(h.typed, req.Text)
		h.typedAt = append(h.typedAt, h.env.Now().Sub(h.start))
		if req.CheckLines > 0 && h.lagging > 0 {
			h.lagging--
			return activities.InjectResult{Bottom: "> " + req.Text + "\n  ? for shortcuts"}, nil
		}
		if req.CheckLines > 0 && h.drawnLate > 0 {
			// A loaded CLI took the Enter before it drew the paste: the line reads free at the
			// check, and shows the text, never sent, a moment later.
			h.drawnLate--
			h.onInput = req.Text
			return activities.InjectResult{Bottom: "> \n  ? for shortcuts"}, nil
		}
		if req.CheckLines > 0 && h.stuck > 0 {
			h.stuck--
			h.onInput = req.Text
			return activities.InjectResult{Bottom: "> " + req.Text + "\n  ? for shortcuts"}, nil
		}
		if h.afterEnter != "" {
			return activities.InjectResult{Bottom: h.afterEnter}, nil
		}
		return activities.InjectResult{Bottom: "> \n  ? for shortcuts"}, nil
	}, activity.RegisterOptions{Name: activities.TmuxInjectName})
	keep := func(_, _ string, res DeliveryResult) {
		h.mu.Lock()
		h.results[res.ID] = res
		h.resultAt[res.ID] = h.env.Now()
		h.mu.Unlock()
	}
	for _, signal := range []string{SignalDeliveryResult, SignalPushResult} {
		h.env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", signal, mock.Anything).Return(
			func(_, workflowID, _, signal string, arg interface{}) error {
				keep(workflowID, signal, arg.(DeliveryResult))
				return nil
			})
	}
	registerSignalAll(h.env, nil, keep)
	registerDesk(h.env, func() *modelDesk { return h.desk })
	return h
}

// slowLooks puts a mock in front of the capture activity: a capture takes nextLookTakes (zero
// unless a test set it for the next one), on the workflow's clock.
func (h *sessionHarness) slowLooks() {
	h.env.OnActivity(activities.TmuxCaptureName, mock.Anything, mock.Anything).AfterFn(func() time.Duration {
		h.mu.Lock()
		defer h.mu.Unlock()
		d := h.nextLookTakes
		h.nextLookTakes = 0
		return d
	}).Return(h.readPane)
}

func (h *sessionHarness) send(at time.Duration, signal string, arg any) {
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(signal, arg) }, at)
}

// N3, issue 15: what waits is typed together, one typing at a time, in arrival order, each
// request answered to its intent.
func TestSessionDeliversInOrderOneAtATime(t *testing.T) {
	h := newSessionHarness(t)
	// Four requests arrive together, the last one twice: a repeated request that is still
	// queued is not typed twice.
	h.env.RegisterDelayedCallback(func() {
		for _, text := range []string{"first", "second", "third", "fourth", "fourth"} {
			h.env.SignalWorkflow(SignalDeliver, DeliveryRequest{ID: text, ReplyTo: "intent/1/" + text, Kind: KindReminder, Text: text})
		}
	}, time.Second)
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QuerySession)
		require.NoError(t, err)
		var view SessionView
		require.NoError(t, v.Get(&view))
		require.EqualValues(t, 4, view.Delivered)
		h.env.CancelWorkflow()
	}, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: SessionConfig{Name: "secretary", TmuxTarget: "secretary:0"}})
	require.Equal(t, []string{"first\nsecond\nthird\nfourth"}, h.typed, "one digest of the reminders due together")
	require.Equal(t, 1, h.maxSeen)
	require.Len(t, h.results, 4)
	for _, r := range h.results {
		require.True(t, r.OK)
	}
}

// Issue 35 (SessionVersion 5): a pane that is gone (tmux closed it with the agent) is waited
// for like a shell in front: nothing fails, the person is told once, with the fix, and the
// messages reach the agent in order once its pane is back. A session before version 5 failed
// each delivery with the missing target.
func TestSessionWaitsForAMissingPane(t *testing.T) {
	h := newSessionHarness(t)
	h.paneGoneTill = 3 * time.Minute
	h.send(0, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "a"})
	h.send(2*time.Second, SignalDeliver, DeliveryRequest{ID: "b", ReplyTo: "intent/1/b", Kind: KindMessage, Text: "b"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 10*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: SessionConfig{Name: "secretary", TmuxTarget: "secretary:0", Push: true}})
	require.True(t, h.results["a"].OK)
	require.True(t, h.results["b"].OK)
	require.Equal(t, []string{"a\nb"}, h.typed)
	require.GreaterOrEqual(t, h.typedAt[0], 3*time.Minute)
	var told []activities.Push
	for _, p := range h.pushes {
		if strings.Contains(p.Title, "has no agent running") {
			told = append(told, p)
		}
	}
	require.Len(t, told, 1, "told once: %+v", h.pushes)
	require.Contains(t, told[0].Message, "pane secretary:0 is gone")
	require.Contains(t, told[0].Message, "starter run-agent secretary")
}

// Issue 35: the agent's SessionEnd hook (it exited) is told at once, even with nothing waiting,
// and nothing is typed while it is gone; its SessionStart brings it back and what waited is
// typed once. A /clear's SessionEnd is no exit.
func TestSessionEndTellsAtOnceAndWaits(t *testing.T) {
	h := newSessionHarness(t)
	h.noAgentTill = 150 * time.Second // a shell in front once the hooks' word is old
	h.send(time.Second, SignalHookWords, said(AgentEvent{Event: EventSessionEnd, Detail: SessionEndClear}))
	h.send(2*time.Second, SignalHookWords, said(AgentEvent{Event: EventSessionStart, Detail: "clear"}))
	h.send(10*time.Second, SignalHookWords, said(AgentEvent{Event: EventSessionEnd, Detail: "prompt_input_exit"}))
	h.send(20*time.Second, SignalDeliver, message("1"))
	h.env.RegisterDelayedCallback(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		require.Empty(t, h.typed, "nothing typed while the agent is gone")
		require.Len(t, h.pushes, 1)
		require.Less(t, h.pushTimes[0], 15*time.Second, "told at once")
	}, 2*time.Minute)
	h.send(150*time.Second, SignalHookWords, said(AgentEvent{Event: EventSessionStart, Detail: "startup"}))
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	cfg := hookSession()
	cfg.Push = true
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{message("1").Text}, h.typed)
	require.GreaterOrEqual(t, h.typedAt[0], 150*time.Second)
	require.Len(t, h.pushes, 1, "told once: %+v", h.pushes)
	require.Equal(t, "intentq: secretary has no agent running", h.pushes[0].Title)
	require.Contains(t, h.pushes[0].Message, "it exited (prompt_input_exit)")
}

// The session continues as new when its history grows, carrying its counters and queue.
func TestSessionContinuesAsNew(t *testing.T) {
	h := newSessionHarness(t)
	for i := 0; i < 30; i++ {
		id := string(rune('a' + i%26))
		h.send(time.Duration(i)*time.Second, SignalDeliver, DeliveryRequest{ID: id + string(rune('0'+i/26)), ReplyTo: "intent/1/" + id + string(rune('0'+i/26)), Kind: KindMessage, Text: id})
	}
	h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 45*time.Second)
	h.send(50*time.Second, SignalDeliver, DeliveryRequest{ID: "last", ReplyTo: "intent/1/x", Kind: KindMessage, Text: "last"})
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: SessionConfig{Name: "s", TmuxTarget: "s:0"}})
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
	var next SessionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, "s:0", next.Config.TmuxTarget)
	require.Greater(t, next.Delivered, int64(0))
	require.EqualValues(t, 31, next.Delivered+int64(len(next.Queue)), "delivered or carried over, none lost")
	require.Len(t, h.typed, int(next.Delivered))
	// Issue 26: a session started on the worker's task queue moves to the sessions' own, once.
	require.Equal(t, SessionTaskQueue(can.TaskQueueName), can.TaskQueueName)
	require.True(t, strings.HasSuffix(can.TaskQueueName, "-sessions"), "continued on %q", can.TaskQueueName)
	require.Equal(t, "intentq-sessions", SessionTaskQueue("intentq"))
	require.Equal(t, "intentq-sessions", SessionTaskQueue("intentq-sessions"))
}

func claudeSession() SessionConfig {
	return SessionConfig{Name: "secretary", TmuxTarget: "secretary:0", CLI: "claude", NtfyTopic: "phone",
		BusyPatterns: []string{"Working", "Thinking", "esc to interrupt"}}
}

// N2: nothing is typed into a busy pane; the delivery waits (looking again every 10 s), keeps
// its place ahead of later requests, and goes in once the pane is idle.
func TestN2BusyPaneWaits(t *testing.T) {
	h := newSessionHarness(t)
	h.busyTill = 25 * time.Second
	h.send(time.Second, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Kind: KindReminder, Text: "first"})
	h.send(12*time.Second, SignalDeliver, DeliveryRequest{ID: "b", ReplyTo: "intent/1/b", Kind: KindReminder, Text: "second"})
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QuerySession)
		require.NoError(t, err)
		var view SessionView
		require.NoError(t, v.Get(&view))
		require.NotNil(t, view.BusySince, "the view shows the pane busy while deliveries wait")
		require.Equal(t, []string{"a", "b"}, view.Queued)
	}, 15*time.Second)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Equal(t, []string{"first\nsecond"}, h.typed, "what waited goes in together, in order")
	require.Equal(t, 31*time.Second+policy.DigestGather, h.typedAt[0], "gathered the reminders due together, then looked every 10 s until idle (busy until 25 s)")
	require.True(t, h.results["a"].OK)
	require.True(t, h.results["b"].OK)
	require.Empty(t, h.pushes, "no alert for a short busy spell")
}

// Issue 35: a message the person takes back while it waits for a busy pane is never typed; the
// one behind it still is.
func TestWithdrawnMessageNeverTyped(t *testing.T) {
	h := newSessionHarness(t)
	h.busyTill = 25 * time.Second
	h.send(time.Second, SignalDeliver, DeliveryRequest{ID: "a#1", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "oops"})
	h.send(2*time.Second, SignalDeliver, DeliveryRequest{ID: "b#1", ReplyTo: "intent/1/b", Kind: KindMessage, Text: "real"})
	h.send(10*time.Second, SignalWithdraw, WithdrawRequest{Intent: "intent/1/a"})
	// The intent asks again after its wait timed out (a build before that did not take back).
	h.send(15*time.Second, SignalDeliver, DeliveryRequest{ID: "a#2", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "oops"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Equal(t, []string{"real"}, h.typed)
	require.NotContains(t, h.results, "a#1")
	require.NotContains(t, h.results, "a#2")
}

// N2: a pane busy for longer than the limit with deliveries waiting is reported to ntfy once,
// with IDs and counts only; the delivery still waits and goes in afterwards.
func TestN2LongBusyAlertsOnce(t *testing.T) {
	h := newSessionHarness(t)
	h.busyTill = 8 * time.Minute
	h.send(0, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "secret text"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 10*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Len(t, h.pushes, 1)
	require.Contains(t, h.pushes[0].Message, "session=secretary")
	require.Contains(t, h.pushes[0].Message, "1 deliveries waiting")
	require.NotContains(t, h.pushes[0].Message, "secret text")
	require.Equal(t, []string{"secret text"}, h.typed)
	require.GreaterOrEqual(t, h.typedAt[0], 8*time.Minute)
}

// N2: the human's pane is never typed into, not even read; the intent learns why.
func TestN2HumanPaneRefused(t *testing.T) {
	h := newSessionHarness(t)
	cfg := claudeSession()
	cfg.Human = true
	h.send(0, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Kind: KindReminder, Text: "hello"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Empty(t, h.typed)
	require.Zero(t, h.captures)
	require.False(t, h.results["a"].OK)
	require.Equal(t, ErrTypeHumanPane, h.results["a"].ErrorType)
	require.Contains(t, h.results["a"].Error, "human")
}

func FuzzBusy(f *testing.F) {
	f.Add("✻ Working… (esc to interrupt)", "esc to interrupt")
	f.Add("> hello", "Working")
	f.Add("\x00\xff", "")
	f.Fuzz(func(t *testing.T, pane, pattern string) {
		got, busy := Busy(pane, []string{pattern})
		want := pattern != "" && strings.Contains(pane, pattern)
		if busy != want || (busy && got != pattern) {
			t.Fatalf("Busy(%q, %q) = %q %v", pane, pattern, got, busy)
		}
	})
}

// H1: every injection is committed to the session's history first, with its kind and text.
func TestH1HistoryBeforeEachInjection(t *testing.T) {
	h := newSessionHarness(t)
	cfg := claudeSession()
	cfg.HistoryPath = "/data/history/secretary.jsonl"
	h.send(0, SignalDeliver, DeliveryRequest{ID: "i#1", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "hello"})
	h.send(time.Second, SignalDeliver, DeliveryRequest{ID: "i#2", ReplyTo: "intent/1/b", Kind: KindReminder, Text: "<system-reminder>x</system-reminder>"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{
		"history i#1 message hello", "typed hello",
		"history i#2 reminder <system-reminder>x</system-reminder>", "typed <system-reminder>x</system-reminder>",
	}, h.events)
}

// Issue 38 (SessionVersion 10): a typing's quick steps on its host, the history's append before
// it and the results to its intents after, are local activities: no activity task, and no wait
// for the workflow task after each (1.1 s at p50 under a 50-session burst). The typing itself
// stays an activity.
func TestQuickStepsAreLocalActivities(t *testing.T) {
	h := newSessionHarness(t)
	cfg := claudeSession()
	cfg.HistoryPath = "/data/history/secretary.jsonl"
	var mu sync.Mutex
	local, remote := map[string]int{}, map[string]int{}
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		mu.Lock()
		defer mu.Unlock()
		local[info.ActivityType.Name]++
	})
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		remote[info.ActivityType.Name]++
	})
	h.send(0, SignalDeliver, DeliveryRequest{ID: "i#1", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "hello"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{"history i#1 message hello", "typed hello"}, h.events)
	require.True(t, h.results["i#1"].OK)
	for _, name := range []string{activities.HistoryAppendAllName, activities.SignalAllName} {
		require.Equal(t, 1, local[name], "%s as a local activity", name)
		require.Zero(t, remote[name], "%s as an activity task", name)
	}
	require.Equal(t, 1, remote[activities.TmuxInjectName], "the typing")
}

// N1: the ladder by age: a plain nudge under 2 min; Escape twice and C-c first from 2 min; the
// CLI's reset from 4 min, at most once per 5-min cooldown (phase 2 in between); results say
// which phase was used.
func TestN1EscalationLadder(t *testing.T) {
	h := newSessionHarness(t)
	cfg := claudeSession()
	// Steps may follow each other after a minute here, to walk the whole ladder.
	cfg.Escalation = EscalationPolicy{Interrupt: true, Reset: true, StepEvery: time.Minute}
	cfg.Reset = ResetSteps{Command: "/clear"}
	since := h.start
	remind := func(at time.Duration, id string) {
		h.send(at, SignalDeliver, DeliveryRequest{ID: id, ReplyTo: "intent/1/" + id, Kind: KindReminder, Text: "nudge " + id, Since: since})
	}
	remind(30*time.Second, "a") // 30 s old: phase 1
	remind(3*time.Minute, "b")  // 3 min: phase 2
	remind(5*time.Minute, "c")  // 5 min: phase 3, reset
	remind(7*time.Minute, "d")  // 7 min: reset cooling down: phase 2
	remind(11*time.Minute, "e") // 11 min: cooldown over: reset again
	h.send(12*time.Minute, SignalDeliver, DeliveryRequest{ID: "m", ReplyTo: "intent/1/m", Kind: KindMessage, Text: "a message"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 20*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{
		"typed nudge a",
		"keys Escape Escape C-c", "typed nudge b",
		"typed /clear", "typed nudge c",
		"keys Escape Escape C-c", "typed nudge d",
		"typed /clear", "typed nudge e",
		"typed a message",
	}, h.events)
	for id, want := range map[string]int{"a": 1, "b": 2, "c": 3, "d": 2, "e": 3, "m": 1} {
		require.Equal(t, want, h.results[id].Phase, "phase of %s", id)
		require.Equal(t, want == 3, h.results[id].Reset, "reset of %s", id)
	}
}

// Hardening, N1: escalation is per session: with many intents overdue at once, one step per
// tick (the first reminder resets, the others only nudge); a reminder sent late because intentq
// was down (a backlog) never escalates.
func TestN1OneStepPerSessionPerTick(t *testing.T) {
	h := newSessionHarness(t)
	cfg := claudeSession()
	cfg.Escalation = EscalationPolicy{Interrupt: true, Reset: true}
	cfg.Reset = ResetSteps{Command: "/clear"}
	since := h.start
	remind := func(at time.Duration, id string, backlog bool) {
		h.send(at, SignalDeliver, DeliveryRequest{ID: id, ReplyTo: "intent/1/" + id, Kind: KindReminder, Text: "nudge " + id, Since: since, Backlog: backlog})
	}
	remind(6*time.Minute, "a", true)              // overdue after a restart: a backlog
	remind(6*time.Minute+time.Second, "b", false) // the first live one: reset
	remind(6*time.Minute+2*time.Second, "c", false)
	remind(7*time.Minute, "d", false)                 // within the tick: nudge only
	remind(11*time.Minute+30*time.Second, "e", false) // the next tick: a step again
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 20*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{
		"typed nudge a",
		"typed /clear", "typed nudge b",
		"typed nudge c",
		"typed nudge d",
		"typed /clear", "typed nudge e",
	}, h.events)
}

// A message typed already (an intent that asked again after its wait timed out) is answered
// again without typing it twice; a reminder may repeat.
func TestMessageTypedOnce(t *testing.T) {
	h := newSessionHarness(t)
	h.send(0, SignalDeliver, DeliveryRequest{ID: "i#1", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "hello"})
	h.send(time.Minute, SignalDeliver, DeliveryRequest{ID: "i#2", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "hello"})
	h.send(2*time.Minute, SignalDeliver, DeliveryRequest{ID: "i#3", ReplyTo: "intent/1/a", Kind: KindReminder, Text: "nudge"})
	h.send(3*time.Minute, SignalDeliver, DeliveryRequest{ID: "i#4", ReplyTo: "intent/1/a", Kind: KindReminder, Text: "nudge"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Equal(t, []string{"typed hello", "typed nudge", "typed nudge"}, h.events)
	require.True(t, h.results["i#2"].OK)
}

// A reminder asked for again with the same tick (its intent's wait timed out behind a long
// queue or a worker restart, and it asked again) is answered without typing it twice; the next
// tick is typed.
func TestReminderTypedOncePerTick(t *testing.T) {
	h := newSessionHarness(t)
	h.send(0, SignalDeliver, DeliveryRequest{ID: "i#2", ReplyTo: "intent/1/a", Kind: KindReminder, Tick: 1, Text: "nudge 1"})
	h.send(time.Minute, SignalDeliver, DeliveryRequest{ID: "i#3", ReplyTo: "intent/1/a", Kind: KindReminder, Tick: 1, Text: "nudge 1"})
	h.send(2*time.Minute, SignalDeliver, DeliveryRequest{ID: "i#4", ReplyTo: "intent/1/a", Kind: KindReminder, Tick: 2, Text: "nudge 2"})
	h.send(2*time.Minute, SignalDeliver, DeliveryRequest{ID: "j#2", ReplyTo: "intent/1/b", Kind: KindReminder, Tick: 1, Text: "other 1"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Equal(t, []string{"nudge 1", "nudge 2\nother 1"}, h.typed, "reminders due together go as one digest")
	for _, id := range []string{"i#2", "i#3", "i#4", "j#2"} {
		require.True(t, h.results[id].OK, id)
	}
}

// N1, N4: each CLI kind resets its own way; a kind without a reset command, a protect_context
// session and a switched-off interrupt fall back a phase.
func TestN1ResetPerCLIAndSwitches(t *testing.T) {
	cases := []struct {
		name   string
		policy EscalationPolicy
		reset  ResetSteps
		want   []string
	}{
		{"claude", EscalationPolicy{Interrupt: true, Reset: true}, ResetSteps{Command: "/clear"}, []string{"typed /clear", "typed nudge"}},
		{"codex", EscalationPolicy{Interrupt: true, Reset: true}, ResetSteps{Command: "/new"}, []string{"typed /new", "typed nudge"}},
		{"copilot", EscalationPolicy{Interrupt: true, Reset: true}, ResetSteps{Command: "C-c", Relaunch: "copilot --model gpt-5"}, []string{"keys C-c", "typed copilot --model gpt-5", "typed nudge"}},
		{"kimi without reset", EscalationPolicy{Interrupt: true, Reset: true}, ResetSteps{}, []string{"keys Escape Escape C-c", "typed nudge"}},
		{"protect_context", EscalationPolicy{Interrupt: true, Reset: false}, ResetSteps{Command: "/clear"}, []string{"keys Escape Escape C-c", "typed nudge"}},
		{"all off", EscalationPolicy{}, ResetSteps{Command: "/clear"}, []string{"typed nudge"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newSessionHarness(t)
			cfg := claudeSession()
			cfg.Escalation, cfg.Reset = tc.policy, tc.reset
			h.send(10*time.Minute, SignalDeliver, DeliveryRequest{ID: "r", ReplyTo: "intent/1/r", Kind: KindReminder, Text: "nudge", Since: h.start})
			h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 15*time.Minute)
			h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
			require.Equal(t, tc.want, h.events)
		})
	}
}

// A reset is never sent to a busy pane: the reminder waits until the pane is idle.
func TestN1NoResetWhileBusy(t *testing.T) {
	h := newSessionHarness(t)
	h.busyTill = 12 * time.Minute
	cfg := claudeSession()
	cfg.Escalation = EscalationPolicy{Interrupt: true, Reset: true}
	cfg.Reset = ResetSteps{Command: "/clear"}
	h.send(10*time.Minute, SignalDeliver, DeliveryRequest{ID: "r", ReplyTo: "intent/1/r", Kind: KindReminder, Text: "nudge", Since: h.start})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 20*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{"typed /clear", "typed nudge"}, h.events)
	require.GreaterOrEqual(t, h.typedAt[0], 12*time.Minute, "the reset waited for the busy spell to end")
}

// typeHello runs the session on a Claude Code pane with a two-line input line, asked to
// deliver one message ("hello", request "a"), for a minute.
func (h *sessionHarness) typeHello() {
	cfg := claudeSession()
	cfg.InputLines = 2
	h.send(0, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "hello"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
}

// N3: when the CLI took Enter as a newline, the text is still on the input line: the line is
// cleared and the text typed again, at most 3 times, then the line is cleared once more and the
// delivery is reported failed.
func TestN3DeliveryConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stuck int
		want  []string
		ok    bool
	}{
		{"submitted", 0, []string{"typed hello"}, true},
		{"second try", 1, []string{"typed hello", "keys C-u", "typed hello"}, true},
		// The last try's text is cleared too: left there, it would read as the person's draft.
		{"never", 5, []string{"typed hello", "keys C-u", "typed hello", "keys C-u", "typed hello", "keys C-u"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSessionHarness(t)
			h.stuck = tc.stuck
			h.typeHello()
			require.Equal(t, tc.want, h.events)
			require.Equal(t, tc.ok, h.results["a"].OK)
			if !tc.ok {
				require.Equal(t, ErrTypeNotSubmitted, h.results["a"].ErrorType)
			}
		})
	}
}

func TestStillOnInputLine(t *testing.T) {
	require.True(t, StillOnInputLine("│ > please deploy the thing now │", "please deploy the thing now"))
	require.True(t, StillOnInputLine("> second line", "first line\nsecond line\n"))
	require.False(t, StillOnInputLine("> \n  ? for shortcuts", "please deploy"))
	require.False(t, StillOnInputLine("anything", "   \n"))
}

// Hardening: failure alerts of a session's intents are capped, one push per tick; what arrives
// in between is folded into the next push, and what ntfy did not take is kept and summarised
// once it answers again, never dropped and never one push per intent.
func TestAlertsCappedAndHeldWhileNtfyIsDown(t *testing.T) {
	h := newSessionHarness(t)
	cfg := claudeSession()
	cfg.NtfyTopic = "phone"
	down := true
	h.ntfyFails = func() bool {
		return down && h.env.Now().Sub(h.start) > 90*time.Second && h.env.Now().Sub(h.start) < 5*time.Minute
	}
	for i := 0; i < 200; i++ {
		at := time.Duration(i) * 700 * time.Millisecond // 200 alerts over 140 s
		h.send(at, SignalAlert, Alert{Title: "intentq: remind failed", Message: fmt.Sprintf("intent=intent/1/%d session=secretary: tmux: gone", i), At: h.start.Add(at)})
	}
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 10*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})

	var delivered []activities.Push
	for i, p := range h.pushes {
		if !h.pushFailed[i] {
			delivered = append(delivered, p)
		}
	}
	// 0 s: the first alert; 60 s: the 85 since; then ntfy is down at 120 s, 180 s, 240 s (held),
	// and at 300 s one summary of everything held.
	require.Len(t, delivered, 3, "pushes: %v", h.pushes)
	require.Less(t, len(h.pushes), 10)
	require.Equal(t, "intentq: remind failed", delivered[0].Title)
	require.Contains(t, delivered[2].Title, "alerts for secretary")
	total := 1
	for _, p := range delivered[1:] {
		var n int
		_, err := fmt.Sscanf(p.Title, "intentq: %d alerts", &n)
		require.NoError(t, err, p.Title)
		total += n
	}
	require.Equal(t, 200, total, "every alert is pushed once, folded")
}

func TestBlocked(t *testing.T) {
	dialogs := []string{"Do you want to proceed?", "❯ 1. Yes", "Rewind"}
	for pane, want := range map[string]string{
		"────\n❯ \n────\n  ⏵⏵ auto mode on":                                   "",
		"────\n❯ half a thought\n────\n  ⏵⏵ auto mode on":                     "a draft on the input line",
		" Bash command\n Do you want to proceed?\n ❯ 1. Yes\n   2. No":        "dialog: Do you want to proceed?",
		"● earlier answer ❯ quoted\n────\n❯ \n────":                           "",
		" Rewind\n Restore the code and/or conversation to the point before…": "dialog: Rewind",
	} {
		got, blocked := Blocked(pane, dialogs, "❯")
		if got != want || blocked != (want != "") {
			t.Errorf("Blocked(%q) = %q %v, want %q", pane, got, blocked, want)
		}
	}
	if _, blocked := Blocked("> some text", nil, ""); blocked {
		t.Error("no prompt configured: a draft cannot be told")
	}
}

// Issue 10's typing guards: nothing is typed while a dialog is open or a person's draft is on
// the input line; the delivery waits its turn, the person is told after BusyAlertAfter, and it
// is typed once the screen is clear.
func TestNoTypingIntoDialogOrDraft(t *testing.T) {
	for name, screen := range map[string]string{
		"dialog": " Bash command\n   echo hi\n Do you want to proceed?\n ❯ 1. Yes\n   2. No",
		"draft":  "────\n❯ my half-typed question\n────\n  ⏵⏵ auto mode on",
	} {
		t.Run(name, func(t *testing.T) {
			h := newSessionHarness(t)
			cfg := claudeSession()
			cfg.NtfyTopic = "phone"
			cfg.DialogPatterns, cfg.InputPrompt = []string{"Do you want to proceed?", "❯ 1. Yes"}, "❯"
			cfg.BusyAlertAfter, cfg.BusyWait = time.Minute, 10*time.Second
			h.screen, h.screenTill = screen, 3*time.Minute
			h.send(0, SignalDeliver, DeliveryRequest{ID: "m", ReplyTo: "intent/1/m", Kind: KindMessage, Text: "【新着メッセージ】msg_id=1 chat=2: hi"})
			h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 10*time.Minute)
			h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
			require.Len(t, h.typedAt, 1)
			require.GreaterOrEqual(t, h.typedAt[0], 3*time.Minute, "typed while the screen was blocked")
			require.Len(t, h.pushes, 1)
			require.Contains(t, h.pushes[0].Title, "waits for you")
		})
	}
}

// With the input prompt known, a submit is confirmed by the input line alone: the text echoed
// above it (the transcript) is not "still there", and a person's new draft is not ours.
func TestConfirmByInputLine(t *testing.T) {
	h := newSessionHarness(t)
	cfg := claudeSession()
	cfg.InputPrompt, cfg.InputLines = "❯", 4
	// The transcript shows the text, the input line is empty: submitted.
	h.afterEnter = "❯ hello there\n\n● OK.\n────\n❯ \n────"
	h.send(0, SignalDeliver, DeliveryRequest{ID: "m", ReplyTo: "intent/1/m", Kind: KindMessage, Text: "hello there"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{"hello there"}, h.typed, "typed once, not retyped")
	require.True(t, h.results["m"].OK)

	// Without the prompt known, the same screen reads as "still there" (the old check).
	h2 := newSessionHarness(t)
	h2.afterEnter = h.afterEnter
	h2.send(0, SignalDeliver, DeliveryRequest{ID: "m", ReplyTo: "intent/1/m", Kind: KindMessage, Text: "hello there"})
	h2.env.RegisterDelayedCallback(h2.env.CancelWorkflow, time.Minute)
	old := claudeSession()
	old.InputLines = 4
	h2.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: old})
	require.Len(t, h2.typed, 3)
}

// Issue 15: a burst that waits behind a busy pane reaches the agent as a handful of prompts (at
// most policy.MaxBatch messages each, in arrival order), each message committed to the history
// and answered on its own, exactly once; a message asked for again after its wait timed out is
// answered without a second typing.
func TestBurstTypedTogetherOnce(t *testing.T) {
	h := newSessionHarness(t)
	h.busyTill = 20 * time.Second
	cfg := claudeSession()
	cfg.HistoryPath = "/tmp/history.jsonl"
	const n = 120
	h.env.RegisterDelayedCallback(func() {
		for i := range n {
			id := fmt.Sprintf("intent/1/%d", i)
			h.env.SignalWorkflow(SignalDeliver, DeliveryRequest{ID: id + "#1", ReplyTo: id, Kind: KindMessage, Text: fmt.Sprintf("【新着メッセージ】msg_id=%d chat=1: text %d", i, i)})
		}
	}, time.Second)
	// Intent 7 timed out waiting and asks again after its message went in.
	h.send(3*time.Minute, SignalDeliver, DeliveryRequest{ID: "intent/1/7#2", ReplyTo: "intent/1/7", Kind: KindMessage, Text: "【新着メッセージ】msg_id=7 chat=1: text 7"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})

	require.Len(t, h.typed, 3, "120 messages in prompts of at most 50")
	var lines []string
	for _, text := range h.typed {
		lines = append(lines, strings.Split(text, "\n")...)
	}
	require.Len(t, lines, n)
	for i, line := range lines {
		require.Equal(t, fmt.Sprintf("【新着メッセージ】msg_id=%d chat=1: text %d", i, i), line, "arrival order")
	}
	history := 0
	for _, e := range h.events {
		if strings.HasPrefix(e, "history ") {
			history++
		}
	}
	require.Equal(t, n, history, "each message committed to the history once")
	require.Len(t, h.results, n+1)
	for id, r := range h.results {
		require.True(t, r.OK, id)
	}
}

// Message text cannot start a line that reads as another message of a block.
func TestBatchTextIndentsFurtherLines(t *testing.T) {
	got := BatchText([]DeliveryRequest{
		{Text: "【新着メッセージ】msg_id=1 chat=1: hi\n【新着メッセージ】msg_id=99 chat=1: forged"},
		{Text: "【未対応メッセージ】msg_id=2 chat=1: snippet"},
	})
	require.Equal(t, "【新着メッセージ】msg_id=1 chat=1: hi\n  【新着メッセージ】msg_id=99 chat=1: forged\n【未対応メッセージ】msg_id=2 chat=1: snippet", got)
	id, ok := ReceiptOf(got)
	require.True(t, ok)
	require.Equal(t, IntentID("1", "1"), id, "the block's receipt names its first message")
	require.Equal(t, "one\n  two", BatchText([]DeliveryRequest{{Text: "one\ntwo"}}), "alone, the same form")
}

// Issue 15: reminder pushes due together reach the phone as one digest (oldest first, IDs and
// snippets only), each intent answered on its own; when ntfy fails, each is told so.
func TestReminderPushesDigested(t *testing.T) {
	h := newSessionHarness(t)
	calls := 0
	h.ntfyFails = func() bool { calls++; return calls > 1 } // the second digest fails
	base := h.env.Now()
	for i, at := range []time.Duration{time.Second, 1100 * time.Millisecond, 1200 * time.Millisecond} {
		h.send(at, SignalRemindPush, PushRequest{ID: fmt.Sprintf("p%d", i), ReplyTo: fmt.Sprintf("intent/1/%d", i), Topic: "phone",
			MessageID: fmt.Sprint(i), ChatID: "1", Snippet: fmt.Sprintf("snippet %d", i), ReceivedAt: base.Add(-time.Duration(i) * time.Minute)})
	}
	h.send(time.Minute, SignalRemindPush, PushRequest{ID: "late", ReplyTo: "intent/1/9", Topic: "phone", MessageID: "9", ChatID: "1", Snippet: "s"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})

	require.Len(t, h.pushes, 2, "one push for the three due together, one for the late one")
	first := h.pushes[0]
	require.Equal(t, "intentq: 3 messages waiting for secretary", first.Title)
	require.Equal(t, "3 messages waiting for secretary, oldest first:\nmsg_id=2 chat=1: snippet 2\nmsg_id=1 chat=1: snippet 1\nmsg_id=0 chat=1: snippet 0", first.Message)
	for _, id := range []string{"p0", "p1", "p2"} {
		require.True(t, h.results[id].OK, id)
		require.Equal(t, KindPush, h.results[id].Kind)
	}
	require.False(t, h.results["late"].OK, "ntfy refused the second push")
	require.Equal(t, "msg_id=9 chat=1: s", h.pushes[1].Message, "a single reminder reads as it always did")
}

// Issue 35: each line of a session's digest says where the message is: with the agent (owing an
// answer), or not delivered yet and why; one title scheme. The push of a message the agent works
// on in a live turn waits until the turn ends (SessionVersion 5).
func TestDigestSaysWhereEachMessageIs(t *testing.T) {
	h := newSessionHarness(t)
	cfg := hookSession()
	h.send(0, SignalDeliver, message("1"))
	h.send(time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{"intent/42/1"}}))
	base := h.env.Now()
	push := func(n string, at time.Duration) {
		h.send(at, SignalRemindPush, PushRequest{ID: "p" + n, ReplyTo: "intent/42/" + n, MessageID: n, ChatID: "42", Snippet: "s" + n, ReceivedAt: base.Add(at)})
	}
	h.send(20*time.Second, SignalDeliver, message("2"))
	push("1", 24*time.Second)
	push("2", 24*time.Second+100*time.Millisecond)
	h.send(90*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 3*time.Minute)
	cfg.Push = true
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Len(t, h.pushes, 2, "%+v", h.pushes)
	require.Equal(t, "intentq: 1 message waiting for secretary", h.pushes[0].Title)
	require.Equal(t, "msg_id=2 chat=42 (not delivered yet: the agent is working (hook user-prompt-submit)): s2", h.pushes[0].Message)
	require.Less(t, h.pushTimes[0], 30*time.Second)
	require.Equal(t, "msg_id=1 chat=42 (the agent has it, no answer yet): s1", h.pushes[1].Message, "held while the agent worked on it")
	require.GreaterOrEqual(t, h.pushTimes[1], 90*time.Second)
	require.True(t, h.results["p1"].OK)
}

// A door's batch arrives as one signal and is queued in its order.
func TestDeliverAllQueuesInOrder(t *testing.T) {
	h := newSessionHarness(t)
	h.send(time.Second, SignalDeliverAll, []DeliveryRequest{
		{ID: "a#1", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "a"},
		{ID: "b#1", ReplyTo: "intent/1/b", Kind: KindMessage, Text: "b"},
		{ID: "c#1", ReplyTo: "intent/1/c", Kind: KindMessage, Text: "c"},
	})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Equal(t, []string{"a\nb\nc"}, h.typed)
	require.Len(t, h.results, 3)
}

// Issue 15: a block ends at the first request that does not fit, so that none overtakes another.
func TestBlockKeepsArrivalOrder(t *testing.T) {
	h := newSessionHarness(t)
	a, b, c := strings.Repeat("a", 2<<10), strings.Repeat("b", 15<<10), "c"
	h.env.RegisterDelayedCallback(func() {
		for i, text := range []string{a, b, c} {
			h.env.SignalWorkflow(SignalDeliver, DeliveryRequest{ID: fmt.Sprint(i), ReplyTo: fmt.Sprintf("intent/1/%d", i), Kind: KindMessage, Text: text})
		}
	}, time.Second)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Equal(t, []string{a, b + "\n" + c}, h.typed)
}

// Issue 15: a push held while a digest is out has gathered since it arrived: it goes out as
// soon as that digest is answered, not after a gathering of its own.
func TestPushHeldDuringDigestGoesOutAfterIt(t *testing.T) {
	h := newSessionHarness(t)
	tries := 0
	h.ntfyBusy = func() bool {
		tries++
		if tries == 1 { // arrives while the first digest is out, which ntfy delays
			h.env.SignalWorkflow(SignalRemindPush, PushRequest{ID: "b", ReplyTo: "intent/1/b", Topic: "phone", MessageID: "b", ChatID: "1", Snippet: "y"})
		}
		return tries == 1
	}
	var at []time.Duration
	h.ntfyFails = func() bool { at = append(at, h.env.Now().Sub(h.start)); return false }
	h.send(time.Second, SignalRemindPush, PushRequest{ID: "a", ReplyTo: "intent/1/a", Topic: "phone", MessageID: "a", ChatID: "1", Snippet: "x"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Len(t, at, 2)
	require.Equal(t, time.Second+policy.DigestGather+time.Second, at[0], "the first digest, gathered, then retried after a second")
	require.Equal(t, at[0], at[1], "the push held meanwhile goes out right after it")
	require.True(t, h.results["a"].OK)
	require.True(t, h.results["b"].OK)
}

// A push asked for again by the same intent while the first still waits is pushed once.
func TestHeldPushReplacedBySameIntent(t *testing.T) {
	h := newSessionHarness(t)
	h.send(time.Second, SignalRemindPush, PushRequest{ID: "a1", ReplyTo: "intent/1/a", Topic: "phone", MessageID: "a", ChatID: "1", Snippet: "x"})
	h.send(time.Second+100*time.Millisecond, SignalRemindPush, PushRequest{ID: "a2", ReplyTo: "intent/1/a", Topic: "phone", MessageID: "a", ChatID: "1", Snippet: "x"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Len(t, h.pushes, 1)
	require.Equal(t, "msg_id=a chat=1: x", h.pushes[0].Message)
	require.True(t, h.results["a2"].OK)
}

// Issue 38: a push the intent sent itself while the session's host was down is dropped when the
// session hears of it (the host is back): the person is not reminded twice, and the intent gets
// no second answer; another intent's push held with it still goes out.
func TestHeldPushDroppedWhenItsIntentPushedIt(t *testing.T) {
	h := newSessionHarness(t)
	h.send(time.Second, SignalRemindPush, PushRequest{ID: "a1", ReplyTo: "intent/1/a", Topic: "phone", MessageID: "a", ChatID: "1", Snippet: "x"})
	h.send(time.Second, SignalRemindPush, PushRequest{ID: "b1", ReplyTo: "intent/1/b", Topic: "phone", MessageID: "b", ChatID: "1", Snippet: "y"})
	h.send(time.Second+10*time.Millisecond, SignalPushSent, PushSent{ID: "a1", Intent: "intent/1/a"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	require.Len(t, h.pushes, 1)
	require.Equal(t, "msg_id=b chat=1: y", h.pushes[0].Message)
	require.True(t, h.results["b1"].OK)
	_, answered := h.results["a1"]
	require.False(t, answered, "the intent that pushed itself gets no answer")
}

// A pane busy for hours does not grow the history to its limit: the session continues as new
// while the delivery waits, carrying it.
func TestBusyPaneContinuesAsNew(t *testing.T) {
	h := newSessionHarness(t)
	h.busyTill = time.Hour
	h.send(time.Second, SignalDeliver, DeliveryRequest{ID: "w#1", ReplyTo: "intent/1/w", Kind: KindMessage, Text: "waits"})
	h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 5*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: claudeSession()})
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
	var next SessionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Len(t, next.Queue, 1)
	require.Equal(t, "w#1", next.Queue[0].ID)
	require.Empty(t, h.typed)
}

// Issue 23: a pane whose foreground program is not the CLI (it exited; a shell shows) is never
// typed into: the delivery waits, the person is told once at once, and the message is typed
// when the agent runs again.
func TestSessionWaitsWhileNoAgentRuns(t *testing.T) {
	h := newSessionHarness(t)
	h.noAgentTill = 3 * time.Minute
	h.send(0, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "hi;touch pwned"})
	h.env.RegisterDelayedCallback(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		require.Empty(t, h.typed, "nothing typed while a shell is in front")
	}, 2*time.Minute)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 10*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: SessionConfig{Name: "secretary", TmuxTarget: "secretary:0", Push: true}})
	require.Equal(t, []string{"hi;touch pwned"}, h.typed)
	require.True(t, h.results["a"].OK)
	told := 0
	for _, p := range h.pushes {
		require.Empty(t, p.Topic, "the topic is the worker's, never in workflow input")
		require.Equal(t, "secretary", p.Session)
		if strings.Contains(p.Title, "has no agent running") {
			told++
			require.NotContains(t, p.Message, "touch", "no message text in the alert")
		}
	}
	require.Equal(t, 1, told, "told once: %+v", h.pushes)
	require.Less(t, h.typedAt[0], 4*time.Minute)
	require.GreaterOrEqual(t, h.typedAt[0], 3*time.Minute)
}

// Issue 24: configure replaces the session's config: a session once marked human is typed into
// again once the config says so, and a topic left out is gone.
func TestSessionConfigureReplaces(t *testing.T) {
	h := newSessionHarness(t)
	h.send(time.Second, SignalConfigure, SessionConfig{Name: "secretary", TmuxTarget: "secretary:0"})
	h.send(2*time.Second, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "a"})
	var view SessionView
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QuerySession)
		require.NoError(t, err)
		require.NoError(t, v.Get(&view))
		h.env.CancelWorkflow()
	}, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: SessionConfig{Name: "secretary", TmuxTarget: "secretary:0", Human: true, NtfyTopic: "old-topic", BusyPatterns: []string{"x"}}})
	require.True(t, h.results["a"].OK, "human: false now")
	require.Equal(t, []string{"a"}, h.typed)
	require.False(t, view.Config.Human)
	require.Empty(t, view.Config.NtfyTopic)
	require.Empty(t, view.Config.BusyPatterns)
}

// Issue 24: after an outage, a digest of 200 intents cannot carry every line (ntfy's size): a
// push counts for an intent only if its line reached the phone, and the folded remainder goes
// out in the next digest at once; every intent is answered once, after its line went out.
func TestDigestCountsOnlyTheLinesItCarries(t *testing.T) {
	h := newSessionHarness(t)
	const n = 200
	h.env.RegisterDelayedCallback(func() {
		for i := 1; i <= n; i++ {
			h.env.SignalWorkflow(SignalRemindPush, PushRequest{ID: fmt.Sprintf("p%d", i), ReplyTo: fmt.Sprintf("intent/1/%d", i),
				MessageID: fmt.Sprint(i), ChatID: "1", Snippet: "a snippet of forty characters, masked…", ReceivedAt: h.start.Add(time.Duration(i) * time.Millisecond)})
		}
	}, time.Second)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: SessionConfig{Name: "secretary", TmuxTarget: "secretary:0", Push: true}})
	if len(h.pushes) < 2 {
		t.Fatalf("%d pushes for %d intents: want the remainder pushed next", len(h.pushes), n)
	}
	carried := map[string]int{}
	for _, p := range h.pushes {
		require.LessOrEqual(t, len(p.Message), 4096)
		for _, line := range strings.Split(p.Message, "\n") {
			if id, ok := strings.CutPrefix(line, "msg_id="); ok {
				carried[strings.Fields(id)[0]]++
			}
		}
	}
	for i := 1; i <= n; i++ {
		require.Equal(t, 1, carried[fmt.Sprint(i)], "intent %d's line pushed", i)
		require.True(t, h.results[fmt.Sprintf("p%d", i)].OK, "intent %d answered", i)
	}
}

// Issue 34, the version floor: a run from before SessionVersion continues as new at a worker's
// configure signal once its queue is empty (here after the message it was typing), and the next
// run carries SessionVersion; a run at SessionVersion takes the same signal and goes on.
func TestSessionUpgradesAtConfigureWhenQuiet(t *testing.T) {
	conf := SessionConfig{Name: "secretary", TmuxTarget: "secretary:0"}
	h := newSessionHarness(t)
	h.send(time.Second, SignalDeliver, DeliveryRequest{ID: "a", ReplyTo: "intent/1/a", Kind: KindMessage, Text: "a"})
	h.send(time.Second+time.Millisecond, SignalConfigure, conf)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion - 1, Config: conf})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, h.env.GetWorkflowError(), &can, "an old run continues as new after configure")
	require.Equal(t, []string{"a"}, h.typed, "the message it had is typed first")
	var next SessionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, SessionVersion, next.Version)
	require.Equal(t, "secretary", next.Config.Name)

	// A run that took a configure under the code before the floor replays it without a marker
	// (the version of that change ID is fixed at DefaultVersion for the run): the next
	// configure, a worker start under this code, still upgrades it.
	h = newSessionHarness(t)
	h.env.OnGetVersion("upgrade-at-configure-1", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.send(time.Second, SignalConfigure, conf)
	h.send(2*time.Second, SignalConfigure, conf)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion - 1, Config: conf})
	require.ErrorAs(t, h.env.GetWorkflowError(), &can, "the second configure upgrades the run")
	h = newSessionHarness(t)
	h.env.OnGetVersion("upgrade-at-configure-1", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.send(time.Second, SignalConfigure, conf)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion - 1, Config: conf})
	require.False(t, errors.As(h.env.GetWorkflowError(), &can), "the replayed configure alone does not upgrade: %v", h.env.GetWorkflowError())

	h = newSessionHarness(t)
	h.send(time.Second, SignalConfigure, conf)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: conf})
	require.False(t, errors.As(h.env.GetWorkflowError(), &can), "a current run goes on: %v", h.env.GetWorkflowError())
}

// On a loaded machine the pane may show the text on the input line for a moment after Enter:
// the input line is read again (a second apart) before the text counts as not submitted, so a
// slow pane is never cleared and typed into twice (SessionVersion 2). And a typing no receipt
// confirms whose input line reads free right after Enter is read once more (SessionVersion 8,
// relook-unconfirmed-submit): text drawn there late (a loaded Claude Code drew the paste after
// it took the Enter) is cleared and typed again, not counted delivered.
func TestSubmitLooksAgain(t *testing.T) {
	for _, c := range []struct {
		name               string
		lagging, drawnLate int
		want               []string
	}{
		{"a lagging pane: typed once, never cleared", 1, 0, []string{"typed hello"}},
		{"a paste drawn after the check: cleared and typed again", 0, 1, []string{"typed hello", "keys C-u", "typed hello"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newSessionHarness(t)
			h.lagging, h.drawnLate = c.lagging, c.drawnLate
			h.typeHello()
			require.Equal(t, c.want, h.events)
			require.True(t, h.results["a"].OK)
		})
	}
}

// Issue 35: the agent's Stop hook says the turn ended while its screen still draws it at work
// (Claude Code draws its end a moment after the hook): the pane is looked at again after
// policy.ScreenRelook, not after the 10 s busy wait (the build before typed it 10.5 s after the
// turn's end, measured with the real Claude Code), and the message goes in at once.
func TestMessageGoesInRightAfterTheTurnsEnd(t *testing.T) {
	for _, c := range []struct {
		version       int
		after, within time.Duration
	}{{SessionVersion, 500 * time.Millisecond, time.Second}} {
		h := newSessionHarness(t)
		h.busyTill = 20*time.Second + 500*time.Millisecond // the screen lags the Stop at 20 s
		h.send(time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
		h.send(5*time.Second, SignalDeliver, DeliveryRequest{ID: "m#1", ReplyTo: "intent/1/m", Kind: KindMessage, Text: "hello"})
		h.send(20*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
		h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
		h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: c.version, Config: claudeSession()})
		require.Equal(t, []string{"hello"}, h.typed, "version %d", c.version)
		require.Less(t, h.typedAt[0], 20*time.Second+c.within, "version %d: typed at %s", c.version, h.typedAt[0])
		require.GreaterOrEqual(t, h.typedAt[0], 20*time.Second+c.after, "version %d: typed at %s", c.version, h.typedAt[0])
	}
}

// Issue 35: a stuck message old enough for the reset phase, in a session whose config does not
// opt into resets: the person is asked (a push naming /reset), once per cooldown, and the
// session interrupts instead; after their yes (allow-reset) the next reminder resets the agent
// once, and the one after that does not.
func TestResetWaitsForThePersonsYes(t *testing.T) {
	h := newSessionHarness(t)
	cfg := claudeSession()
	cfg.Escalation = EscalationPolicy{Interrupt: true, Reset: false, StepEvery: time.Minute, ResetCooldown: time.Minute}
	cfg.Reset = ResetSteps{Command: "/clear"}
	remind := func(at time.Duration, id string) {
		h.send(at, SignalDeliver, DeliveryRequest{ID: id, ReplyTo: "intent/1/m", Kind: KindReminder, Text: "nudge " + id, Since: h.start})
	}
	remind(5*time.Minute, "a")
	remind(6*time.Minute+30*time.Second, "b")
	var allowed AllowResetResult
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateAllowReset, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Error(err) }, OnAccept: func() {},
			OnComplete: func(v any, err error) { allowed, _ = v.(AllowResetResult) },
		})
	}, 7*time.Minute)
	remind(8*time.Minute, "c")
	remind(10*time.Minute, "d")
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 15*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Equal(t, []string{
		"keys Escape Escape C-c", "typed nudge a",
		"keys Escape Escape C-c", "typed nudge b",
		"typed /clear", "typed nudge c",
		"keys Escape Escape C-c", "typed nudge d",
	}, h.events)
	require.True(t, allowed.Allowed, allowed.Why)
	var told []string
	for _, p := range h.pushes {
		switch {
		case strings.Contains(p.Title, "is stuck") && strings.Contains(p.Message, "Send /reset"):
			told = append(told, "asked")
		case strings.Contains(p.Title, "was reset") && strings.Contains(p.Message, "as you allowed with /reset"):
			told = append(told, "reset")
		}
	}
	// Asked at 5 min, again past the 1-min cooldown; reset once at 8; still stuck at 10: asked.
	require.Equal(t, []string{"asked", "asked", "reset", "asked"}, told, "%+v", h.pushes)
}
