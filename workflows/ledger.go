package workflows

// The session's exactly-once ledger (issue 24, made a plain type in issue 34): one definition of
// "this is in the agent's context", consulted by every path that hands a message to the agent
// (a hook's take, a standing offer at the desk, the typing, a door recovering after a crash, an
// intent asking again):
//
//   - in context: a hook committed it, or it was typed and confirmed. RecentlyDelivered holds
//     the keys (the intent for a message, the intent and tick for a reminder). A request for
//     something in context is answered from it at once and never handed over again.
//   - held: an open offer (a hook took it, has not committed yet) carries it. A request for it
//     waits with the offer and is answered by its commit; if the lease ends first, it goes back
//     to the queue with the offer's requests.
//   - reserved: a standing offer at the desk names it; it stays queued in its place, but no
//     take and no typed block carries it until the desk has said what became of the offer.
//   - a commit is applied before any lease is looked at (every commit that arrived is read
//     first), and a commit that comes after its offer's lease ended is reconciled: the offer's
//     requests leave the queue and count as delivered, never dropped.
//
// The Ledger keeps those rules and nothing else: no workflow.Context, no timers, no activities.
// The session workflow reads its signals into it, performs what it returns (history writes,
// results to the intents, the desk's activities) and keeps the clock; the checker drives it
// directly (ledger_checker_test.go).

import (
	"fmt"
	"slices"
	"time"

	"github.com/intentq/intentq/internal/policy"
)

// Ledger is a session's exactly-once bookkeeping. Its exported fields travel in SessionInput
// (continue-as-new); the rest lives for one run, and the session settles it before it
// continues as new (commits applied, repeats answered).
type Ledger struct {
	// Queue holds requests not yet delivered, in order.
	Queue []DeliveryRequest `json:"queue,omitempty"`
	// RecentlyDelivered holds what reached the agent lately (newest last, at most
	// recentDelivered): the intents whose message did, and reminders by intent and tick. A
	// request for one of them again (an intent that asked again after its wait timed out, a door
	// recovering after a crash) is answered without handing it over twice.
	RecentlyDelivered []string `json:"recently_delivered,omitempty"`
	// Offers are messages hooks took and have not committed yet; TakeKeys the latest takes'
	// keys (a hook that runs twice takes once).
	Offers   []Offer  `json:"offers,omitempty"`
	TakeKeys []string `json:"take_keys,omitempty"`
	// ExpiredOffers are the latest offers whose lease ended before their commit came: a late
	// commit is reconciled against them.
	ExpiredOffers []Offer `json:"expired_offers,omitempty"`
	// Standing is the offer the worker's hook desk holds for the next hook (its requests stay
	// queued, reserved); StandingEpoch and StandingSeq name each offer uniquely (the chain's
	// first run that made one, a count).
	Standing      *StandingOffer `json:"standing,omitempty"`
	StandingEpoch string         `json:"standing_epoch,omitempty"`
	StandingSeq   int64          `json:"standing_seq,omitempty"`
	// Withdrawn are the intents the person took back (ignored, cancelled) before they reached
	// the agent, newest last (at most recentDelivered): nothing hands them over afterwards.
	Withdrawn []string `json:"withdrawn,omitempty"`
	// Edits are the person's edits of messages the standing offer reserves, or a hook took and
	// has not committed (newest text per intent): the desk holds the text first sent, so the
	// edit waits for the desk's word. Once it is withdrawn the queue takes the edit (offered or
	// typed in it); once a hook took it, the edit waits for that hook: its commit says it
	// printed the text first sent, which the agent has and the history records, and the edit is
	// dropped (the agent has the message: the door sends it as a correction); its lease ending
	// without a commit puts the message back in the queue, edited (the hook printed nothing).
	Edits []Edit `json:"edits,omitempty"`
	// EarlyEdits are edits read before the request of their message (newest text per intent, at
	// most maxEarlyEdits): the edit and the take-back have a reader of their own, which may
	// read an edit while the intent's request sent before it still waits in its channel. The
	// request takes the edit when it is admitted. (The edit of a message the session never gets,
	// or has answered already, stays until newer ones push it out.)
	EarlyEdits []Edit `json:"early_edits,omitempty"`

	// commits are the keys of offers hooks have committed, not yet settled; repeats requests
	// for what is in the agent's context already, not yet answered; typing the request being
	// typed (no take hands it over).
	commits []string
	repeats []DeliveryRequest
	typing  string
	// block is the typed block in flight (from NextBatch to Typed); blockWaiting the requests
	// for what it carries that arrived meanwhile (an intent whose wait timed out while its
	// block was typed): the block's outcome answers them, and no take hands them over.
	block        []DeliveryRequest
	blockWaiting []DeliveryRequest
	// queueWhileTyping: such requests are queued as any other (runs before SessionVersion 3,
	// rule typing-holds-repeats), so a hook could print what was being typed.
	queueWhileTyping bool
	// reconcileTakesAllWaiting: a late commit that reconciles a request another open offer took
	// again answers everything waiting for that offer, not only what waits for the request
	// (runs before SessionVersion 5, rule reconcile-keeps-other-waits): a request for a message
	// no hook printed was answered delivered (found by the ledger checker, seed 141039).
	reconcileTakesAllWaiting bool
	// offerLateCommitted: the standing offer may carry what a late commit a take read (not yet
	// settled) printed (runs before SessionVersion 5, rule offer-skips-late-commits): a hook
	// took it from the desk and printed it again (found by the ledger checker, seed 47892 with
	// withdrawals).
	offerLateCommitted bool
	// sameByIntent: enqueue takes a request for the same intent and kind as one waiting for the
	// same thing (runs before SessionVersion 5, rule enqueue-by-typed-key).
	sameByIntent bool
	// reminderBesideMessage: a hook's take and the standing offer hand over a reminder beside
	// the message it reminds of (runs before SessionVersion 5, rule reminder-not-beside-message):
	// the agent read the message and its reminder together.
	reminderBesideMessage bool
	// editsReservedAtOnce: an edit of a message the standing offer reserves changes the queue's
	// text at once (runs before SessionVersion 13, rule edits-reach-the-desk): a hook that took
	// the offer printed the text first sent while the history recorded the edited one.
	editsReservedAtOnce bool
	// keepEmptyExpired: an offer whose lease ended with nothing left to queue again stays open
	// (runs before SessionVersion 4, rule drop-empty-expired-offers): its lease timer then fired
	// at once, again and again (an offer a late commit had emptied).
	keepEmptyExpired bool
}

