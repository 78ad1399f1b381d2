package workflows

import "go.temporal.io/sdk/workflow"

// sessionSignalsReadOnce (SessionVersion 13, change ID signals-read-once): each of the session's
// signal channels is read in one place, a listener that applies what arrives to the session's
// state at once and notes it (listenSignals; the person's edits and take-backs have a listener
// of their own, listenTakeBacks), and the main loop's waits await those notes (awaitNews)
// instead of reading the channels themselves. Before, seven channels were read both by drain and
// by waitForSignal, and what arrived while the main loop ran an activity waited there unread.
// The run continues as new only once every channel is empty (quiet).
const sessionSignalsReadOnce = 13

// listenSignals reads the session's signals (and its wake channel) as they arrive, applies each,
// and notes that something came (news) and whether from the agent's side (agentNews).
func (s *session) listenSignals(ctx workflow.Context) {
	for {
		var agent bool
		s.selectSignal(ctx, nil, &agent)
		if ctx.Err() != nil {
			return
		}
		s.news = true
		s.agentNews = s.agentNews || agent
	}
}

// awaitNews waits until a signal was applied since the last wait, or timer fires (nil: no
// timer); it reports whether one came from the agent's side.
func (s *session) awaitNews(ctx workflow.Context, timer workflow.Future) (agent bool) {
	if err := workflow.Await(ctx, func() bool { return s.news || s.agentNews || timer != nil && timer.IsReady() }); err != nil {
		return false // cancelled
	}
	agent = s.agentNews
	s.news, s.agentNews = false, false
	return agent
}

// quiet reports whether every signal that arrived has been read: a run continues as new only
// then (the next run's input must hold all of it).
func (s *session) quiet() bool {
	for _, ch := range []workflow.ReceiveChannel{s.deliverCh, s.deliverAll, s.configureCh, s.takenCh, s.wordsCh, s.replaceCh, s.withdrawCh} {
		if ch.Len() > 0 {
			return false
		}
	}
	return true
}
