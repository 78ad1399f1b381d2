package workflows

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

// fakeSession stands in for the session workflow: it answers each delivery request through the
// delivery-result signal, succeeding or failing as told, and records when requests came.
type fakeSession struct {
	env   *testsuite.TestWorkflowEnvironment
	start time.Time
	mu    sync.Mutex
	fail  func(n int, req DeliveryRequest) string // non-empty: fail with this error
	phase int                                     // reported for reminders; 3 also reports a reset
	reqs  []DeliveryRequest
	at    []time.Duration
	// alerts are the failure alerts intents handed to the session.
	alerts []Alert
	// ntfy takes the reminder pushes intents hand over, as the session's digest would.
	ntfy *fakeNtfy
	// hold: deliveries are never answered (a pane that stays busy); withdrawn are the intents
	// taken back.
	hold      bool
	withdrawn []string
	// down: the session's host has no worker: the session takes signals and never answers.
	down bool
	// sent are the pushes intents said they sent themselves (SignalPushSent).
	sent []PushSent
}

func (f *fakeSession) install(t *testing.T) {
	f.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("secretary"), "", SignalAlert, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.alerts = append(f.alerts, arg.(Alert))
			return nil
		})
	f.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("secretary"), "", SignalRemindPush, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			req := arg.(PushRequest)
			if f.down {
				return nil
			}
			err := f.ntfy.publish(context.Background(), DigestPush("secretary", req.Topic, []PushRequest{req}))
			res := DeliveryResult{ID: req.ID, Kind: KindPush, OK: err == nil, At: f.env.Now()}
			if err != nil {
				res.Error, res.ErrorType = err.Error(), "Test"
			}
			f.env.RegisterDelayedCallback(func() { f.env.SignalWorkflow(SignalPushResult, res) }, 100*time.Millisecond)
			return nil
		})
	f.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("secretary"), "", SignalPushSent, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.sent = append(f.sent, arg.(PushSent))
			return nil
		})
	f.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("secretary"), "", SignalWithdraw, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.withdrawn = append(f.withdrawn, arg.(WithdrawRequest).Intent)
			return nil
		})
	f.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("secretary"), "", SignalDeliver, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			req := arg.(DeliveryRequest)
			f.mu.Lock()
			n := len(f.reqs)
			f.reqs = append(f.reqs, req)
			f.at = append(f.at, f.env.Now().Sub(f.start))
			if f.hold || f.down {
				f.mu.Unlock()
				return nil
			}
			failure := ""
			if f.fail != nil {
				failure = f.fail(n, req)
			}
			f.mu.Unlock()
			res := DeliveryResult{ID: req.ID, Kind: req.Kind, OK: failure == "", Error: failure, ErrorType: "Test", At: f.env.Now()}
			if req.Kind == KindReminder && f.phase != 0 {
				res.Phase, res.Reset = f.phase, f.phase == PhaseReset
			}
			f.env.RegisterDelayedCallback(func() { f.env.SignalWorkflow(SignalDeliveryResult, res) }, 100*time.Millisecond)
			return nil
		})
}

func (f *fakeSession) times(kind string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for i, r := range f.reqs {
		if r.Kind == kind {
			out = append(out, f.at[i].Round(time.Second))
		}
	}
	return out
}

// fakeNtfy records pushes; fail decides per push whether it fails.
type fakeNtfy struct {
	mu     sync.Mutex
	pushes []activities.Push
	fail   func(p activities.Push) bool
}

func (n *fakeNtfy) publish(_ context.Context, p activities.Push) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pushes = append(n.pushes, p)
	if n.fail != nil && n.fail(p) {
		return temporal.NewNonRetryableApplicationError("ntfy answered 500", "Test", nil)
	}
	return nil
}

func (n *fakeNtfy) all() []activities.Push {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]activities.Push(nil), n.pushes...)
}

type harness struct {
	testsuite.WorkflowTestSuite
	env     *testsuite.TestWorkflowEnvironment
	session *fakeSession
	ntfy    *fakeNtfy
}

func newHarness(t *testing.T) *harness {
	h := &harness{}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(IntentWorkflow, workflow.RegisterOptions{Name: IntentWorkflowName})
	h.ntfy = &fakeNtfy{}
	h.env.RegisterActivityWithOptions(h.ntfy.publish, activity.RegisterOptions{Name: activities.NtfyPublishName})
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: IntentID("42", "7")})
	h.session = &fakeSession{env: h.env, start: h.env.Now(), ntfy: h.ntfy}
	h.session.install(t)
	return h
}