// recentDelivered bounds Ledger.RecentlyDelivered.
const recentDelivered = 2000

// recentTakeKeys bounds Ledger.TakeKeys.
const recentTakeKeys = 500

// maxExpiredOffers bounds Ledger.ExpiredOffers.
const maxExpiredOffers = 50

// inContext reports whether what req hands over is in the agent's context already.
func (l *Ledger) inContext(req DeliveryRequest) bool {
	key := req.TypedKey()
	return key != "" && slices.Contains(l.RecentlyDelivered, key)
}

// remember records that what req hands over reached the agent.
func (l *Ledger) remember(req DeliveryRequest) {
	key := req.TypedKey()
	if key == "" {
		return
	}
	l.RecentlyDelivered = append(l.RecentlyDelivered, key)
	if n := len(l.RecentlyDelivered); n > recentDelivered {
		l.RecentlyDelivered = append([]string(nil), l.RecentlyDelivered[n-recentDelivered:]...)
	}
}

// heldIn is the index of the open offer that carries what req hands over, -1 if none.
func (l *Ledger) heldIn(req DeliveryRequest) int {
	key := req.TypedKey()
	if key == "" {
		return -1
	}
	for i, o := range l.Offers {
		for _, r := range o.Requests {
			if r.TypedKey() == key {
				return i
			}
		}
	}
	return -1
}

// reserved reports whether request id is in the standing offer.
func (l *Ledger) reserved(id string) bool {
	return l.Standing != nil && slices.Contains(l.Standing.IDs, id)
}

// queued reports whether request id still waits in the queue.
func (l *Ledger) queued(id string) bool {
	return slices.ContainsFunc(l.Queue, func(q DeliveryRequest) bool { return q.ID == id })
}

// dequeue removes request id from the queue (a hook may have taken others meanwhile).
func (l *Ledger) dequeue(id string) {
	if i := slices.IndexFunc(l.Queue, func(q DeliveryRequest) bool { return q.ID == id }); i >= 0 {
		l.Queue = append(l.Queue[:i:i], l.Queue[i+1:]...)
	}
}

