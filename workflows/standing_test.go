package workflows

import (
	"context"
	"errors"
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
)

// registerDesk registers the desk's activities: those of the model desk desk() returns, or, when
// it returns nil, as a worker without a desk answers them (the session answers takes through
// the workflow only).
func registerDesk(env *testsuite.TestWorkflowEnvironment, desk func() *modelDesk) {
	env.RegisterActivityWithOptions(func(ctx context.Context, req DeskPublishRequest) error {
		if d := desk(); d != nil {
			return d.publish(req)
		}
		return NoDeskPublish(ctx, req)
	}, activity.RegisterOptions{Name: DeskPublishName})
	env.RegisterActivityWithOptions(func(ctx context.Context, req DeskWithdrawRequest) (DeskWithdrawResult, error) {
		if d := desk(); d != nil {
			return d.withdraw(req)
		}
		return NoDeskWithdraw(ctx, req)
	}, activity.RegisterOptions{Name: DeskWithdrawName})
	env.RegisterActivityWithOptions(func(ctx context.Context, req DeskInboxRequest) error {
		if d := desk(); d != nil {
			return d.knowInbox(req)
		}
		return NoDeskInbox(ctx, req)
	}, activity.RegisterOptions{Name: DeskInboxName})
	// The agents have no inbox unless the desk's announce says otherwise.
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", SignalInboxAnnounce, mock.Anything).Return(
		func(_, _, _, _ string, _ interface{}) error {
			if d := desk(); d != nil && d.announce != nil {
				return d.announce()
			}
			return &temporal.UnknownExternalWorkflowExecutionError{}
		})
}

// modelDesk is the hook desk's contract (hookdesk.Desk) for the workflow's tests: standing
// offers, each taken by one hook run or withdrawn, atomically; a new offer withdraws an open one.
type modelDesk struct {
	mu        sync.Mutex
	offers    map[string]*modelOffer
	order     []string
	published int
	// away, when it says so, fails the activities (the worker is away).
	away func() bool
	// now is the desk's clock (nil: the wall clock); unknownWithdrawn answers the withdrawal of
	// an offer the desk never got "withdrawn", as desks did before issue 38.
	now              func() time.Time
	unknownWithdrawn bool
	// inbox is what the session told the desk is unread in its agent's inbox, each time;
	// announce, when set, answers the session's ask of its inbox (unset: it has none).
	inbox    []DeskInboxRequest
	announce func() error
}

// inboxWords is a copy of what the sessions told the desk of their inboxes, so far.
func (d *modelDesk) inboxWords() []DeskInboxRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.inbox)
}

func (d *modelDesk) knowInbox(req DeskInboxRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.away != nil && d.away() {
		return errWorkerAway
	}
	d.inbox = append(d.inbox, req)
	return nil
}

type modelOffer struct {
	msgs      []DeliveryRequest
	withdrawn bool
	taken     *StandingTaken
}

func newModelDesk() *modelDesk { return &modelDesk{offers: map[string]*modelOffer{}} }

func (d *modelDesk) publish(req DeskPublishRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.away != nil && d.away() {
		return errWorkerAway
	}
	if d.offers[req.Key] != nil {
		return nil
	}
	for _, o := range d.offers {
		if o.taken == nil {
			o.withdrawn = true
		}
	}
	d.offers[req.Key] = &modelOffer{msgs: req.Messages}
	d.order = append(d.order, req.Key)
	d.published++
	return nil
}

func (d *modelDesk) withdraw(req DeskWithdrawRequest) (DeskWithdrawResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.away != nil && d.away() {
		return DeskWithdrawResult{}, errWorkerAway
	}
	o := d.offers[req.Key]
	switch {
	case o == nil && !d.unknownWithdrawn:
		now := time.Now()
		if d.now != nil {
			now = d.now()
		}
		return UnknownOfferTaken(req.Key, now), nil
	case o == nil || o.withdrawn:
		return DeskWithdrawResult{Withdrawn: true}, nil
	case o.taken != nil:
		t := *o.taken
		return DeskWithdrawResult{Taken: &t}, nil
	}
	o.withdrawn = true
	return DeskWithdrawResult{Withdrawn: true}, nil
}

