package workflows

import "go.temporal.io/sdk/workflow"

// How the session applies its ledger (ledger.go): what arrives goes into it, and what it
// decides goes out (results, history, counts).

// admitAll admits reqs in order (a door's batch).
func (s *session) admitAll(reqs []DeliveryRequest) {
	for _, r := range reqs {
		s.Admit(r)
	}
}

// answerRepeats answers the requests for what is in the agent's context already: delivered,
// nothing typed or handed over again.
func (s *session) answerRepeats(ctx workflow.Context) {
	for reqs := s.Repeats(); len(reqs) > 0; reqs = s.Repeats() {
		results := make([]DeliveryResult, len(reqs))
		for i, r := range reqs {
			results[i] = s.result(ctx, r, nil)
		}
		s.tellResults(ctx, SignalDeliveryResult, reqs, results)
	}
}

// takeCommits takes every commit that has arrived, before any lease is looked at: a commit that
// reached the server in time counts, however late the worker reads it. A commit comes in a
// hook-words signal (or the taken signal of a hook of the build before), read here, so a commit
// that arrived while the session was inside an activity is applied before the lease it answers
// is looked at.
func (s *session) takeCommits(ctx workflow.Context) {
	for {
		var t TakenRequest
		if !s.takenCh.ReceiveAsync(&t) {
			break
		}
		s.Committed(t.Key)
	}
	for {
		var w HookWords
		if !s.wordsCh.ReceiveAsync(&w) {
			return
		}
		s.hear(ctx, w)
	}
}
