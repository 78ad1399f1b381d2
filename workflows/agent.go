package workflows

// The agent's own signals (issue 10): intentq's Claude Code hooks report to the session as they
// fire, and hand the agent waiting messages at its turn boundaries. A hook takes the waiting
// messages with the take update (an offer), prints them for the agent, then commits the offer
// with the taken signal; only the commit counts a message delivered, and an offer no hook
// commits within policy.OfferLease goes back to the queue. Keystrokes are only for waking an
// idle agent.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/hookapi"
	"github.com/intentq/intentq/internal/policy"
)

// Names of the hook protocol.
const (
	// UpdateTake hands the waiting messages to a hook with no desk answering (TakeRequest,
	// TakeResult); everything else a hook says goes in SignalHookWords.
	UpdateTake = "take"
	// SignalTaken is how hooks of the build before committed a take with no desk answering
	// (TakenRequest); hooks of this build commit in SignalHookWords. Sessions drain it for one
	// release (a hook of the old build may be between its print and its commit during the
	// upgrade), then it goes.
	SignalTaken = "taken"
)

// Hook events, as the starter's `hook` command names them.
const (
	EventSessionStart     = hookapi.EventSessionStart
	EventUserPromptSubmit = hookapi.EventUserPromptSubmit
	EventPreToolUse       = hookapi.EventPreToolUse
	EventPostToolUse      = hookapi.EventPostToolUse
	EventStop             = hookapi.EventStop
	EventNotification     = hookapi.EventNotification
	EventSessionEnd       = hookapi.EventSessionEnd
)

// The hook protocol's types (package hookapi, which the hook binary reads without the SDK).
type (
	// AgentEvent is one hook's report.
	AgentEvent = hookapi.AgentEvent
	// TakeRequest asks the session for the messages waiting for the agent.
	TakeRequest = hookapi.TakeRequest
	// TakeResult is what a hook prints for the agent.
	TakeResult = hookapi.TakeResult
)

// SessionEndClear is the reason of the SessionEnd that a /clear fires (a new context follows at
// once: the agent does not go).
const SessionEndClear = "clear"

// Agent states, from its hooks.
const (
	// AgentWorking: a turn runs (a prompt was submitted, a tool is used).
	AgentWorking = "working"
	// AgentIdle: the turn ended (Stop), or a new context waits for a prompt.
	AgentIdle = "idle"
	// AgentWaiting: the agent waits for the person (a permission prompt is open).
	AgentWaiting = "waiting"
	// AgentGone: the agent's CLI ended (its SessionEnd hook): nothing is typed until an agent
	// starts there again.
	AgentGone = "gone"
)

// AgentState is what the agent's hooks last said.
type AgentState struct {
	State string `json:"state"`
	// Since is when State began; At when the last hook fired, Event which one.
	Since  time.Time `json:"since"`
	At     time.Time `json:"at"`
	Event  string    `json:"event"`
	Detail string    `json:"detail,omitempty"`
}

// SourceCompact is a session start's source when the CLI compacted its context (Claude Code's
// SessionStart source "compact").
const SourceCompact = "compact"

// StateAfter is the state an event leaves the agent in; "" when it says nothing about it.
func StateAfter(event, detail string) string {
	switch event {
	case EventUserPromptSubmit, EventPreToolUse, EventPostToolUse:
		return AgentWorking
	case EventStop, EventSessionStart:
		return AgentIdle
	case EventPermissionRequest:
		return AgentWaiting
	case EventSessionEnd:
		if detail != SessionEndClear {
			return AgentGone
		}
	case EventNotification:
		switch detail {
		case "permission_prompt", "elicitation_dialog":
			return AgentWaiting
		case "idle_prompt":
			return AgentIdle
		}
	}
	return ""
}

// TakenRequest commits a take once the hook has printed it.
type TakenRequest struct {
	Key string `json:"key"`
}

// Offer is a take not yet committed.
type Offer struct {
	Key      string            `json:"key"`
	Event    string            `json:"event"`
	At       time.Time         `json:"at"`
	Requests []DeliveryRequest `json:"requests"`
	// Waiting are requests for what the offer holds that arrived meanwhile (an intent asking
	// again): its commit answers them too.
	Waiting []DeliveryRequest `json:"waiting,omitempty"`
	// BeforeReset: the agent's context was reset after this offer was taken and before its
	// commit came (sessionRepresentsAfterReset): what it printed went to the context that ended.
	BeforeReset bool `json:"before_reset,omitempty"`
}

