package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/intentq/intentq/internal/policy"
)

// bigMessage is message n with text enough that a typed block holds only one of them.
func bigMessage(n string) DeliveryRequest {
	m := message(n)
	m.Text += " " + strings.Repeat("x", policy.MaxBatchBytes/2+1)
	return m
}

// receiptHook is the agent's UserPromptSubmit hook as the typed block a is submitted: it takes
// what stands at the desk (or, with none there, through the workflow: its take carries the
// receipt), prints it, reports the receipt and commits. It returns what it printed, through printed.
func (h *sessionHarness) receiptHook(t *testing.T, at time.Duration, a DeliveryRequest, printed *[]DeliveryRequest) {
	h.env.RegisterDelayedCallback(func() {
		receipt := AgentEvent{Event: EventUserPromptSubmit, At: h.env.Now(), Receipt: []string{a.ReplyTo}}
		taken, msgs := h.desk.take("user-prompt-submit/1", EventUserPromptSubmit, h.env.Now())
		if taken != nil {
			*printed = msgs
			h.env.SignalWorkflow(SignalHookWords, HookWords{Events: []AgentEvent{receipt}, Taken: []StandingTaken{*taken}, Commits: []string{taken.Key}})
			return
		}
		h.env.UpdateWorkflow(UpdateTake, "take/receipt", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { t.Errorf("take refused: %v", err) },
			OnComplete: func(v interface{}, err error) {
				require.NoError(t, err)
				res := v.(TakeResult)
				*printed = res.Messages
				h.env.SignalWorkflow(SignalHookWords, committed(res.Key))
			},
		}, TakeRequest{Key: "user-prompt-submit/1", Event: EventUserPromptSubmit, Deadline: h.env.Now().Add(time.Minute), Receipt: receipt.Receipt})
	}, at)
}

// hasMessage asks the session's has-message query at the moment of the call.
func (h *sessionHarness) hasMessage(t *testing.T, intent string) bool {
	v, err := h.env.QueryWorkflow(QueryHasMessage, intent)
	require.NoError(t, err)
	var has bool
	require.NoError(t, v.Get(&has))
	return has
}

// historyOf is the history entries written for request id.
func (h *sessionHarness) historyOf(id string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var got []string
	for _, e := range h.events {
		if strings.HasPrefix(e, "history "+id+" ") {
			got = append(got, e)
		}
	}
	return got
}

// edits-reach-the-desk (SessionVersion 13): b stands offered at the desk behind a
// typed block while the session awaits the block's receipt; the person edits b then. The
// session takes the offer back from the desk at once, so the receipt hook prints b as last
// sent, once, and the history records that text. Before, nothing took the offer back while the
// receipt was awaited, and the hook printed b as first sent while the history recorded the
// edited text.
func TestEditWhileABlockIsTypedReachesTheHook(t *testing.T) {
	h := newSessionHarness(t)
	h.desk = newModelDesk()
	a, b := bigMessage("a"), bigMessage("b")
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(time.Second, SignalDeliverAll, []DeliveryRequest{a, b})
	edited := message("b").Text + " (edited)"
	h.send(2*time.Second, SignalReplace, ReplaceRequest{Intent: b.ReplyTo, Text: edited})
	var printed []DeliveryRequest
	h.receiptHook(t, 3*time.Second, a, &printed)
	h.runFor(t, time.Minute)
	require.Len(t, h.typed, 1, "a typed, b handed over by the hook: %v", h.historyOf(b.ID))
	require.NotContains(t, h.typed[0], "msg_id=b")
	require.Len(t, printed, 1)
	require.Equal(t, edited, printed[0].Text, "the hook prints b as last sent")
	require.Equal(t, []string{"history " + b.ID + " " + KindMessage + " " + edited}, h.historyOf(b.ID))
	require.True(t, h.results[b.ID].OK)
}

// edits-reach-the-desk: the person takes b back (/cancel) while it stands at the desk
// behind a typed block: the offer is taken back at once, and the block's receipt hook hands b
// to no one. Before, the receipt hook took b from the desk after it was taken back.
func TestTakeBackWhileABlockIsTypedReachesTheDesk(t *testing.T) {
	h := newSessionHarness(t)
	h.desk = newModelDesk()
	a, b := bigMessage("a"), bigMessage("b")
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(time.Second, SignalDeliverAll, []DeliveryRequest{a, b})
	h.send(2*time.Second, SignalWithdraw, WithdrawRequest{Intent: b.ReplyTo})
	var printed []DeliveryRequest
	h.receiptHook(t, 3*time.Second, a, &printed)
	h.runFor(t, time.Minute)
	require.Len(t, h.typed, 1)
	require.Empty(t, printed, "b was taken back before any hook took it")
	require.Empty(t, h.historyOf(b.ID))
}