// enqueue adds a request unless the same thing already waits (an intent that timed out in a
// long queue and asked again): the waiting one answers both. The same thing is what the request
// hands over (its typedKey: the message, or the reminder's tick), else the intent and kind.
// Before SessionVersion 5 (rule enqueue-by-typed-key) it was always the intent and kind, so a
// reminder requeued after its offer's lease ended dropped a later tick of the same intent that
// waited reserved by the standing offer: the desk handed it out, its commit found no offer, and
// the tick was typed again when its intent asked again (found by the ledger checker, seed 33335).
func (l *Ledger) enqueue(req DeliveryRequest) {
	key := req.TypedKey()
	for _, q := range l.Queue {
		if l.sameByIntent || key == "" {
			if q.ReplyTo == req.ReplyTo && q.Kind == req.Kind {
				return
			}
		} else if q.TypedKey() == key {
			return
		}
	}
	l.Queue = append(l.Queue, req)
}

// queueBytes is about how large the queue is as a payload.
func (l *Ledger) queueBytes() int {
	n := 0
	for _, r := range l.Queue {
		n += len(r.Text) + len(r.ID) + len(r.ReplyTo) + 100
	}
	return n
}

// inBlock reports whether the typed block in flight carries what req hands over.
func (l *Ledger) inBlock(req DeliveryRequest) bool {
	key := req.TypedKey()
	return key != "" && slices.ContainsFunc(l.block, func(b DeliveryRequest) bool { return b.TypedKey() == key })
}

// Withdraw takes intent back (the person ignored or cancelled it): its requests leave the queue
// and none is admitted again. One the standing offer names stays queued until the desk has
// said what became of the offer (standing: the session must withdraw it now; a hook that took
// it first delivered it). What a hook holds or the agent has is not taken back.
func (l *Ledger) Withdraw(intent string) (standing bool) {
	if !slices.Contains(l.Withdrawn, intent) {
		l.Withdrawn = append(l.Withdrawn, intent)
		if n := len(l.Withdrawn); n > recentDelivered {
			l.Withdrawn = append([]string(nil), l.Withdrawn[n-recentDelivered:]...)
		}
	}
	l.dropWithdrawn()
	return l.Standing != nil && slices.ContainsFunc(l.Queue, func(q DeliveryRequest) bool { return l.withdrawn(q) })
}

// Edit is the person's edit of a message the standing offer reserves, waiting for the desk's
// word (Ledger.Edits).
type Edit struct {
	Intent string `json:"intent"`
	Text   string `json:"text"`
}

// Replace puts text in place of intent's waiting message (the person edited it before it
// reached the agent). It reports whether the message still waited here, and whether the
// standing offer names it (the desk holds the old text: it must be withdrawn, and offered
// again). The edit of a reserved message waits in Edits until the desk has said what became
// of the offer (StandingWithdrawn, StandingTaken): a hook may have printed the text first sent.
// So does the edit of a message a hook took and has not committed: its commit drops the edit
// (the hook printed the text first sent), its lease ending puts the message back edited (before,
// the edit was dropped at once, and a hook that died before printing left the message to be
// typed as first sent: found by the ledger checker with the person's hand, regression seeds
// 334 and 24129).
func (l *Ledger) Replace(intent, text string) (replaced, standing bool) {
	for i, q := range l.Queue {
		if q.Kind != KindMessage || q.ReplyTo != intent {
			continue
		}
		replaced = true
		if l.reserved(q.ID) {
			standing = true
			if !l.editsReservedAtOnce {
				l.holdEdit(intent, text)
				continue
			}
		}
		l.Queue[i].Text = text
	}
	if replaced || l.editsReservedAtOnce {
		return replaced, standing
	}
	switch req := (DeliveryRequest{Kind: KindMessage, ReplyTo: intent}); {
	case l.heldIn(req) >= 0 && !l.inContext(req):
		l.holdEdit(intent, text)
	case !l.hasMessage(intent):
		l.holdEarlyEdit(intent, text)
	}
	return replaced, standing
}

// hasMessage reports whether intent's message is in the agent's context, in a hook's hands, in
// the block being typed, or printed by a hook whose commit the session has read and not settled
// yet (it may wait while the main loop waits or runs an activity): a commit of the standing offer
// read before the desk's word, or one that came after its offer's lease ended. Without these the
// door was told no for a message the agent had: an edit then went in as though it had not
// (dropped at the commit, the person told nothing), a /cancel said "it never will" (found by
// the ledger checker with the person's hand, regression seed 3081).
func (l *Ledger) hasMessage(intent string) bool {
	req := DeliveryRequest{Kind: KindMessage, ReplyTo: intent}
	return l.inContext(req) || l.heldIn(req) >= 0 || l.inBlock(req) || l.committedUnsettled(req)
}