func testPolicy() ReminderPolicy {
	return ReminderPolicy{
		// SPEC I6 and I7, written out: the tests check the spec, not the defaults.
		Reminders: policy.Reminders{
			FirstAfter:   30 * time.Second,
			RepeatEvery:  5 * time.Minute,
			RetryAfter:   60 * time.Second,
			OrphanAfter:  24 * time.Hour,
			SnippetChars: 40,
		},
		NtfyTopic:        "phone",
		DeliveryTimeout:  2 * time.Minute,
		MaxHistoryEvents: 100000,
	}
}

func (h *harness) input(text string) IntentInput {
	return IntentInput{
		ChatID: "42", MessageID: "7", Text: text, User: "kento", Source: SourceIngest,
		ReceivedAt: h.env.Now(), Session: "secretary", Policy: testPolicy(),
	}
}

// reactions records the emoji the intent puts on the person's message, in order (read once the
// workflow has run).
func (h *harness) reactions() *[]string {
	var mu sync.Mutex
	var got []string
	h.env.RegisterActivityWithOptions(func(_ context.Context, r activities.ReactRequest) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Emoji)
		return nil
	}, activity.RegisterOptions{Name: activities.TelegramReactName})
	return &got
}

// update sends an update at a given workflow time and records its outcome.
func (h *harness) update(at time.Duration, name string, arg interface{}, outcome *error) {
	h.env.RegisterDelayedCallback(func() {
		var args []interface{}
		if arg != nil {
			args = append(args, arg)
		}
		h.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { *outcome = err },
			OnAccept: func() {},
			OnComplete: func(_ interface{}, err error) {
				*outcome = err
			},
		}, args...)
	}, at)
}

func (h *harness) result(t *testing.T) IntentState {
	t.Helper()
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var st IntentState
	require.NoError(t, h.env.GetWorkflowResult(&st))
	return st
}

// I6: first reminder 30 s after receipt, then every 5 min; tmux and ntfy each time.
func TestI6ReminderSchedule(t *testing.T) {
	h := newHarness(t)
	var closeErr error
	h.update(11*time.Minute+10*time.Second, UpdateClose, CloseRequest{}, &closeErr)
	h.env.ExecuteWorkflow(IntentWorkflowName, h.input("please check the deploy"))
	st := h.result(t)
	require.NoError(t, closeErr)

	want := []time.Duration{30 * time.Second, 5*time.Minute + 30*time.Second, 10*time.Minute + 30*time.Second}
	require.Equal(t, want, h.session.times(KindReminder))
	require.Equal(t, 3, st.Reminders)
	require.Equal(t, StatusClosed, st.Status)
	require.Len(t, h.ntfy.all(), 3)
	require.Equal(t, "【未対応メッセージ】msg_id=7 chat=42: please check the deploy", h.session.reqs[0].Text)
	require.Equal(t, "msg_id=7 chat=42: please check the deploy", h.ntfy.all()[0].Message)
	require.Equal(t, []string{StatusPending, StatusClosed}, statuses(st))
	require.Equal(t, ReasonReplied, st.Transitions[1].Reason)
}

