package workflows

// The person's edits and take-backs of a message the standing offer holds: the desk
// holds the text as first sent, and the next hook may take it from there in a millisecond,
// whatever the session is busy with (typing a block of 50 messages, awaiting its receipt). So
// the session takes the offer back from the desk as soon as the edit or take-back arrives, from
// a coroutine of its own that no activity of the main loop holds up, and the desk's atomic answer
// decides: withdrawn (no hook has it: the edit goes into the queue and is offered again, the
// taken-back message is dropped), or taken (a hook printed it first: the agent has it as first
// sent, the history says so, and the session's has-message answers true, so the door sends the
// edit as a correction).

import (
	"go.temporal.io/sdk/workflow"
)

// sessionEditsAtDesk (SessionVersion 13, change ID edits-reach-the-desk): an edit or take-back of
// a message the standing offer holds takes the offer back from the desk at once, also while a
// block is typed, and an edit waits in the ledger (Ledger.Edits) until the desk has said whether
// a hook took the offer: the queue takes it once the offer is withdrawn, and a hook that took
// the offer first printed the text first sent, which the history then records and the
// has-message query counts as the agent's (the door's correction follows). Before, the edit
// changed only the queue: while a block was typed nothing took the offer back, the receipt
// hook printed the message as first sent while the history recorded the edited text, the door
// was told the agent did not have it, and the person was told nothing; a take-back likewise
// reached the agent through that hook.
const sessionEditsAtDesk = 13

// listenTakeBacks reads the person's edits and take-backs as they arrive (sessionEditsAtDesk):
// each is recorded in the ledger, and a standing offer that holds what it changed is taken back
// from the desk at once. The main loop's waits do not read these channels; its drain does, for
// what arrives as the run continues as new, in a run without sessionSignalsReadOnce.
func (s *session) listenTakeBacks(ctx workflow.Context) {
	for {
		sel := workflow.NewSelector(ctx)
		s.receiveTakeBacks(ctx, sel, s.edited, s.takenBack)
		sel.Select(ctx)
		if ctx.Err() != nil {
			return
		}
	}
}

// receiveTakeBacks adds the person's edits and take-backs to sel, each applied by its handler:
// the listener's (edited, takenBack) or, in a run without it, the main loop's (replace,
// withdraw).
func (s *session) receiveTakeBacks(ctx workflow.Context, sel workflow.Selector, edit func(workflow.Context, ReplaceRequest), back func(workflow.Context, WithdrawRequest)) {
	sel.AddReceive(s.replaceCh, func(c workflow.ReceiveChannel, _ bool) {
		var r ReplaceRequest
		c.Receive(ctx, &r)
		edit(ctx, r)
	})
	sel.AddReceive(s.withdrawCh, func(c workflow.ReceiveChannel, _ bool) {
		var r WithdrawRequest
		c.Receive(ctx, &r)
		back(ctx, r)
	})
}

// edited takes an edit (replace) and, under sessionEditsAtDesk, withdraws a standing offer that
// holds the message's text as first sent.
func (s *session) edited(ctx workflow.Context, r ReplaceRequest) {
	s.replace(ctx, r)
	s.news = true
	s.retractStale(ctx)
}

// takenBack takes a take-back (withdraw) and, under sessionEditsAtDesk, withdraws a standing
// offer that names the message.
func (s *session) takenBack(ctx workflow.Context, r WithdrawRequest) {
	s.withdraw(ctx, r)
	s.news = true
	s.retractStale(ctx)
}

// retractStale takes the standing offer back from the desk when an edit or take-back made it
// stale (restand), once no offer is on its way to the desk (a withdrawal that overtook its
// publication would find no offer there), and wakes the main loop to offer again what is
// the session's again. restand stays set for the main loop's wait (waitUntilIdle).
func (s *session) retractStale(ctx workflow.Context) {
	if !s.editsAtDesk || !s.restand || s.Standing == nil {
		return
	}
	if err := workflow.Await(ctx, func() bool { return !s.publishing }); err != nil {
		return // cancelled
	}
	if s.withdrawStanding(ctx) {
		s.wakeCh.SendAsync(nil)
	}
}
