package workflows

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

type inboxHarness struct {
	testsuite.WorkflowTestSuite
	env    *testsuite.TestWorkflowEnvironment
	start  time.Time
	mu     sync.Mutex
	nudges []DeliveryRequest
	at     []time.Duration
}

func newInboxHarness(t *testing.T) *inboxHarness {
	h := &inboxHarness{}
	h.env = h.NewTestWorkflowEnvironment()
	h.start = h.env.Now()
	h.env.RegisterWorkflowWithOptions(InboxWorkflow, workflow.RegisterOptions{Name: InboxWorkflowName})
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: InboxID("worker1")})
	h.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("worker1"), "", SignalDeliver, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			req := arg.(DeliveryRequest)
			h.mu.Lock()
			h.nudges = append(h.nudges, req)
			h.at = append(h.at, h.env.Now().Sub(h.start).Round(time.Second))
			h.mu.Unlock()
			h.env.RegisterDelayedCallback(func() {
				h.env.SignalWorkflow(SignalDeliveryResult, DeliveryResult{ID: req.ID, Kind: req.Kind, OK: true})
			}, time.Millisecond)
			return nil
		})
	return h
}

func (h *inboxHarness) update(at time.Duration, name string, arg any, out *[]any) {
	h.env.RegisterDelayedCallback(func() {
		var args []any
		if arg != nil {
			args = append(args, arg)
		}
		h.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { *out = append(*out, err) }, OnAccept: func() {},
			OnComplete: func(v any, err error) {
				if err != nil {
					*out = append(*out, err)
					return
				}
				*out = append(*out, v)
			},
		}, args...)
	}, at)
}

func (h *inboxHarness) messages(t *testing.T) []InboxMessage {
	v, err := h.env.QueryWorkflow(QueryInbox)
	require.NoError(t, err)
	var msgs []InboxMessage
	require.NoError(t, v.Get(&msgs))
	return msgs
}

// S3, N5: sends are kept in order with id, from, timestamp, type, content, read; read marks them
// read; over 50, all unread stay plus the newest read ones (at most 30) that fit under 50.
func TestInboxSendReadOverflow(t *testing.T) {
	h := newInboxHarness(t)
	var out []any
	for i := 1; i <= 40; i++ {
		h.update(time.Duration(i)*time.Second, UpdateInboxSend, InboxSend{From: "boss", Type: "task", Content: fmt.Sprintf("m%d", i)}, &out)
	}
	h.update(50*time.Second, UpdateInboxSend, InboxSend{Key: "k1", From: "boss", Type: "task", Content: "keyed"}, &out)
	h.update(51*time.Second, UpdateInboxSend, InboxSend{Key: "k1", From: "boss", Type: "task", Content: "keyed"}, &out)
	h.update(52*time.Second, UpdateInboxSend, InboxSend{From: "boss", Type: "task"}, &out) // empty content: refused
	h.update(time.Minute, UpdateInboxRead, nil, &out)
	for i := 41; i <= 65; i++ {
		h.update(time.Minute+time.Duration(i)*time.Second, UpdateInboxSend, InboxSend{From: "w2", Type: "report_completed", Content: fmt.Sprintf("m%d", i)}, &out)
	}
	var final []InboxMessage
	h.env.RegisterDelayedCallback(func() { final = h.messages(t); h.env.CancelWorkflow() }, 10*time.Minute)
	h.env.ExecuteWorkflow(InboxWorkflowName, InboxInput{Agent: "worker1"})

	refused, ok := out[42].(error)
	require.True(t, ok && refused != nil, "empty content refused, got %v", out[42])
	read := out[43].([]InboxMessage)
	require.Len(t, read, 41, "40 plus one keyed message (its repeat was the same message)")
	require.Equal(t, "m1", read[0].Content)
	require.False(t, read[0].Read)
	// 41 read + 25 unread = 66 > 50: all 25 unread kept plus the newest read ones that fit: 25.
	unread, readCount := 0, 0
	for _, m := range final {
		if m.Read {
			readCount++
		} else {
			unread++
		}
	}
	require.Equal(t, 25, unread)
	require.Equal(t, 25, readCount)
	require.Len(t, final, MaxInboxMessages)
	require.Equal(t, "m17", final[0].Content, "the oldest read ones went first")
	require.Equal(t, "m65", final[len(final)-1].Content)
}

// N5: unread messages nudge the agent's session (bursts gathered into one nudge), again every 5
// min while unread, escalating by the oldest unread; reading stops the nudges.
func TestInboxNudgesSession(t *testing.T) {
	h := newInboxHarness(t)
	var out []any
	h.update(10*time.Second, UpdateInboxSend, InboxSend{From: "boss", Type: "task", Content: "a"}, &out)
	h.update(11*time.Second, UpdateInboxSend, InboxSend{From: "w3", Type: "task", Content: "b"}, &out)
	h.update(12*time.Minute, UpdateInboxRead, nil, &out)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 30*time.Minute)
	h.env.ExecuteWorkflow(InboxWorkflowName, InboxInput{Agent: "worker1", Session: "worker1"})
	require.Equal(t, []time.Duration{12 * time.Second, 5*time.Minute + 12*time.Second, 10*time.Minute + 12*time.Second}, h.at)
	require.Equal(t, NotificationText("worker1", 2, "w3"), h.nudges[0].Text)
	require.Contains(t, h.nudges[0].Text, "[Notification]")
	require.Contains(t, h.nudges[0].Text, "not a blocking request")
	require.True(t, h.nudges[2].Since.Equal(h.start.Add(10*time.Second)), "escalates by the oldest unread")
}