// I6: each channel of a reminder is tried again 60 s after its own failure, not after 5 min,
// and without repeating the other: a pane that failed is retyped, the push that went out is
// not; a push that failed is pushed again, the pane is not retyped. last_reminded_at moves when
// the pane got the reminder; failure alerts go to the session, which caps them per tick.
func TestI6FailedReminderRetriedAfter60s(t *testing.T) {
	h := newHarness(t)
	h.session.fail = func(n int, _ DeliveryRequest) string {
		if n == 0 {
			return "tmux target secretary:0 not found"
		}
		return ""
	}
	// ntfy fails on the second reminder push (at 330 s), succeeds again after.
	var calls int
	var pushedAt []time.Duration
	h.ntfy.fail = func(p activities.Push) bool {
		if p.Tags[0] != "envelope" {
			return false
		}
		pushedAt = append(pushedAt, h.env.Now().Sub(h.session.start).Round(time.Second))
		calls++
		return calls == 2
	}
	var closeErr error
	h.update(8*time.Minute, UpdateClose, CloseRequest{}, &closeErr)
	h.env.ExecuteWorkflow(IntentWorkflowName, h.input("hello"))
	st := h.result(t)

	// Pane: 30 s fails, 90 s succeeds, then 5 min later: 390 s.
	require.Equal(t, []time.Duration{30 * time.Second, 90 * time.Second, 390 * time.Second}, h.session.times(KindReminder))
	require.Equal(t, 2, st.Reminders)
	require.Equal(t, 390*time.Second, st.LastRemindedAt.Sub(h.session.start).Round(time.Second))
	// Push: 30 s succeeds, 330 s fails, 390 s succeeds.
	require.Equal(t, []time.Duration{30 * time.Second, 330 * time.Second, 390 * time.Second}, pushedAt)
	require.Equal(t, 2, st.Pushes)
	require.Equal(t, 0, st.PushFailures)

	// One alert per failure streak, handed to the session, with IDs and the error, never the text.
	for _, p := range h.ntfy.all() {
		require.NotEqual(t, "warning", p.Tags[0], "an alert went to ntfy directly")
	}
	require.Len(t, h.session.alerts, 2)
	require.Contains(t, h.session.alerts[0].Message, "intent=")
	require.Contains(t, h.session.alerts[0].Message, "secretary:0 not found")
	require.Contains(t, h.session.alerts[1].Title, "push failed")
	for _, a := range h.session.alerts {
		require.NotContains(t, a.Message, "hello")
	}
}

// N1: reminders carry the message's arrival time for the session's ladder, and the intent
// records the phase used and every reset (starter show, the Web UI).
func TestN1IntentRecordsPhaseAndResets(t *testing.T) {
	h := newHarness(t)
	h.session.phase = PhaseReset
	var closeErr error
	h.update(6*time.Minute, UpdateClose, CloseRequest{}, &closeErr)
	in := h.input("hi")
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	st := h.result(t)
	require.Equal(t, PhaseReset, st.LastPhase)
	require.Len(t, st.Resets, 2)
	for _, r := range h.session.reqs {
		require.True(t, r.Since.Equal(in.ReceivedAt), "reminder Since = %v", r.Since)
	}
}

func TestI5CloseStopsReminders(t *testing.T) {
	h := newHarness(t)
	var closeErr, again error
	h.update(10*time.Second, UpdateClose, CloseRequest{}, &closeErr)
	h.env.ExecuteWorkflow(IntentWorkflowName, h.input("hi"))
	st := h.result(t)
	require.NoError(t, closeErr)
	require.Empty(t, h.session.times(KindReminder))
	require.Equal(t, StatusClosed, st.Status)
	require.Equal(t, 10*time.Second, st.Transitions[1].At.Sub(h.session.start))
	_ = again
}

// The close signal (sent by a hook while no worker takes updates) closes like the update; a
// second one changes nothing.
func TestI5CloseSignal(t *testing.T) {
	h := newHarness(t)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalClose, CloseRequest{Reason: "replied by hook"}) }, 40*time.Second)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalClose, CloseRequest{}) }, 41*time.Second)
	h.env.ExecuteWorkflow(IntentWorkflowName, h.input("hi"))
	st := h.result(t)
	require.Equal(t, StatusClosed, st.Status)
	require.Len(t, st.Transitions, 2)
	require.Equal(t, "replied by hook", st.Transitions[1].Reason)
	require.Equal(t, 40*time.Second, st.Transitions[1].At.Sub(h.session.start))
	require.Len(t, h.session.times(KindReminder), 1)
}

func TestI5LinkStopsRemindersUntilClosed(t *testing.T) {
	h := newHarness(t)
	var linkErr, remindErr, closeErr error
	h.update(10*time.Second, UpdateLink, LinkRequest{Job: "job-9"}, &linkErr)
	h.update(5*time.Minute, UpdateRemindNow, nil, &remindErr)
	h.update(30*time.Minute, UpdateClose, CloseRequest{}, &closeErr)
	h.env.ExecuteWorkflow(IntentWorkflowName, h.input("hi"))
	st := h.result(t)
	require.NoError(t, linkErr)
	require.Error(t, remindErr, "remind-now on a linked intent must be refused")
	require.NoError(t, closeErr)
	require.Empty(t, h.session.times(KindReminder))
	require.Equal(t, []string{StatusPending, StatusLinked, StatusClosed}, statuses(st))
	require.Equal(t, "job-9", st.Job)
}