// committedUnsettled reports whether a hook's commit the session has read, not settled yet,
// printed what req hands over: the standing offer's (its requests still queued, reserved), or
// a late one's (lateCommitted).
func (l *Ledger) committedUnsettled(req DeliveryRequest) bool {
	key := req.TypedKey()
	if key == "" || len(l.commits) == 0 {
		return false
	}
	if l.Standing != nil && slices.Contains(l.commits, l.Standing.Key) &&
		slices.ContainsFunc(l.Queue, func(q DeliveryRequest) bool { return l.reserved(q.ID) && q.TypedKey() == key }) {
		return true
	}
	return l.lateCommitted()[key]
}

// holdEarlyEdit keeps an edit whose message's request has not been read yet (EarlyEdits).
func (l *Ledger) holdEarlyEdit(intent, text string) {
	l.EarlyEdits = slices.DeleteFunc(l.EarlyEdits, func(e Edit) bool { return e.Intent == intent })
	l.EarlyEdits = append(l.EarlyEdits, Edit{Intent: intent, Text: text})
	if n := len(l.EarlyEdits); n > maxEarlyEdits {
		l.EarlyEdits = append([]Edit(nil), l.EarlyEdits[n-maxEarlyEdits:]...)
	}
}

// maxEarlyEdits bounds Ledger.EarlyEdits (carried across continue-as-new, texts and all): an
// edit waits there only while its request is in the session's channel.
const maxEarlyEdits = 50

// takeEarlyEdit puts an edit read before req in req's text, and forgets it.
func (l *Ledger) takeEarlyEdit(req *DeliveryRequest) {
	if req.Kind != KindMessage {
		return
	}
	if i := slices.IndexFunc(l.EarlyEdits, func(e Edit) bool { return e.Intent == req.ReplyTo }); i >= 0 {
		req.Text = l.EarlyEdits[i].Text
		l.EarlyEdits = slices.Delete(slices.Clone(l.EarlyEdits), i, i+1)
	}
}

// holdEdit keeps the newest edit of intent's reserved message until the desk's word.
func (l *Ledger) holdEdit(intent, text string) {
	if i := slices.IndexFunc(l.Edits, func(e Edit) bool { return e.Intent == intent }); i >= 0 {
		l.Edits[i].Text = text
		return
	}
	l.Edits = append(l.Edits, Edit{Intent: intent, Text: text})
}

// settleEdits applies the held edits to the messages still queued, except those of the
// requests a hook took (taken, or an open offer's: their edits wait for the hook's commit or its
// lease's end), and forgets the edits it applied.
func (l *Ledger) settleEdits(taken []string) {
	var keep []Edit
	for _, e := range l.Edits {
		held := l.heldIn(DeliveryRequest{Kind: KindMessage, ReplyTo: e.Intent}) >= 0
		for i, q := range l.Queue {
			if q.Kind != KindMessage || q.ReplyTo != e.Intent {
				continue
			}
			if slices.Contains(taken, q.ID) {
				held = true
				continue
			}
			l.Queue[i].Text = e.Text
		}
		if held {
			keep = append(keep, e)
		}
	}
	l.Edits = keep
}

// editsReturn applies the held edits to the messages of an offer whose hook never committed
// (they go back to the queue: the agent has not got them), and forgets those edits.
func (l *Ledger) editsReturn(reqs []DeliveryRequest) {
	for i, r := range reqs {
		if j := l.heldEdit(r); j >= 0 {
			reqs[i].Text = l.Edits[j].Text
		}
	}
	l.forgetEdits(reqs)
}

// forgetEdits drops the held edits of reqs' messages (a hook printed them as first sent).
func (l *Ledger) forgetEdits(reqs []DeliveryRequest) {
	l.Edits = slices.DeleteFunc(l.Edits, func(e Edit) bool {
		return slices.ContainsFunc(reqs, func(r DeliveryRequest) bool { return r.Kind == KindMessage && r.ReplyTo == e.Intent })
	})
}