// take is a hook's take at the desk: the open offer, now this hook's; nil when none is open.
func (d *modelDesk) take(hook, event string, at time.Time) (*StandingTaken, []DeliveryRequest) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, key := range d.order {
		o := d.offers[key]
		if o.withdrawn || o.taken != nil {
			continue
		}
		o.taken = &StandingTaken{Key: key, Hook: hook, Event: event, At: at}
		t := *o.taken
		return &t, o.msgs
	}
	return nil, nil
}

// Issue 26: while the agent works, what waits stands offered at the desk before any hook asks
// (the offer grows with what arrives, at the agent's next report); a hook takes it there (no update to the session), the desk's word and the hook's commit
// answer each intent once, through the hook, and nothing is typed.
func TestStandingOfferTakenAtTheDesk(t *testing.T) {
	h := newSessionHarness(t)
	desk := newModelDesk()
	h.desk = desk
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	for i, n := range []string{"1", "2", "3"} {
		h.send(time.Duration(i+1)*time.Second, SignalDeliver, message(n))
	}
	// The agent's next report: the offer that stands grows by what arrived since.
	h.send(4*time.Second, SignalHookWords, said(AgentEvent{Event: EventPreToolUse, Detail: "Bash"}))
	var printed []DeliveryRequest
	h.env.RegisterDelayedCallback(func() {
		taken, msgs := desk.take("post-tool-use/toolu_1", EventPostToolUse, h.env.Now())
		require.NotNil(t, taken, "an offer stands while the agent works")
		printed = msgs
		h.env.SignalWorkflow(SignalHookWords, HookWords{Taken: []StandingTaken{*taken}})
		h.env.RegisterDelayedCallback(func() {
			require.Empty(t, h.results, "nothing counts delivered before the hook commits")
			h.env.SignalWorkflow(SignalHookWords, committed(taken.Key))
		}, time.Second)
	}, 5*time.Second)
	h.send(10*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.runFor(t, time.Minute)
	require.Len(t, printed, 3)
	require.Empty(t, h.typed, "nothing typed: the hook handed every message over")
	for _, n := range []string{"1", "2", "3"} {
		res := h.results["intent/42/"+n+"#1"]
		require.True(t, res.OK, n)
		require.Equal(t, EventPostToolUse, res.Via, n)
	}
}

// Issue 26: an offer no hook took is withdrawn before the session types, so a hook that comes
// after the typing gets nothing: each message reaches the agent once, typed.
func TestStandingOfferWithdrawnBeforeTyping(t *testing.T) {
	h := newSessionHarness(t)
	desk := newModelDesk()
	h.desk = desk
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	h.send(time.Second, SignalDeliver, message("1"))
	h.send(5*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(6*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{"intent/42/1"}}))
	var late *StandingTaken
	h.env.RegisterDelayedCallback(func() {
		late, _ = desk.take("post-tool-use/toolu_2", EventPostToolUse, h.env.Now())
	}, 8*time.Second)
	h.runFor(t, time.Minute)
	require.Equal(t, 1, desk.published, "the offer stood while the agent worked")
	require.Nil(t, late, "the offer was withdrawn before the typing")
	require.Len(t, h.typed, 1)
	require.True(t, strings.Contains(h.typed[0], "text 1"))
	require.True(t, h.results["intent/42/1#1"].OK)
}

// Issue 26: a hook takes the offer in the instant the session withdraws it (the desk's word has
// not come): the withdrawal says who took it, the messages are that hook's, and its commit
// answers them; nothing is typed, and a commit that comes before any word counts too.
func TestStandingOfferTakenAsItIsWithdrawn(t *testing.T) {
	for _, commitFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "withdrawal-says", true: "commit-first"}[commitFirst], func(t *testing.T) {
			h := newSessionHarness(t)
			desk := newModelDesk()
			h.desk = desk
			h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
			h.send(time.Second, SignalDeliver, message("1"))
			h.env.RegisterDelayedCallback(func() {
				taken, msgs := desk.take("stop/1", EventStop, h.env.Now())
				require.NotNil(t, taken)
				require.Len(t, msgs, 1)
				if commitFirst {
					h.env.SignalWorkflow(SignalHookWords, committed(taken.Key))
				}
				// The desk's word is lost; the agent stops at once.
				h.env.SignalWorkflow(SignalHookWords, said(AgentEvent{Event: EventStop}))
				if !commitFirst {
					h.env.RegisterDelayedCallback(func() {
						h.env.SignalWorkflow(SignalHookWords, committed(taken.Key))
					}, 2*time.Second)
				}
			}, 3*time.Second)
			h.runFor(t, time.Minute)
			require.Empty(t, h.typed)
			require.True(t, h.results["intent/42/1#1"].OK)
			require.Contains(t, []string{EventStop, "hook"}, h.results["intent/42/1#1"].Via)
		})
	}
}