// The review's suspicion "an edit in the instant a hook takes a standing offer": a
// hook takes b at the desk, and the person's edit reaches the session before the desk's word.
// The desk's answer to the session's withdrawal decides: the hook printed b as first sent, so
// the agent has it in that text, the history records that text (not the edit), and
// has-message answers true as soon as the edit is settled, so the door sends the edit as a
// correction. Before (the edit applied to the queue at once), the history recorded the edited
// text the agent never got.
func TestEditAsAHookTakesTheOfferCountsAsTheAgents(t *testing.T) {
	h := newSessionHarness(t)
	h.desk = newModelDesk()
	b := message("b")
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	h.send(time.Second, SignalDeliver, b)
	edited := b.Text + " (edited)"
	var printed []DeliveryRequest
	var taken *StandingTaken
	h.env.RegisterDelayedCallback(func() {
		taken, printed = h.desk.take("post-tool-use/toolu_1", EventPostToolUse, h.env.Now())
		require.NotNil(t, taken, "b stands at the desk while the agent works")
		h.env.SignalWorkflow(SignalReplace, ReplaceRequest{Intent: b.ReplyTo, Text: edited})
	}, 5*time.Second)
	var has bool
	h.env.RegisterDelayedCallback(func() { has = h.hasMessage(t, b.ReplyTo) }, 6*time.Second)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalHookWords, HookWords{Taken: []StandingTaken{*taken}, Commits: []string{taken.Key}})
	}, 7*time.Second)
	h.send(10*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.runFor(t, time.Minute)
	require.Len(t, printed, 1)
	require.Equal(t, b.Text, printed[0].Text, "the hook took b before the edit")
	require.True(t, has, "the agent has b: the door sends the edit as a correction")
	require.Equal(t, []string{"history " + b.ID + " " + KindMessage + " " + b.Text}, h.historyOf(b.ID), "the history records what the hook printed")
	require.Empty(t, h.typed)
	require.True(t, h.results[b.ID].OK)
}

// edits-reach-the-desk: an edit of a message the standing offer reserves waits for
// the desk's word: the queue keeps the text the desk holds; a hook that took the offer printed
// that text (its offer carries it, and the edit is dropped: the agent has the message); what
// the hook did not take gets the edit. Before, the queue took the edit at once, and the hook's
// offer carried a text it never printed.
func TestLedgerEditOfReservedWaitsForTheDesk(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(msg(2, 1))
	first1, first2 := l.Queue[0].Text, l.Queue[1].Text
	offer := l.Stand(l.Offerable(), "run")
	_, standing := l.Replace("intent/1/1", "edited 1")
	require.True(t, standing)
	_, standing = l.Replace("intent/1/2", "edited 2")
	require.True(t, standing)
	require.Equal(t, []string{first1, first2}, []string{l.Queue[0].Text, l.Queue[1].Text}, "the desk holds these")
	o := l.StandingTaken(StandingTaken{Key: offer.Key, IDs: offer.IDs[:1]}, time.Now())
	require.Equal(t, first1, o.Requests[0].Text, "the hook printed the text first sent")
	require.Equal(t, "edited 2", l.Queue[0].Text, "not handed out: the edit holds")
	require.Equal(t, []Edit{{Intent: "intent/1/1", Text: "edited 1"}}, l.Edits, "the taken one's edit waits for its hook")

	// The hook never commits: its lease ends, and the message goes back to the queue edited
	// (the hook printed nothing; found by the exactly-once checker, seed 83).
	expired := l.Settle(o.At.Add(policy.OfferLease))
	require.Len(t, expired.Expired, 1)
	require.Equal(t, "edited 1", l.Queue[0].Text, "back in the queue as the person last sent it")
	require.Empty(t, l.Edits)

	// A hook that commits printed the text first sent: the edit is dropped.
	l.Edits = nil
	offer = l.Stand(l.Offerable(), "run")
	_, standing = l.Replace("intent/1/2", "edited 2 again")
	require.True(t, standing)
	o = l.StandingTaken(StandingTaken{Key: offer.Key, IDs: offer.IDs}, time.Now())
	l.Committed(o.Key)
	l.Settle(o.At.Add(time.Second))
	require.Empty(t, l.Edits, "the agent has the text the hook printed")
	require.Empty(t, l.Queue)
}

// edits-reach-the-desk: an edit read before the request of its message (the edit's
// own reader ran while the request still waited in its channel: the main loop was busy) is not
// lost: the request takes it when it is admitted. Found by the exactly-once checker, seed 162.
func TestLedgerEditBeforeItsRequestIsKept(t *testing.T) {
	var l Ledger
	replaced, standing := l.Replace("intent/1/1", "edited 1")
	require.False(t, replaced)
	require.False(t, standing)
	l.Admit(msg(1, 1))
	require.Equal(t, "edited 1", l.Queue[0].Text, "the request takes the edit read before it")
	require.Empty(t, l.EarlyEdits)

	// An edit of a message the agent has is not kept (the door sends it as a correction).
	l.Queue = nil
	l.remember(msg(1, 1))
	l.Replace("intent/1/1", "edited again")
	require.Empty(t, l.EarlyEdits)
}

// represent-after-reset: a hook printed a message into a context that a reset then
// ended, and its commit came after the reset: the message is presented again in the new context
// (a request of its own, typed or handed over once), and the intent's message still counts once.
// An offer whose commit came before the reset, or that was taken after it, is not. Found by the
// exactly-once checker, seed 281.
func TestLedgerPresentsAgainWhatAResetEnded(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(msg(2, 1))
	took := time.Unix(1000, 0)
	require.Len(t, l.Take("post-tool-use/1", EventPostToolUse, took), 2)
	l.ContextReset(took.Add(time.Second))
	l.Admit(msg(3, 1))
	require.Len(t, l.Take("session-start/1", EventSessionStart, took.Add(time.Second)), 1)
	l.Committed("post-tool-use/1", "session-start/1")
	st := l.Settle(took.Add(2 * time.Second))
	require.Len(t, st.Commits, 2)
	var again []string
	for _, q := range l.Queue {
		require.True(t, q.Again, "%+v", q)
		again = append(again, q.ReplyTo)
	}
	require.Equal(t, []string{"intent/1/1", "intent/1/2"}, again, "what the reset ended is presented again; what came after is not")
	require.Len(t, l.Offerable(), 2, "and handed over like a message")
	require.True(t, l.hasMessage("intent/1/1"))
}