// heldEdit is the index in Edits of the edit of req's message, -1 if none.
func (l *Ledger) heldEdit(req DeliveryRequest) int {
	if req.Kind != KindMessage {
		return -1
	}
	return slices.IndexFunc(l.Edits, func(e Edit) bool { return e.Intent == req.ReplyTo })
}

// withdrawn reports whether req is for an intent the person took back.
func (l *Ledger) withdrawn(req DeliveryRequest) bool {
	return req.ReplyTo != "" && slices.Contains(l.Withdrawn, req.ReplyTo)
}

// dropWithdrawn removes from the queue the requests of withdrawn intents that no standing offer
// reserves.
func (l *Ledger) dropWithdrawn() {
	l.Queue = slices.DeleteFunc(l.Queue, func(q DeliveryRequest) bool { return l.withdrawn(q) && !l.reserved(q.ID) })
}

// besideItsMessage reports whether req is a reminder whose own message waits in the queue (not
// in the agent's context yet): the message itself goes, the reminder is answered with it.
func (l *Ledger) besideItsMessage(req DeliveryRequest) bool {
	if l.reminderBesideMessage || req.Kind != KindReminder {
		return false
	}
	return slices.ContainsFunc(l.Queue, func(q DeliveryRequest) bool {
		return q.Kind == KindMessage && q.ReplyTo == req.ReplyTo && !l.inContext(q)
	})
}

// Admit takes a request that arrived: answered from the context when it is in it (a repeat),
// waiting with the offer or the typed block that holds it, else queued.
func (l *Ledger) Admit(req DeliveryRequest) {
	switch i := l.heldIn(req); {
	case l.withdrawn(req):
		// Taken back by the person: never handed over.
	case req.ReplyTo == "":
		l.Queue = append(l.Queue, req) // a context block has no intent: never a repeat
	case l.inContext(req):
		l.repeats = append(l.repeats, req)
	case i >= 0:
		l.Offers[i].Waiting = append(l.Offers[i].Waiting, req)
	case !l.queueWhileTyping && l.inBlock(req):
		l.blockWaiting = append(l.blockWaiting, req)
	default:
		l.takeEarlyEdit(&req)
		l.enqueue(req)
	}
}

// Repeats returns (and forgets) the requests to answer as delivered: what they ask for is in the
// agent's context already.
func (l *Ledger) Repeats() []DeliveryRequest {
	r := l.repeats
	l.repeats = nil
	return r
}

// Committed notes hooks' commits (offer keys), to be settled before any lease is looked at.
func (l *Ledger) Committed(keys ...string) { l.commits = append(l.commits, keys...) }

// lateCommitted is the typed keys of what the commits not settled yet hold from offers whose
// lease had ended: printed, so in the agent's context, though not reconciled yet.
func (l *Ledger) lateCommitted() map[string]bool {
	keys := map[string]bool{}
	for _, c := range l.commits {
		for _, o := range l.ExpiredOffers {
			if o.Key != c {
				continue
			}
			for _, r := range o.Requests {
				if k := r.TypedKey(); k != "" {
					keys[k] = true
				}
			}
		}
	}
	return keys
}

// TookBefore reports whether a hook run with key took before (it takes nothing again).
func (l *Ledger) TookBefore(key string) bool { return slices.Contains(l.TakeKeys, key) }

// Take hands a hook the waiting messages and reminders (not the one being typed), oldest first,
// as an offer made at now: as many as one typed block holds (policy.MaxBatch, MaxBatchBytes),
// ending at the first that does not fit so none overtakes another; the rest wait for the next
// hook or typing. A key taken before takes nothing.
func (l *Ledger) Take(key, event string, now time.Time) (msgs []DeliveryRequest) {
	if l.TookBefore(key) {
		return nil
	}
	l.TakeKeys = append(l.TakeKeys, key)
	if n := len(l.TakeKeys); n > recentTakeKeys {
		l.TakeKeys = append([]string(nil), l.TakeKeys[n-recentTakeKeys:]...)
	}
	// A commit may wait unsettled while the main loop is busy (an activity retried): what it
	// committed after its lease ended is in the agent's context, and is not handed over again.
	committed := l.lateCommitted()
	var rest []DeliveryRequest
	size, full := 0, false
	for _, q := range l.Queue {
		if typedKind(q.Kind) && (l.inContext(q) || l.heldIn(q) >= 0 || committed[q.TypedKey()] || l.reserved(q.ID)) {
			rest = append(rest, q) // never handed over again; the typing path answers it
			continue
		}
		if !typedKind(q.Kind) || q.ID == l.typing {
			rest = append(rest, q)
			continue
		}
		if l.besideItsMessage(q) {
			l.repeats = append(l.repeats, q) // its message goes: answered, not handed over
			continue
		}
		if full || (len(msgs) > 0 && (len(msgs) == policy.MaxBatch || size+len(q.Text) > policy.MaxBatchBytes)) {
			full = true
			rest = append(rest, q)
			continue
		}
		msgs = append(msgs, q)
		size += len(q.Text) + 1
	}
	if len(msgs) > 0 {
		l.Queue = rest
		l.Offers = append(l.Offers, Offer{Key: key, Event: event, At: now, Requests: msgs})
	}
	return msgs
}