// An agent without a session only accumulates.
func TestInboxWithoutSessionOnlyAccumulates(t *testing.T) {
	h := newInboxHarness(t)
	var out []any
	h.update(time.Second, UpdateInboxSend, InboxSend{From: "boss", Type: "task", Content: "a"}, &out)
	var final []InboxMessage
	h.env.RegisterDelayedCallback(func() { final = h.messages(t); h.env.CancelWorkflow() }, time.Hour)
	h.env.ExecuteWorkflow(InboxWorkflowName, InboxInput{Agent: "worker1"})
	require.Empty(t, h.nudges)
	require.Len(t, final, 1)
}

// Issue 38: an inbox tells its agent's session what is unread after every change, in order
// (the session hands it to the hook desk, where a Stop hook reads it); a session's ask is
// answered with a tell.
func TestInboxTellsSessionWhatIsUnread(t *testing.T) {
	h := newInboxHarness(t)
	var told []InboxUnread
	var toldAt []time.Duration
	h.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("worker1"), "", SignalInboxUnread, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			told = append(told, arg.(InboxUnread))
			toldAt = append(toldAt, h.env.Now().Sub(h.start).Round(time.Second))
			return nil
		})
	var out []any
	long := strings.Repeat("é", InboxUnreadRunes+50)
	for i := 1; i <= 7; i++ {
		h.update(time.Duration(i)*time.Second, UpdateInboxSend, InboxSend{From: "boss", Type: "task", Content: fmt.Sprintf("m%d %s", i, long)}, &out)
	}
	h.update(time.Minute, UpdateInboxRead, nil, &out)
	h.update(2*time.Minute, UpdateInboxRead, nil, &out) // nothing unread: nothing changed
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalInboxAnnounce, nil) }, 3*time.Minute)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Hour)
	h.env.ExecuteWorkflow(InboxWorkflowName, InboxInput{Agent: "worker1", Session: "worker1", TellsSession: true})

	require.Equal(t, []time.Duration{0, 1 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second, 6 * time.Second, 7 * time.Second, time.Minute, 3 * time.Minute}, toldAt,
		"once at the start, after each send and the read that changed something, and when asked")
	require.Equal(t, 0, told[0].Count)
	for i := 1; i <= 7; i++ {
		require.Equal(t, i, told[i].Count)
		require.Len(t, told[i].First, min(i, InboxUnreadShown))
	}
	first := told[7].First[0]
	require.True(t, strings.HasPrefix(first.Content, "m1 "), first.Content)
	require.Len(t, []rune(first.Content), InboxUnreadRunes, "content cut to the runes a hook needs")
	require.Equal(t, "boss", first.From)
	require.Equal(t, InboxUnread{}, told[8], "read: nothing unread")
	require.Equal(t, InboxUnread{}, told[9])
}

// An inbox run from before inboxes told sessions continues as new to tell, when a session asks;
// one that tells sessions is not told anything by a session that does not run.
func TestInboxFromBeforeTellsOnceAsked(t *testing.T) {
	h := newInboxHarness(t)
	var out []any
	h.update(time.Second, UpdateInboxSend, InboxSend{From: "boss", Type: "task", Content: "a"}, &out)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalInboxAnnounce, nil) }, time.Minute)
	h.env.ExecuteWorkflow(InboxWorkflowName, InboxInput{Agent: "worker1"})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, h.env.GetWorkflowError(), &can)
	var next InboxInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.True(t, next.TellsSession)
	require.Len(t, next.Messages, 1, "its messages carried")

	// A run that continues as new as a message arrives carries the message's nudge, which the
	// next run makes as soon as a new message's.
	h = newInboxHarness(t)
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateInboxSend, "", &testsuite.TestUpdateCallback{OnReject: func(error) {}, OnAccept: func() {}, OnComplete: func(any, error) {}},
			InboxSend{From: "boss", Type: "task", Content: "a"})
		h.env.SetContinueAsNewSuggested(true)
	}, time.Minute)
	h.env.ExecuteWorkflow(InboxWorkflowName, InboxInput{Agent: "worker1", Session: "worker1"})
	require.ErrorAs(t, h.env.GetWorkflowError(), &can)
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.True(t, next.NudgeDue, "the message's nudge is carried: %+v", next)
	require.Empty(t, h.nudges)
	h = newInboxHarness(t)
	h.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("worker1"), "", SignalInboxUnread, mock.Anything).Return(nil)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(InboxWorkflowName, next)
	require.Equal(t, []time.Duration{2 * time.Second}, h.at)

	h = newInboxHarness(t)
	h.env.OnSignalExternalWorkflow(mock.Anything, SessionWorkflowID("worker1"), "", SignalInboxUnread, mock.Anything).Return(&temporal.UnknownExternalWorkflowExecutionError{})
	out = nil
	h.update(time.Second, UpdateInboxSend, InboxSend{From: "boss", Type: "task", Content: "a"}, &out)
	var final []InboxMessage
	h.env.RegisterDelayedCallback(func() { final = h.messages(t); h.env.CancelWorkflow() }, time.Hour)
	h.env.ExecuteWorkflow(InboxWorkflowName, InboxInput{Agent: "worker1", TellsSession: true})
	require.Len(t, final, 1, "no session: the inbox keeps working")
}
