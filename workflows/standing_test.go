package workflows

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
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
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, d)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})
	require.True(t, h.env.IsWorkflowCompleted())
}