// Commit is an offer a hook committed, as the session must apply it: Fresh entered the agent's
// context with it (history, counts); every request in Answer is answered delivered.
type Commit struct {
	Offer      Offer
	Fresh      []DeliveryRequest
	Answer     []DeliveryRequest
	Reconciled bool
}

// Settlement is what Settle decided, for the session to apply in order: the commits, then the
// offers whose lease ended (their requests queued again at the head). Withdraw: a late commit
// printed what the standing offer holds; the session withdraws the offer from the desk
// (StandingWithdrawn or StandingTaken) and settles again.
type Settlement struct {
	Commits  []Commit
	Expired  []Offer
	Withdraw bool
	// Standing are the standing offers a commit took before the desk's word came.
	Standing []StandingTaken
}

// Settle applies the commits that arrived, then puts the offers no hook committed within
// policy.OfferLease of now back at the head of the queue, in order.
func (l *Ledger) Settle(now time.Time) Settlement {
	var st Settlement
	for len(l.commits) > 0 {
		key := l.commits[0]
		if l.Standing != nil && l.Standing.Key == key {
			// Committed before the desk's word came: the commit says a hook took it.
			t := StandingTaken{Key: key, Event: "hook", At: now}
			l.StandingTaken(t, now)
			st.Standing = append(st.Standing, t)
		}
		if i := slices.IndexFunc(l.Offers, func(o Offer) bool { return o.Key == key }); i >= 0 {
			o := l.Offers[i]
			l.Offers = append(l.Offers[:i:i], l.Offers[i+1:]...)
			st.Commits = append(st.Commits, l.commit(o, false))
		} else if c, ok, withdraw := l.reconcile(key); withdraw {
			st.Withdraw = true
			return st // the commit stays first: settled again once the offer is withdrawn
		} else if ok {
			st.Commits = append(st.Commits, c)
		}
		l.commits = l.commits[1:]
	}
	var back, keep []DeliveryRequest
	var offers []Offer
	for _, o := range l.Offers {
		if now.Sub(o.At) >= policy.OfferLease {
			st.Expired = append(st.Expired, o)
			back = append(back, l.expire(o)...)
			continue
		}
		offers = append(offers, o)
	}
	if len(back) == 0 {
		if !l.keepEmptyExpired {
			l.Offers = offers
		}
		return st
	}
	l.Offers = offers
	keep, l.Queue = l.Queue, nil
	for _, r := range append(back, keep...) {
		l.enqueue(r)
	}
	return st
}

// commit counts each message of a committed offer in the agent's context, once: something the
// agent had already got (a request repeated after its wait timed out) is answered, not counted
// again. Requests for what the offer held that came while it was out are answered too.
func (l *Ledger) commit(o Offer, reconciled bool) Commit {
	c := Commit{Offer: o, Reconciled: reconciled}
	l.forgetEdits(o.Requests)
	l.presentAgain(o)
	for _, req := range o.Requests {
		if !l.inContext(req) {
			c.Fresh = append(c.Fresh, req)
			l.remember(req)
		}
	}
	c.Answer = append(append([]DeliveryRequest(nil), o.Requests...), o.Waiting...)
	return c
}

// expire moves an offer whose lease ended to ExpiredOffers (a late commit reconciles it) and
// returns the requests to queue again.
func (l *Ledger) expire(o Offer) []DeliveryRequest {
	l.ExpiredOffers = append(l.ExpiredOffers, Offer{Key: o.Key, Event: o.Event, At: o.At, Requests: o.Requests, BeforeReset: o.BeforeReset})
	if n := len(l.ExpiredOffers); n > maxExpiredOffers {
		l.ExpiredOffers = append([]Offer(nil), l.ExpiredOffers[n-maxExpiredOffers:]...)
	}
	back := slices.DeleteFunc(append(slices.Clone(o.Requests), o.Waiting...), l.withdrawn)
	l.editsReturn(back)
	return back
}