// validateTake refuses a take without a key, from an unknown hook, or past its deadline.
func (s *session) validateTake(ctx workflow.Context, req TakeRequest) error {
	switch {
	case req.Key == "":
		return errors.New("take: no key")
	case req.Event != EventPostToolUse && req.Event != EventStop && req.Event != EventUserPromptSubmit && req.Event != EventSessionStart:
		return fmt.Errorf("take: hook %q does not deliver", req.Event)
	case !req.Deadline.IsZero() && workflow.Now(ctx).After(req.Deadline):
		return fmt.Errorf("take %s: past its deadline %s", req.Key, req.Deadline.Format(time.RFC3339Nano))
	}
	return nil
}

// take hands the hook the waiting messages and reminders (not the one being typed), oldest
// first, as an offer: as many as one typed block holds (policy.MaxBatch, MaxBatchBytes), the
// rest wait for the next hook or typing. The take is also the hook's report of its event.
func (s *session) take(ctx workflow.Context, req TakeRequest) (TakeResult, error) {
	s.noteEvent(ctx, AgentEvent{Event: req.Event, At: workflow.Now(ctx), Detail: req.Detail, Receipt: req.Receipt})
	s.wakeCh.SendAsync(true) // the main loop may wait for this request or a receipt
	res := TakeResult{Key: req.Key}
	if s.TookBefore(req.Key) {
		return res, nil
	}
	if now := workflow.Now(ctx); req.RemindEvery > 0 && (s.LastHookRemindAt == nil || now.Sub(*s.LastHookRemindAt) >= req.RemindEvery) {
		s.LastHookRemindAt, res.RemindDue = &now, true
	}
	if req.RemindOnly {
		return res, nil
	}
	// Every commit that has arrived is read first: what a late one printed is in the agent's
	// context, though the main loop has not settled it yet.
	s.takeCommits(ctx)
	msgs := s.Take(req.Key, req.Event, workflow.Now(ctx))
	if len(msgs) == 0 {
		return res, nil
	}
	res.Messages = msgs
	s.stopBlocked(ctx, req.Event)
	workflow.GetLogger(ctx).Info("messages taken by a hook", "session", s.Config.Name, "hook", req.Event, "key", req.Key, "count", len(res.Messages))
	return res, nil
}

// stopBlocked: a Stop hook that hands messages over blocks the stop, so the turn goes on.
func (s *session) stopBlocked(ctx workflow.Context, event string) {
	if event == EventStop && s.Agent != nil {
		s.Agent.State, s.Agent.Since = AgentWorking, workflow.Now(ctx)
	}
}

// noteEvent keeps the agent's state and the receipts of typed deliveries.
func (s *session) noteEvent(ctx workflow.Context, ev AgentEvent) {
	if s.noteEventQuietly(ctx, ev) {
		s.publishAgentState(ctx)
	}
}

// publishAgentState sets the agent's state as a search attribute.
func (s *session) publishAgentState(ctx workflow.Context) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, AgentStateKey.ValueSet(s.Agent.State)); err != nil {
		workflow.GetLogger(ctx).Warn("agent state not published", "session", s.Config.Name, "error", err)
	}
}

// noteEventQuietly is noteEvent without publishing the state; it reports whether the state
// changed.
func (s *session) noteEventQuietly(ctx workflow.Context, ev AgentEvent) (changed bool) {
	if ev.At.IsZero() {
		ev.At = workflow.Now(ctx)
	}
	if ev.Event == EventSessionStart {
		s.sessionStarts++
		if s.representsAfterReset && NewContext(ev.Detail) {
			s.Ledger.ContextReset(ev.At)
		}
	}
	if s.followsApprovals {
		s.followApproval(ctx, ev)
	}
	s.receipts = append(s.receipts, ev.Receipt...)
	if n := len(s.receipts); n > maxReceipts {
		s.receipts = append([]string(nil), s.receipts[n-maxReceipts:]...)
	}
	state := StateAfter(ev.Event, ev.Detail)
	if ev.Event == EventSessionStart && ev.Detail == SourceCompact {
		// Claude Code compacts in the middle of a turn too, and the turn goes on: the state
		// stays what the agent's other hooks said.
		state = ""
	}
	if s.Agent == nil {
		s.Agent = &AgentState{}
	}
	prev := s.Agent.State
	s.Agent.At, s.Agent.Event, s.Agent.Detail = ev.At, ev.Event, ev.Detail
	if state == "" || state == prev {
		return false
	}
	s.Agent.State, s.Agent.Since = state, ev.At
	if state == AgentGone && s.noAgentWaits {
		s.alertNoAgent(ctx, "it exited ("+policy.Or(ev.Detail, "no reason given")+")")
	} else if prev == AgentGone {
		s.toldNoAgent = false
	}
	return true
}