// Issue 32 (hole 4): a hook's commit through the desk (a hook-words signal) that arrives while
// the session is inside a pane capture, which a dying worker stretches past the offer's lease, is
// applied before the lease is looked at: what the hook printed is not typed again.
func TestDeskCommitReadBeforeTheLease(t *testing.T) {
	h := newSessionHarness(t)
	desk := newModelDesk()
	h.desk = desk
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	h.send(time.Second, SignalDeliver, message("1"))
	var taken *StandingTaken
	h.env.RegisterDelayedCallback(func() {
		var msgs []DeliveryRequest
		taken, msgs = desk.take("post-tool-use/toolu_1", EventPostToolUse, h.env.Now())
		require.NotNil(t, taken)
		require.Len(t, msgs, 1)
		h.env.SignalWorkflow(SignalHookWords, HookWords{Taken: []StandingTaken{*taken}})
	}, 3*time.Second)
	h.send(10*time.Second, SignalDeliver, message("2"))
	for _, at := range []time.Duration{12, 22, 29} {
		h.send(at*time.Second, SignalHookWords, said(AgentEvent{Event: EventPostToolUse, Detail: "Bash"}))
	}
	// The agent stops as the lease nears its end; the session reads the pane to type 2, and the
	// worker dies in the capture (retried after 1 s and 2 s), while the commit comes.
	h.send(31*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.captureFails = func(since time.Duration) bool { return since >= 31*time.Second && since < 34*time.Second }
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalHookWords, HookWords{Commits: []string{taken.Key}})
	}, 32*time.Second)
	h.runFor(t, time.Minute)
	for _, typed := range h.typed {
		require.NotContains(t, typed, "text 1", "message 1 was printed by the hook and typed again")
	}
	require.Len(t, h.typed, 1)
	require.Contains(t, h.typed[0], "text 2")
	require.Equal(t, EventPostToolUse, h.results["intent/42/1#1"].Via)
}

// Issue 32 (hole 5): the desk's word names what it handed the hook; a request the session had
// reserved beyond it (a retried task that asked for more under the same key) is the session's
// again, typed once, never counted delivered by the hook's commit.
func TestStandingTakenHoldsWhatTheDeskHandedOut(t *testing.T) {
	h := newSessionHarness(t)
	desk := newModelDesk()
	h.desk = desk
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	h.send(time.Second, SignalDeliver, message("1"))
	h.send(2*time.Second, SignalDeliver, message("2"))
	h.send(3*time.Second, SignalHookWords, said(AgentEvent{Event: EventPreToolUse, Detail: "Bash"}))
	h.env.RegisterDelayedCallback(func() {
		taken, msgs := desk.take("post-tool-use/toolu_1", EventPostToolUse, h.env.Now())
		require.NotNil(t, taken)
		require.Len(t, msgs, 2)
		// The desk had handed out only message 1 under this key.
		taken.IDs = []string{"intent/42/1#1"}
		h.env.SignalWorkflow(SignalHookWords, HookWords{Taken: []StandingTaken{*taken}})
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(SignalHookWords, HookWords{Commits: []string{taken.Key}})
		}, time.Second)
	}, 5*time.Second)
	h.send(10*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.runFor(t, time.Minute)
	require.Equal(t, EventPostToolUse, h.results["intent/42/1#1"].Via)
	require.Len(t, h.typed, 1, "message 2 was never printed: it is typed")
	require.Contains(t, h.typed[0], "text 2")
	require.NotContains(t, h.typed[0], "text 1")
	require.True(t, h.results["intent/42/2#1"].OK)
	require.Empty(t, h.results["intent/42/2#1"].Via)
}

// runFor runs a hook session for d.
func (h *sessionHarness) runFor(t *testing.T, d time.Duration) {
	h.runWith(t, d, SessionInput{Version: SessionVersion, Config: hookSession()})
}

// runWith runs a session started with in for d.
func (h *sessionHarness) runWith(t *testing.T, d time.Duration, in SessionInput) {
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, d)
	h.env.ExecuteWorkflow(SessionWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
}