func TestI5OrphanedAfter24h(t *testing.T) {
	h := newHarness(t)
	h.env.ExecuteWorkflow(IntentWorkflowName, h.input("anyone?"))
	st := h.result(t)
	require.Equal(t, StatusIgnored, st.Status)
	last := st.Transitions[len(st.Transitions)-1]
	require.Equal(t, ReasonOrphaned, last.Reason)
	require.Equal(t, 24*time.Hour, last.At.Sub(h.session.start))
	// 30 s, then every 5 min until 24 h: 1 + floor((24h-30s)/5m) = 288.
	require.Equal(t, 288, st.Reminders)
}

// I5: ignore by hand records reason manual and ends the intent; closing it afterwards is refused
// by the server (see the end-to-end test in package service).
func TestI5IgnoreByHand(t *testing.T) {
	h := newHarness(t)
	var ignoreErr error
	h.update(5*time.Second, UpdateIgnore, IgnoreRequest{}, &ignoreErr)
	h.env.ExecuteWorkflow(IntentWorkflowName, h.input("hi"))
	st := h.result(t)
	require.NoError(t, ignoreErr)
	require.Equal(t, StatusIgnored, st.Status)
	require.Equal(t, ReasonManual, st.Transitions[1].Reason)
	require.Empty(t, h.session.times(KindReminder))
}

// Issue 35: a message ignored while it waits for its session (a pane that stays busy) is taken
// back from the session at once, its wait for the delivery ends without a failure or an alert,
// and the person's message shows it was let go; one ignored after it reached the agent only
// takes its reminders back.
func TestIgnoredMessageIsTakenBack(t *testing.T) {
	h := newHarness(t)
	h.session.hold = true
	reactions := h.reactions()
	var ignoreErr error
	h.update(20*time.Second, UpdateIgnore, IgnoreRequest{}, &ignoreErr)
	in := h.input("never mind")
	in.Deliver, in.AckReaction, in.CancelReaction = true, "👀", "🕊"
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	st := h.result(t)
	require.NoError(t, ignoreErr)
	require.Equal(t, StatusIgnored, st.Status)
	require.Nil(t, st.Delivered)
	require.Equal(t, []string{IntentID("42", "7")}, h.session.withdrawn)
	require.Empty(t, h.session.alerts, "a delivery taken back did not fail")
	require.Zero(t, st.DeliveryFailures)
	require.Equal(t, []string{"👀", "🕊"}, *reactions)
	require.Equal(t, 20*time.Second, h.env.Now().Sub(h.session.start).Round(time.Second), "the wait ended at once")

	h = newHarness(t)
	h.update(time.Minute, UpdateIgnore, IgnoreRequest{}, &ignoreErr)
	in = h.input("done already")
	in.Deliver, in.CancelReaction = true, "🕊"
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	st = h.result(t)
	require.NotNil(t, st.Delivered)
	require.Equal(t, []string{IntentID("42", "7")}, h.session.withdrawn, "its reminders are taken back")
}