// reconcile applies a commit whose offer's lease had ended: the hook did print it, so what is
// not in the agent's context yet leaves the queue (or the offer that took it again) and is
// committed now. What was typed meanwhile reached the agent twice; it is not counted again.
// withdraw: what the late commit printed is reserved by the standing offer, which must be
// withdrawn first (nothing changed).
func (l *Ledger) reconcile(key string) (c Commit, ok, withdraw bool) {
	i := slices.IndexFunc(l.ExpiredOffers, func(o Offer) bool { return o.Key == key })
	if i < 0 {
		return Commit{}, false, false
	}
	o := l.ExpiredOffers[i]
	if l.Standing != nil && slices.ContainsFunc(o.Requests, func(r DeliveryRequest) bool {
		return slices.ContainsFunc(l.Queue, func(q DeliveryRequest) bool { return l.reserved(q.ID) && q.TypedKey() == r.TypedKey() })
	}) {
		return Commit{}, false, true
	}
	l.ExpiredOffers = slices.Delete(slices.Clone(l.ExpiredOffers), i, i+1)
	var commit Offer
	commit.Key, commit.Event, commit.At, commit.BeforeReset = o.Key, o.Event, o.At, o.BeforeReset
	for _, r := range o.Requests {
		if l.inContext(r) {
			continue
		}
		key := r.TypedKey()
		var rest []DeliveryRequest
		for _, q := range l.Queue {
			if key != "" && q.TypedKey() == key {
				commit.Waiting = append(commit.Waiting, q)
				continue
			}
			rest = append(rest, q)
		}
		l.Queue = rest
		if j := l.heldIn(r); j >= 0 {
			other := &l.Offers[j]
			other.Requests = slices.DeleteFunc(slices.Clone(other.Requests), func(q DeliveryRequest) bool { return q.TypedKey() == key })
			if l.reconcileTakesAllWaiting {
				commit.Waiting = append(commit.Waiting, other.Waiting...)
				other.Waiting = nil
			} else {
				// Only what waits for this request: the rest waits for the other offer's own.
				var keep []DeliveryRequest
				for _, w := range other.Waiting {
					if w.TypedKey() == key {
						commit.Waiting = append(commit.Waiting, w)
					} else {
						keep = append(keep, w)
					}
				}
				other.Waiting = keep
			}
		}
		commit.Requests = append(commit.Requests, r)
	}
	return l.commit(commit, true), true, false
}

// Offerable is what a take would hand over now: oldest first, one block's worth, not what is
// being typed, nor what the agent has or a hook holds.
func (l *Ledger) Offerable() []DeliveryRequest {
	var msgs []DeliveryRequest
	size := 0
	var committed map[string]bool
	if !l.offerLateCommitted {
		// As Take: a late commit a take read, not settled yet, printed these.
		committed = l.lateCommitted()
	}
	for _, q := range l.Queue {
		if !typedKind(q.Kind) || q.ID == l.typing || l.inContext(q) || l.heldIn(q) >= 0 || l.withdrawn(q) || l.besideItsMessage(q) || committed[q.TypedKey()] {
			continue
		}
		if len(msgs) > 0 && (len(msgs) == policy.MaxBatch || size+len(q.Text) > policy.MaxBatchBytes) {
			break // none overtakes another
		}
		msgs = append(msgs, q)
		size += len(q.Text) + 1
	}
	return msgs
}

// Stand makes msgs the standing offer, reserved before it goes out: whatever becomes of the
// desk's activity, nothing types them until the desk has said what became of the offer. epoch
// names the chain of runs (the first run that made an offer).
func (l *Ledger) Stand(msgs []DeliveryRequest, epoch string) *StandingOffer {
	if l.StandingEpoch == "" {
		l.StandingEpoch = epoch
	}
	l.StandingSeq++
	offer := &StandingOffer{Key: fmt.Sprintf("standing/%s/%d", l.StandingEpoch, l.StandingSeq)}
	for _, m := range msgs {
		offer.IDs = append(offer.IDs, m.ID)
	}
	l.Standing = offer
	return offer
}