// followApproval keeps the approval a permission request names, and passes the agent's next
// hook that shows the terminal went on (a tool used, a turn's end or start, the agent's start or
// end, another permission asked) to it: its card then says the terminal answered first. The
// signal is not waited for: an approval the phone answered has ended, and needs nothing.
func (s *session) followApproval(ctx workflow.Context, ev AgentEvent) {
	switch ev.Event {
	case EventPermissionRequest, EventPostToolUse, EventStop, EventUserPromptSubmit, EventSessionStart, EventSessionEnd:
	default:
		return
	}
	if s.Approval != "" {
		workflow.SignalExternalWorkflow(ctx, s.Approval, "", SignalFollowed, ApprovalFollow{Event: ev.Event, Tool: ev.Detail, At: ev.At})
		s.Approval = ""
	}
	if ev.Event == EventPermissionRequest && strings.HasPrefix(ev.Detail, ApprovalIDPrefix) {
		s.Approval = ev.Detail
	}
}

// receipted reports (and forgets) a receipt for intent id.
func (s *session) receipted(id string) bool {
	for i, r := range s.receipts {
		if r == id {
			s.receipts = append(s.receipts[:i:i], s.receipts[i+1:]...)
			return true
		}
	}
	return false
}

// agentBusy reports whether the agent's hooks say it must not be typed into now: a turn runs,
// or a permission prompt waits for the person. A state older than policy.HookStale is not
// trusted alone (an interrupted turn fires no Stop): the screen decides then.
func (s *session) agentBusy(now time.Time) (string, bool) {
	if s.Agent == nil || now.Sub(s.Agent.At) >= policy.HookStale {
		return "", false
	}
	switch s.Agent.State {
	case AgentGone:
		if s.noAgentWaits {
			return noAgentPattern + ": it exited", true // until its hooks or the screen say it is back
		}
	case AgentWorking:
		return "the agent is working (hook " + s.Agent.Event + ")", true
	case AgentWaiting:
		return "dialog: the agent waits for your answer (" + s.Agent.Detail + ")", true
	}
	return "", false
}

// settleOffers commits the offers hooks have committed (history, counts, the intents told),
// then puts the offers no hook committed in time back at the head of the queue, in order.
func (s *session) settleOffers(ctx workflow.Context) {
	s.takeCommits(ctx)
	for {
		st := s.Settle(workflow.Now(ctx))
		for _, t := range st.Standing {
			workflow.GetLogger(ctx).Info("standing offer taken by a hook", "session", s.Config.Name, "hook", t.Event, "key", t.Key)
		}
		for _, c := range st.Commits {
			if c.Reconciled {
				workflow.GetLogger(ctx).Info("a commit after its lease ended, reconciled", "session", s.Config.Name, "key", c.Offer.Key, "count", len(c.Offer.Requests))
			}
			s.commitOffer(ctx, c)
		}
		for _, o := range st.Expired {
			workflow.GetLogger(ctx).Warn("a hook took messages and never committed them; queued again", "session", s.Config.Name, "key", o.Key, "count", len(o.Requests))
		}
		// A late commit printed what the standing offer holds: taken back first (or, when a
		// hook took it meanwhile, that hook's offer), then settled again. While the desk
		// cannot be asked, the commit waits (a take still sees what it printed).
		if !st.Withdraw || !s.withdrawStanding(ctx) || s.Standing != nil {
			return
		}
	}
}

// commitOffer applies a committed offer: what entered the agent's context with it in one
// history write and counted, and every intent it answers told together (an offer of 50 messages
// committed one message at a time, a write, then a signal, each waited for, held the session's
// typing for seconds), or held with a typed block's results while more waits (holdResults).
func (s *session) commitOffer(ctx workflow.Context, c Commit) {
	if len(c.Fresh) > 0 {
		if err := s.appendToHistory(ctx, c.Fresh, func(text string) string { return text }); err != nil {
			workflow.GetLogger(ctx).Warn("hook delivery not committed to history", "session", s.Config.Name, "take", c.Offer.Key, "error", err)
		}
	}
	for _, req := range c.Fresh {
		s.Delivered++
		count(ctx, metricDeliveries, map[string]string{"session": s.Config.Name, "kind": req.Kind, "ok": "true"}, 1)
	}
	results := make([]DeliveryResult, len(c.Answer))
	for i, req := range c.Answer {
		results[i] = DeliveryResult{ID: req.ID, Kind: req.Kind, OK: true, At: workflow.Now(ctx), Via: c.Offer.Event}
	}
	s.holdResults(ctx, c.Answer, results)
}

// leaseTimer fires when the oldest offer's lease ends; nil without offers.
func (s *session) leaseTimer(ctx workflow.Context) workflow.Future {
	if len(s.Offers) == 0 {
		return nil
	}
	wait := s.Offers[0].At.Add(policy.OfferLease).Sub(workflow.Now(ctx))
	return workflow.NewTimer(ctx, max(wait, time.Millisecond))
}

// errTaken ends a typed delivery whose request a hook took meanwhile: the hook's commit
// answers the intent.
var errTaken = errors.New("taken by a hook")