// Issue 38: while no worker serves the session's host, the session answers nothing; a reminder
// push it has not reported within the delivery timeout goes out from the intent itself, so the
// person is still reminded (once per schedule). While the host is served, a slow session keeps
// its push (it may hold it on purpose while the agent works), and an intent from before the
// rule waits as it did.
func TestReminderIsPushedWhileTheHostIsDown(t *testing.T) {
	for _, c := range []struct {
		name    string
		served  bool
		version int
		pushes  int
		asked   int
		sent    int // the session told of the push sent (it drops the one it holds)
	}{
		{name: "host down", served: false, version: IntentVersion, pushes: 1, asked: 1, sent: 1},
		{name: "host served, session slow", served: true, version: IntentVersion, pushes: 0, asked: 2},
		{name: "before the session was told", served: false, version: intentWithdrawsHeldPush - 1, pushes: 1, asked: 1},
		{name: "before the rule", served: false, version: intentPushesWhenHostDown - 1, pushes: 0, asked: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.session.down = true
			if c.version < intentPushesWhenHostDown {
				h.env.OnGetVersion("push-when-host-down", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			if c.version < intentWithdrawsHeldPush {
				h.env.OnGetVersion("withdraw-held-push", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			var asked []string
			h.env.RegisterActivityWithOptions(func(_ context.Context, req activities.HostServedRequest) (activities.HostServedResult, error) {
				asked = append(asked, req.WorkflowID)
				return activities.HostServedResult{Queue: "intentq-sessions@laptop", Served: c.served}, nil
			}, activity.RegisterOptions{Name: activities.HostServedName})
			var closeErr error
			h.update(6*time.Minute, UpdateClose, CloseRequest{}, &closeErr)
			in := h.input("is the build green?")
			in.Version = c.version
			h.env.ExecuteWorkflow(IntentWorkflowName, in)
			st := h.result(t)
			require.NoError(t, closeErr)
			pushes := h.ntfy.all()
			var reminders []activities.Push
			for _, p := range pushes {
				if strings.Contains(p.Message, "is the build green?") {
					reminders = append(reminders, p)
				}
			}
			require.Len(t, reminders, c.pushes, "reminder pushes: %+v", pushes)
			require.Equal(t, c.pushes, st.Pushes)
			require.Len(t, asked, c.asked)
			for _, id := range asked {
				require.Equal(t, SessionWorkflowID("secretary"), id)
			}
			if c.pushes > 0 {
				require.Equal(t, "msg_id=7 chat=42: is the build green?", reminders[0].Message)
			}
			require.Len(t, h.session.sent, c.sent)
			for _, p := range h.session.sent {
				require.Equal(t, IntentID("42", "7"), p.Intent)
				require.Contains(t, p.ID, IntentID("42", "7")+"#push-")
			}
		})
	}
}

func TestRemindNow(t *testing.T) {
	h := newHarness(t)
	var remindErr, closeErr error
	h.update(5*time.Second, UpdateRemindNow, nil, &remindErr)
	h.update(40*time.Second, UpdateClose, CloseRequest{}, &closeErr)
	h.env.ExecuteWorkflow(IntentWorkflowName, h.input("hi"))
	st := h.result(t)
	require.NoError(t, remindErr)
	// remind-now at 5 s; the next is then due 5 min after it, so none at 30 s.
	require.Equal(t, []time.Duration{5 * time.Second}, h.session.times(KindReminder))
	require.Equal(t, 1, st.Reminders)
}

// I2: a Telegram-door intent delivers the message itself at once (full text), and is reminded
// with the masked snippet on the usual schedule; a failed delivery is retried after 60 s.
func TestI2DeliverThenRemind(t *testing.T) {
	h := newHarness(t)
	h.session.fail = func(n int, req DeliveryRequest) string {
		if n == 0 {
			return "pane busy"
		}
		return ""
	}
	var closeErr error
	h.update(2*time.Minute, UpdateClose, CloseRequest{}, &closeErr)
	in := h.input("line one\nline two " + strings.Repeat("x", 60))
	in.Deliver = true
	in.Source = SourceTelegram
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	st := h.result(t)
	require.Equal(t, []time.Duration{0, 60 * time.Second}, h.session.times(KindMessage))
	require.Equal(t, []time.Duration{30 * time.Second}, h.session.times(KindReminder))
	require.NotNil(t, st.Delivered)
	require.Contains(t, h.session.reqs[0].Text, "line one\nline two", "the delivery carries the full text")
	for _, p := range h.ntfy.all() {
		require.NotContains(t, p.Message, strings.Repeat("x", 60), "ntfy must only get the snippet")
	}
	require.True(t, strings.HasSuffix(h.ntfy.all()[len(h.ntfy.all())-1].Message, "…"))
}

// The Telegram door queues the first delivery itself (arrival order); the intent only waits for
// its result. If that result never comes, the intent asks the session itself, without an alert.
func TestDoorQueuedDelivery(t *testing.T) {
	h := newHarness(t)
	in := h.input("queued by the door")
	in.Deliver, in.DeliveryQueued, in.Source = true, true, SourceTelegram
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalDeliveryResult, DeliveryResult{ID: DoorDeliveryRequest(in).ID, Kind: KindMessage, OK: true})
	}, 2*time.Second)
	var closeErr error
	h.update(10*time.Second, UpdateClose, CloseRequest{}, &closeErr)
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	st := h.result(t)
	require.Empty(t, h.session.times(KindMessage), "the intent must not ask again")
	require.NotNil(t, st.Delivered)
	require.Equal(t, 2*time.Second, st.Delivered.Sub(h.session.start))
	require.Equal(t, "intent/42/7#1", DoorDeliveryRequest(in).ID)

	h = newHarness(t)
	in = h.input("the door's signal was lost")
	in.Deliver, in.DeliveryQueued, in.Source = true, true, SourceTelegram
	in.Policy.FirstAfter = time.Hour
	h.update(4*time.Minute, UpdateClose, CloseRequest{}, &closeErr)
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	st = h.result(t)
	// Waits DeliveryTimeout (2 min), then RetryAfter (60 s), then asks the session itself.
	require.Equal(t, []time.Duration{3 * time.Minute}, h.session.times(KindMessage))
	require.Equal(t, "intent/42/7#2", h.session.reqs[0].ID)
	require.NotNil(t, st.Delivered)
	for _, p := range h.ntfy.all() {
		require.NotEqual(t, "warning", p.Tags[0], "a delivery timeout raises no alert")
	}
}

