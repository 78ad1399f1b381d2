package workflows

import (
	"slices"
	"time"
)

// sessionRepresentsAfterReset (SessionVersion 13, change ID represent-after-reset): a message a
// hook printed into the agent's context just before that context was reset (a compaction right
// after a tool call's hook printed, a /clear, the CLI's restart), whose commit came only after
// the reset, is presented again in the new context: typed or handed over once more, as a
// message. Before, the session start named it as one that follows (the session did not count it
// yet: it was in a hook's hands), and the late commit counted it in the context that ended, so
// the new context never got its text.
const sessionRepresentsAfterReset = 13

// NewContext reports whether a SessionStart of this source begins an empty context: the CLI's
// start, a /clear, a compaction (a resumed conversation holds what it held).
func NewContext(source string) bool {
	switch source {
	case "startup", "clear", SourceCompact:
		return true
	}
	return false
}

// ContextReset marks the open offers taken before at, whose commit has not come: the agent's
// context was reset then, and what their hooks printed, if they printed, went to the context
// that ended (presentAgain).
func (l *Ledger) ContextReset(at time.Time) {
	for _, offers := range [][]Offer{l.Offers, l.ExpiredOffers} { // a late commit reconciles the latter
		for i, o := range offers {
			if o.At.Before(at) && !slices.Contains(l.commits, o.Key) {
				offers[i].BeforeReset = true
			}
		}
	}
}

// had reports whether intent's message is in the agent's present context as far as the ledger
// knows: counted (or its hook's commit read), and not one a reset ended that is presented again.
func (l *Ledger) had(intent string) bool {
	req := DeliveryRequest{Kind: KindMessage, ReplyTo: intent}
	if l.presentsAgain(intent) {
		return false
	}
	if i := l.heldIn(req); i >= 0 {
		return slices.Contains(l.commits, l.Offers[i].Key) // printed, its commit read
	}
	return l.inContext(req) || l.committedUnsettled(req)
}

// presentsAgain reports whether intent's message waits to be presented again after a reset: an
// open offer taken before the reset holds it, or its request to be presented again is queued,
// held by a hook or being typed.
func (l *Ledger) presentsAgain(intent string) bool {
	again := func(r DeliveryRequest) bool { return r.Again && r.ReplyTo == intent }
	for _, o := range l.Offers {
		if slices.ContainsFunc(o.Requests, again) ||
			o.BeforeReset && slices.ContainsFunc(o.Requests, func(r DeliveryRequest) bool { return r.Kind == KindMessage && r.ReplyTo == intent }) {
			return true
		}
	}
	return slices.ContainsFunc(l.Queue, again) || slices.ContainsFunc(l.block, again)
}

// presentAgain queues again, for the agent's new context, the messages of an offer taken before
// a reset and committed after it (its hook printed them into the context that ended). An offer
// that is never committed goes back to the queue when its lease ends, and reaches the new context
// that way.
func (l *Ledger) presentAgain(o Offer) {
	if !o.BeforeReset {
		return
	}
	for _, r := range o.Requests {
		if r.Kind != KindMessage || l.withdrawn(r) || l.inContext(r) {
			continue // not a message; taken back; or typed into the new context meanwhile (its lease ended)
		}
		again := r
		again.ID, again.Again = r.ID+"/again", true
		l.enqueue(again)
	}
}
