package workflows

// Exactly once (issue 24): one definition, in the session, of "this is in the agent's context",
// consulted by every path that hands a message to the agent (a hook's take, the typing, a door
// recovering after a crash, an intent asking again):
//
//   - in context: a hook committed it, or it was typed and confirmed. RecentlyDelivered holds
//     the keys (the intent for a message, the intent and tick for a reminder). A request for
//     something in context is answered from it at once and never handed over again.
//   - held: an open offer (a hook took it, has not committed yet) carries it. A request for it
//     waits with the offer and is answered by its commit; if the lease ends first, it goes back
//     to the queue with the offer's requests.
//   - a commit is applied before any lease is looked at (every commit that arrived is taken
//     first), and a commit that comes after its offer's lease ended is reconciled: the offer's
//     requests leave the queue and count as delivered, never dropped.

import (
	"slices"

	"go.temporal.io/sdk/workflow"
)

// maxExpiredOffers bounds SessionInput.ExpiredOffers.
const maxExpiredOffers = 50

// inContext reports whether what req hands over is in the agent's context already.
func (s *SessionInput) inContext(req DeliveryRequest) bool {
	key := req.typedKey()
	return key != "" && slices.Contains(s.RecentlyDelivered, key)
}

// heldIn is the index of the open offer that carries what req hands over, -1 if none.
func (s *SessionInput) heldIn(req DeliveryRequest) int {
	key := req.typedKey()
	if key == "" {
		return -1
	}
	for i, o := range s.Offers {
		for _, r := range o.Requests {
			if r.typedKey() == key {
				return i
			}
		}
	}
	return -1
}

// admit takes a request that arrived: answered from the context when it is in it, waiting with
// the offer that holds it, else queued.
func (s *session) admit(req DeliveryRequest) {
	switch i := s.heldIn(req); {
	case req.ReplyTo == "":
		s.Queue = append(s.Queue, req) // a context block has no intent: never a repeat
	case s.inContext(req):
		s.repeats = append(s.repeats, req)
	case i >= 0:
		s.Offers[i].Waiting = append(s.Offers[i].Waiting, req)
	default:
		s.enqueue(req)
	}
}

// admitAll admits reqs in order (a door's batch).
func (s *session) admitAll(reqs []DeliveryRequest) {
	for _, r := range reqs {
		s.admit(r)
	}
}

// answerRepeats answers the requests for what is in the agent's context already: delivered,
// nothing typed or handed over again.
func (s *session) answerRepeats(ctx workflow.Context) {
	for len(s.repeats) > 0 {
		reqs := s.repeats
		s.repeats = nil
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
		s.commits = append(s.commits, t.Key)
	}
	for {
		var w HookWords
		if !s.wordsCh.ReceiveAsync(&w) {
			return
		}
		s.hear(ctx, w)
	}
}

// lateCommitted takes the commits that have arrived and returns the typed keys of what those
// of offers whose lease had ended hold: printed, so in the agent's context, though their
// reconcile waits for the main loop.
func (s *session) lateCommitted(ctx workflow.Context) map[string]bool {
	s.takeCommits(ctx)
	keys := map[string]bool{}
	for _, c := range s.commits {
		for _, o := range s.ExpiredOffers {
			if o.Key != c {
				continue
			}
			for _, r := range o.Requests {
				if k := r.typedKey(); k != "" {
					keys[k] = true
				}
			}
		}
	}
	return keys
}

// expire moves an offer whose lease ended to ExpiredOffers (a late commit reconciles it) and
// returns the requests to queue again.
func (s *session) expire(o Offer) []DeliveryRequest {
	s.ExpiredOffers = append(s.ExpiredOffers, Offer{Key: o.Key, Event: o.Event, At: o.At, Requests: o.Requests})
	if n := len(s.ExpiredOffers); n > maxExpiredOffers {
		s.ExpiredOffers = append([]Offer(nil), s.ExpiredOffers[n-maxExpiredOffers:]...)
	}
	return append(slices.Clone(o.Requests), o.Waiting...)
}

// reconcile applies a commit whose offer's lease had ended: the hook did print it, so what is
// not in the agent's context yet leaves the queue (or the offer that took it again) and is
// committed now. What was typed meanwhile reached the agent twice; it is not counted again.
func (s *session) reconcile(ctx workflow.Context, key string) bool {
	i := slices.IndexFunc(s.ExpiredOffers, func(o Offer) bool { return o.Key == key })
	if i < 0 {
		return false
	}
	o := s.ExpiredOffers[i]
	s.ExpiredOffers = slices.Delete(slices.Clone(s.ExpiredOffers), i, i+1)
	var commit Offer
	commit.Key, commit.Event, commit.At = o.Key, o.Event, o.At
	if s.Standing != nil && slices.ContainsFunc(o.Requests, func(r DeliveryRequest) bool {
		return slices.ContainsFunc(s.Queue, func(q DeliveryRequest) bool { return s.reserved(q.ID) && q.typedKey() == r.typedKey() })
	}) {
		// What the late commit printed stands offered again: taken back first (or, when a
		// hook took it meanwhile, that hook's offer, left below as any other).
		s.withdrawStanding(ctx)
	}
	for _, r := range o.Requests {
		if s.inContext(r) {
			continue
		}
		key := r.typedKey()
		var rest []DeliveryRequest
		for _, q := range s.Queue {
			if key != "" && q.typedKey() == key {
				commit.Waiting = append(commit.Waiting, q)
				continue
			}
			rest = append(rest, q)
		}
		s.Queue = rest
		if j := s.heldIn(r); j >= 0 {
			other := &s.Offers[j]
			other.Requests = slices.DeleteFunc(slices.Clone(other.Requests), func(q DeliveryRequest) bool { return q.typedKey() == key })
			commit.Waiting = append(commit.Waiting, other.Waiting...)
			other.Waiting = nil
		}
		commit.Requests = append(commit.Requests, r)
	}
	workflow.GetLogger(ctx).Info("a commit after its lease ended, reconciled", "session", s.Config.Name, "key", key, "count", len(commit.Requests))
	s.commitOffer(ctx, commit)
	return true
}
