package workflows

// Standing offers (issue 26): a hook's take answered on this machine, not by the session
// workflow. While the session waits for its agent (the hooks say it works, the pane is busy or
// shows no agent), it hands the worker's hook desk the messages a hook may take, before any
// hook asks: a standing offer. A hook takes it from the desk in about a millisecond, whatever
// the session is busy with; the desk tells the session (the standing-taken signal), and the
// hook's commit comes as any take's does (the taken signal, with the offer's key).
//
// Exactly once: the offered requests stay in the queue, in their place, but reserved: no take
// through the workflow and no typed block carries them. Before the session types, it withdraws
// the offer from the desk (an activity); the desk answers atomically either "withdrawn" (no
// hook can take it any more: the requests are the session's again) or "taken by this hook at
// this time" (the offer becomes an open offer with its lease from then, as a take through the
// workflow would have made it). A commit for the standing offer itself is its take too.

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names of the hook desk's protocol with the session.
const (
	// DeskPublishName is the activity that hands the desk a standing offer (DeskPublishRequest).
	DeskPublishName = "DeskPublish"
	// DeskWithdrawName is the activity that takes a standing offer back (DeskWithdrawRequest,
	// DeskWithdrawResult).
	DeskWithdrawName = "DeskWithdraw"
	// SignalHookWords carries what the desk passes on to a session, many words in one signal
	// (HookWords): its hooks' reports, which standing offers they took, their commits.
	SignalHookWords = "hook-words"
	// ErrTypeNoDesk is the desk activities' error when the worker runs no desk: the session
	// answers takes through the workflow only.
	ErrTypeNoDesk = "NoDesk"
)

// StandingOffer is the messages the desk may hand the next hook: the requests IDs name stay in
// the queue, reserved.
type StandingOffer struct {
	Key string   `json:"key"`
	IDs []string `json:"ids"`
}

// DeskPublishRequest hands the desk a standing offer for a session's hooks.
type DeskPublishRequest struct {
	Session  string            `json:"session"`
	Key      string            `json:"key"`
	Messages []DeliveryRequest `json:"messages"`
}

// DeskWithdrawRequest takes a standing offer back.
type DeskWithdrawRequest struct {
	Session string `json:"session"`
	Key     string `json:"key"`
}

// DeskWithdrawResult says what became of a standing offer: withdrawn (no hook has it), or taken.
type DeskWithdrawResult struct {
	Withdrawn bool           `json:"withdrawn,omitempty"`
	Taken     *StandingTaken `json:"taken,omitempty"`
}

// StandingTaken says which hook run took a standing offer, and when (its lease starts then).
type StandingTaken struct {
	Key   string    `json:"key"`
	Hook  string    `json:"hook"`
	Event string    `json:"event"`
	At    time.Time `json:"at"`
	// IDs are the requests the desk handed the hook under Key (the desk's word is the truth of
	// what was printed); empty from desks before issue 32: the session's own record holds.
	IDs []string `json:"ids,omitempty"`
}

// HookUnknown names the hook of a standing offer a desk was asked to withdraw and never saw.
const HookUnknown = "unknown"

// UnknownOfferTaken is a desk's answer to the withdrawal of a standing offer it never got
// (issue 38): the offer may be at another worker's desk, handed to a hook there, so it counts
// as taken now, with the usual lease. Its messages then reach the agent once, late (the lease's
// end, or the commit of the hook that has them), never twice.
func UnknownOfferTaken(key string, now time.Time) DeskWithdrawResult {
	return DeskWithdrawResult{Taken: &StandingTaken{Key: key, Hook: HookUnknown, Event: HookUnknown, At: now}}
}

// HookWords is what the desk passes on to a session at once: its hooks' reports, the standing
// offers they took and their commits (each list in the order it came).
type HookWords struct {
	Events  []AgentEvent    `json:"events,omitempty"`
	Taken   []StandingTaken `json:"taken,omitempty"`
	Commits []string        `json:"commits,omitempty"`
	// Contexts are blocks hooks printed that no take handed over (KindContext), for the
	// session's history.
	Contexts []DeliveryRequest `json:"contexts,omitempty"`
}

// hear takes the desk's words: the reports first (the agent's state is published once, as the
// last report leaves it), then what hooks took, then their commits (settled by the main loop).
func (s *session) hear(ctx workflow.Context, w HookWords) {
	if len(w.Events) > 0 {
		before := ""
		if s.Agent != nil {
			before = s.Agent.State
		}
		for _, ev := range w.Events {
			s.noteEventQuietly(ctx, ev)
		}
		if s.Agent != nil && s.Agent.State != before {
			s.publishAgentState(ctx)
		}
	}
	for _, t := range w.Taken {
		s.standingTaken(ctx, t)
	}
	s.Committed(w.Commits...)
	for _, c := range w.Contexts {
		if c.Kind == KindContext && c.ReplyTo == "" {
			s.Admit(c)
		}
	}
}

// errNoDesk is what a worker without a desk answers the desk activities.
var errNoDesk = temporal.NewNonRetryableApplicationError("this worker runs no hook desk", ErrTypeNoDesk, nil)