// Issue 38 (SessionVersion 8): the session hands its desk what is unread in its agent's inbox:
// nothing when the agent has no inbox, then what the inbox tells, the latest only; a desk that
// could not be told is told again; the next run carries it and tells its desk at once.
func TestSessionTellsDeskWhatIsUnreadInItsInbox(t *testing.T) {
	h := newSessionHarness(t)
	desk := newModelDesk()
	h.desk = desk
	away := false
	desk.away = func() bool { return away }
	one := InboxUnread{Count: 1, First: []InboxMessage{{ID: "secretary#1", From: "boss", Type: "task", Content: "a"}}}
	two := InboxUnread{Count: 2, First: append(one.First, InboxMessage{ID: "secretary#2", From: "boss", Type: "task", Content: "b"})}
	h.send(time.Minute, SignalInboxUnread, one)
	h.env.RegisterDelayedCallback(func() { away = true }, 2*time.Minute)
	h.send(2*time.Minute+time.Second, SignalInboxUnread, two)
	h.env.RegisterDelayedCallback(func() { away = false }, 3*time.Minute)
	three := InboxUnread{Count: 3, First: append(two.First, InboxMessage{ID: "secretary#3", From: "boss", Type: "task", Content: "c"})}
	h.env.RegisterDelayedCallback(func() {
		// Told as the run is about to continue as new: the main loop takes the tells first.
		h.env.SignalWorkflow(SignalInboxUnread, InboxUnread{})
		h.env.SignalWorkflow(SignalInboxUnread, three)
		h.env.SetContinueAsNewSuggested(true)
		h.env.SignalWorkflow(SignalHookWords, said(AgentEvent{Event: EventStop})) // wakes the main loop
	}, 5*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, h.env.GetWorkflowError(), &can)
	var next SessionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, &three, next.Inbox, "the latest tell is carried")

	words := desk.inboxWords()
	var told []InboxUnread
	for _, r := range words {
		require.Equal(t, hookSession().Name, r.Session)
		told = append(told, r.Unread)
	}
	require.GreaterOrEqual(t, len(told), 3)
	require.Equal(t, []InboxUnread{{}, one, two}, told[:3], "no inbox, then each tell; the one the desk missed told again")
	for _, u := range told[3:] {
		// A tell the run had taken before it continued as new (the next run tells the latest).
		require.Contains(t, []InboxUnread{{}, three}, u)
	}
	for i := 1; i < len(words); i++ {
		require.False(t, words[i].At.Before(words[i-1].At), "told in order")
	}

	// The next run tells its desk what it carries, without asking the inbox.
	h = newSessionHarness(t)
	desk = newModelDesk()
	h.desk = desk
	desk.announce = func() error { t.Error("a run that knows asked the inbox"); return nil }
	h.runWith(t, time.Minute, SessionInput{Version: SessionVersion, Config: hookSession(), Inbox: &two})
	words = desk.inboxWords()
	require.Len(t, words, 1)
	require.Equal(t, two, words[0].Unread)
}

// A session whose agent has an inbox learns what is unread from the inbox's answer to its ask;
// until then its desk is told nothing (a Stop hook asks the server).
func TestSessionAsksItsInboxWhatIsUnread(t *testing.T) {
	h := newSessionHarness(t)
	desk := newModelDesk()
	h.desk = desk
	asked := 0
	desk.announce = func() error {
		asked++
		h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalInboxUnread, InboxUnread{Count: 3}) }, 30*time.Second)
		return nil
	}
	h.env.RegisterDelayedCallback(func() {
		require.Empty(t, desk.inboxWords(), "not told before the inbox answered")
	}, 20*time.Second)
	h.runFor(t, time.Minute)
	require.Equal(t, 1, asked)
	words := desk.inboxWords()
	require.Len(t, words, 1)
	require.Equal(t, 3, words[0].Unread.Count)

	// An ask that fails is made again.
	h = newSessionHarness(t)
	desk = newModelDesk()
	h.desk = desk
	asked = 0
	desk.announce = func() error {
		if asked++; asked == 1 {
			return errors.New("the server is away")
		}
		return &temporal.UnknownExternalWorkflowExecutionError{}
	}
	h.runFor(t, time.Minute)
	require.Equal(t, 2, asked)
	words = desk.inboxWords()
	require.Len(t, words, 1)
	require.Equal(t, InboxUnread{}, words[0].Unread)
}