// History stays bounded: the workflow continues as new when the server suggests it, and the
// next run carries the state and continues the schedule where it was.
func TestContinueAsNewKeepsState(t *testing.T) {
	h := newHarness(t)
	in := h.input("hi")
	h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 12*time.Minute)
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "want continue-as-new, got %v", h.env.GetWorkflowError())

	var next IntentInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.Equal(t, StatusPending, next.State.Status)
	require.Equal(t, 3, next.State.Reminders, "reminders at 30 s, 5m30s and 10m30s before the suggestion")
	require.Equal(t, in.Text, next.Text)
	require.True(t, in.ReceivedAt.Equal(next.ReceivedAt))

	// The next run continues the schedule from the carried state: the reminder due at 15m30s
	// comes at once, then 5 min later.
	h2 := newHarness(t)
	last := *next.State.LastRemindedAt
	h2.env.SetStartTime(last.Add(5 * time.Minute))
	h2.session.start = last.Add(5 * time.Minute)
	var closeErr error
	h2.update(6*time.Minute, UpdateClose, CloseRequest{}, &closeErr)
	h2.env.ExecuteWorkflow(IntentWorkflowName, next)
	st := h2.result(t)
	require.Equal(t, []time.Duration{0, 5 * time.Minute}, h2.session.times(KindReminder))
	require.Equal(t, 5, st.Reminders)
	require.Equal(t, 1, st.Runs)
	require.Equal(t, []string{StatusPending, StatusClosed}, statuses(st))
}

func statuses(st IntentState) []string {
	var out []string
	for _, tr := range st.Transitions {
		out = append(out, tr.Status)
	}
	return out
}

// The sender sees the message arrived (a reaction when the intent starts) and, when set, that
// it was answered (another when it closes); the delivered text tells the agent how to answer.
func TestReactionsAndReplyHint(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var reactions []string
	h.env.RegisterActivityWithOptions(func(_ context.Context, r activities.ReactRequest) error {
		mu.Lock()
		defer mu.Unlock()
		reactions = append(reactions, r.ChatID+"/"+r.MessageID+" "+r.Emoji)
		return nil
	}, activity.RegisterOptions{Name: activities.TelegramReactName})
	var closeErr error
	h.update(time.Minute, UpdateClose, CloseRequest{}, &closeErr)
	in := h.input("hi")
	in.AckReaction, in.DoneReaction, in.ReplyHint = "👀", "✅", "answer with mcp__intentq__reply chat_id=42 reply_to=7"
	in.Deliver = true
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	st := h.result(t)
	require.Equal(t, StatusClosed, st.Status)
	require.Equal(t, []string{"42/7 👀", "42/7 ✅"}, reactions)
	require.Equal(t, "【新着メッセージ】msg_id=7 chat=42 from=kento (answer with mcp__intentq__reply chat_id=42 reply_to=7): hi", h.session.reqs[0].Text)
}

// Issue 36: the reaction on the person's message moves through its stages, each set after the
// one before: recorded, a failed delivery, in the agent's context, answered.
func TestReactionShowsTheMessagesStage(t *testing.T) {
	h := newHarness(t)
	h.session.fail = func(n int, req DeliveryRequest) string {
		if n == 0 && req.Kind == KindMessage {
			return "the pane is gone"
		}
		return ""
	}
	reactions := h.reactions()
	var closeErr error
	h.update(10*time.Minute, UpdateClose, CloseRequest{}, &closeErr)
	in := h.input("where is it?")
	in.Deliver, in.AckReaction, in.DeliveredReaction, in.FailedReaction, in.DoneReaction = true, "👀", "✍", "😢", "👌"
	h.env.ExecuteWorkflow(IntentWorkflowName, in)
	st := h.result(t)
	require.NoError(t, closeErr)
	require.NotNil(t, st.Delivered)
	require.Equal(t, []string{"👀", "😢", "✍", "👌"}, *reactions)
}