// NoDeskPublish answers DeskPublishName on a worker without a desk.
func NoDeskPublish(context.Context, DeskPublishRequest) error { return errNoDesk }

// NoDeskWithdraw answers DeskWithdrawName on a worker without a desk.
func NoDeskWithdraw(context.Context, DeskWithdrawRequest) (DeskWithdrawResult, error) {
	return DeskWithdrawResult{}, errNoDesk
}

// deskActivityOptions reach the desk in the worker's own process, as local activities (no
// round trip to the server; the desk's calls are idempotent, so running one again is safe):
// quick, a few tries.
var deskActivityOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: 5 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 2 * time.Second,
		MaximumAttempts: 4, NonRetryableErrorTypes: []string{ErrTypeNoDesk},
	},
}

// deskPublishOptions hand the desk a standing offer by an activity: it runs only once the workflow task that scheduled it has completed, so what a key holds is fixed in
// the history before any hook can take it. The desk's Publish is idempotent per key.
var deskPublishOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 2 * time.Second,
		MaximumAttempts: 4, NonRetryableErrorTypes: []string{ErrTypeNoDesk},
	},
}

// standOffer hands the desk what a hook may take while the session waits for its agent, as a
// take would choose it (offerable), unless the offer that stands holds it already.
// An offer that stands while more has arrived is taken back and made again with it (when no
// hook took it meanwhile).
func (s *session) standOffer(ctx workflow.Context) {
	if s.deskOff || s.stopping {
		return // no desk; or the person's /stop looks at the screen (sessionStopHoldsTyping)
	}
	msgs := s.Offerable()
	// An edit held for the desk's word makes the offer stale too (a run continued as new
	// carries the edit, not staleStanding).
	stale := s.staleStanding || len(s.Edits) > 0
	if len(msgs) == 0 || (s.Standing != nil && len(msgs) == len(s.Standing.IDs) && !stale) {
		return
	}
	s.staleStanding = false
	if s.Standing != nil {
		if !s.withdrawStanding(ctx) || s.Standing != nil {
			return
		}
		if msgs = s.Offerable(); len(msgs) == 0 {
			return // a hook took it meanwhile: its offer holds them
		}
	}
	// Reserved before it is out: whatever the activity's fate, nothing types them until the
	// desk has said what became of the offer.
	offer := s.Stand(msgs, workflow.GetInfo(ctx).WorkflowExecution.RunID)
	req := DeskPublishRequest{Session: s.Config.Name, Key: offer.Key, Messages: msgs}
	s.publishing = true
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, deskPublishOptions), DeskPublishName, req).Get(ctx, nil)
	s.publishing = false
	if err == nil {
		return
	}
	if appErr, ok := asApplicationError(err); ok && appErr.Type() == ErrTypeNoDesk {
		s.deskOff = true
		s.StandingWithdrawn()
		return
	}
	workflow.GetLogger(ctx).Warn("standing offer not handed to the desk; taking it back", "session", s.Config.Name, "key", offer.Key, "error", err)
	s.withdrawStanding(ctx)
}

// withdrawStanding takes the standing offer back before the session types: its requests are the
// session's again, or, when a hook took it, they are that hook's open offer. It reports whether
// no offer stands any more (false: the desk could not be asked, nothing may be typed yet).
func (s *session) withdrawStanding(ctx workflow.Context) bool {
	if s.Standing == nil {
		return true
	}
	key := s.Standing.Key
	var res DeskWithdrawResult
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, deskActivityOptions), DeskWithdrawName,
		DeskWithdrawRequest{Session: s.Config.Name, Key: key}).Get(ctx, &res)
	if s.Standing == nil || s.Standing.Key != key {
		return s.Standing == nil // the desk's signal said meanwhile that a hook took it
	}
	switch appErr, _ := asApplicationError(err); {
	case err != nil && appErr != nil && appErr.Type() == ErrTypeNoDesk:
		// No desk runs now: this offer was never out (the desk that got it keeps a journal and
		// would answer), so the requests are the session's.
		s.deskOff = true
		s.StandingWithdrawn()
	case err != nil:
		workflow.GetLogger(ctx).Warn("standing offer not taken back; nothing typed until it is", "session", s.Config.Name, "key", key, "error", err)
		return false
	case res.Taken != nil:
		s.standingTaken(ctx, *res.Taken)
	default:
		s.StandingWithdrawn()
	}
	return true
}

// standingTaken makes the standing offer a hook took an open offer (Ledger.StandingTaken).
func (s *session) standingTaken(ctx workflow.Context, t StandingTaken) {
	o := s.StandingTaken(t, workflow.Now(ctx))
	if o == nil {
		return // told before (the desk's signal and its answer to a withdrawal)
	}
	s.stopBlocked(ctx, t.Event)
	workflow.GetLogger(ctx).Info("standing offer taken by a hook", "session", s.Config.Name, "hook", t.Event, "key", t.Key, "take", t.Hook, "count", len(o.Requests))
}