// StandingWithdrawn: the desk says no hook can take the standing offer any more (withdrawn, or
// no desk had it): its requests are the session's again.
func (l *Ledger) StandingWithdrawn() {
	l.Standing = nil
	l.settleEdits(nil)
	l.dropWithdrawn()
}

// StandingTaken makes the standing offer a hook took an open offer: its requests leave the
// queue, its lease starts when the hook took it (now when the desk did not say), and its commit
// answers them. It returns the offer (nil when t names no standing offer: told before).
func (l *Ledger) StandingTaken(t StandingTaken, now time.Time) *Offer {
	if l.Standing == nil || l.Standing.Key != t.Key {
		return nil
	}
	if t.At.IsZero() {
		t.At = now
	}
	ids := l.Standing.IDs
	if len(t.IDs) > 0 {
		// What the desk handed out: a request the session reserved beyond it is its own again.
		ids = t.IDs
	}
	l.Standing = nil
	l.settleEdits(ids) // what the hook took went as first sent
	o := Offer{Key: t.Key, Event: t.Event, At: t.At}
	var rest []DeliveryRequest
	for _, q := range l.Queue {
		if slices.Contains(ids, q.ID) {
			o.Requests = append(o.Requests, q)
		} else {
			rest = append(rest, q)
		}
	}
	l.Queue = rest
	if len(o.Requests) > 0 {
		l.Offers = append(l.Offers, o)
	}
	return &o
}

// NextBatch takes from the queue, in order, the requests to type together: every message and
// reminder up to policy.MaxBatch requests and policy.MaxBatchBytes of text (at least one),
// ending at the first that does not fit. Those typed before (a request repeated after its wait
// timed out) come back as again, to answer without typing; a reminder beside its own message
// is answered (Repeats), not typed; contexts and reserved requests stay queued. The queue is
// settled before anything blocks: a take while the answers go out must not hand over what
// this block types.
func (l *Ledger) NextBatch() (batch, again []DeliveryRequest) {
	var rest []DeliveryRequest
	size, full := 0, false
	// A reminder is never typed beside the message it reminds of: the message itself is.
	messages := map[string]bool{}
	for _, r := range l.Queue {
		if r.Kind == KindMessage && !l.inContext(r) {
			messages[r.ReplyTo] = true
		}
	}
	for _, r := range l.Queue {
		switch {
		case !typedKind(r.Kind) || l.reserved(r.ID):
			rest = append(rest, r)
		case l.inContext(r): // typed (or handed over) before
			again = append(again, r)
		case r.Kind == KindReminder && messages[r.ReplyTo]:
			l.repeats = append(l.repeats, r) // answered, not typed and not counted
		case full || (len(batch) > 0 && (len(batch) == policy.MaxBatch || size+len(r.Text) > policy.MaxBatchBytes)):
			rest = append(rest, r)
			full = true // what comes after waits too: none overtakes another
		default:
			batch = append(batch, r)
			size += len(r.Text) + 1
		}
	}
	l.Queue = rest
	if !slices.ContainsFunc(batch, func(r DeliveryRequest) bool { return r.Kind != KindReminder }) {
		// A digest of reminders reads oldest first (the intents' timers fire in any order).
		slices.SortStableFunc(batch, func(a, b DeliveryRequest) int { return a.Since.Compare(b.Since) })
	}
	l.block = batch
	return batch, again
}

// Typed records the outcome of typing reqs (ok: submitted and confirmed) and reports, for each,
// whether it counts as delivered now: not when a late commit put it in the agent's context
// while it was typed (reconciled, counted then). The requests that waited for the block are
// returned to be answered delivered when it was; when it was not, they are queued.
func (l *Ledger) Typed(reqs []DeliveryRequest, ok bool) (counts []bool, waited []DeliveryRequest) {
	counts = make([]bool, len(reqs))
	for i, r := range reqs {
		if ok && !l.inContext(r) {
			l.remember(r)
			counts[i] = true
		}
	}
	waited, l.block, l.blockWaiting = l.blockWaiting, nil, nil
	if !ok {
		for _, r := range reqs {
			if r.Again {
				l.enqueue(r) // no intent asks for it again: it waits for the next typing
			}
		}
		for _, r := range waited {
			l.Admit(r)
		}
		return counts, nil
	}
	return counts, waited
}
