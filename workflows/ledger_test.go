package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/intentq/intentq/internal/policy"
)

// msg is intent n's message request (attempt a).
func msg(n, a int) DeliveryRequest {
	id := fmt.Sprintf("intent/1/%d", n)
	return DeliveryRequest{ID: fmt.Sprintf("%s#%d", id, a), ReplyTo: id, Kind: KindMessage, Text: fmt.Sprintf("message %d", n)}
}

func ids(reqs []DeliveryRequest) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.ID)
	}
	return out
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A request for what the agent has is a repeat (answered, never handed over); one for what a
// hook holds waits with the offer and is answered by its commit; the same intent's request
// while one waits is not queued twice.
func TestLedgerAdmit(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(msg(1, 2))
	require.Equal(t, []string{"intent/1/1#1"}, ids(l.Queue), "the waiting request answers both")
	require.Equal(t, []string{"intent/1/1#1"}, ids(l.Take("post-tool-use/a", EventPostToolUse, t0)))
	l.Admit(msg(1, 3))
	require.Empty(t, l.Queue)
	require.Equal(t, []string{"intent/1/1#3"}, ids(l.Offers[0].Waiting))
	l.Committed("post-tool-use/a")
	st := l.Settle(t0.Add(time.Second))
	require.Len(t, st.Commits, 1)
	require.Equal(t, []string{"intent/1/1#1"}, ids(st.Commits[0].Fresh))
	require.Equal(t, []string{"intent/1/1#1", "intent/1/1#3"}, ids(st.Commits[0].Answer))
	l.Admit(msg(1, 4))
	require.Empty(t, l.Queue)
	require.Equal(t, []string{"intent/1/1#4"}, ids(l.Repeats()))
	require.Empty(t, l.Repeats(), "answered once")
}

// A take hands over one block's worth, oldest first, ending at the first message that does not
// fit; a hook run that takes again takes nothing; what the agent has, a hook holds or the desk
// has reserved is never handed over.
func TestLedgerTake(t *testing.T) {
	var l Ledger
	big := msg(2, 1)
	big.Text = strings.Repeat("x", policy.MaxBatchBytes)
	l.Admit(msg(1, 1))
	l.Admit(big)
	l.Admit(msg(3, 1))
	require.Equal(t, []string{"intent/1/1#1"}, ids(l.Take("stop/a", EventStop, t0)), "none overtakes the one that does not fit")
	require.Empty(t, l.Take("stop/a", EventStop, t0), "the same hook run takes once")
	require.True(t, l.TookBefore("stop/a"))
	l.Stand(l.Offerable(), "run")
	require.Equal(t, []string{"intent/1/2#1"}, l.Standing.IDs)
	require.Equal(t, []string{"intent/1/3#1"}, ids(l.Take("stop/b", EventStop, t0)), "reserved stays for the desk")
}

// A commit is applied before any lease is looked at, however late it is read; an offer no hook
// commits within the lease goes back to the head of the queue, in order; a commit after that is
// reconciled: its messages leave the queue and count once.
func TestLedgerSettle(t *testing.T) {
	var l Ledger
	for n := 1; n <= 3; n++ {
		l.Admit(msg(n, 1))
	}
	l.Take("post-tool-use/a", EventPostToolUse, t0)
	l.Admit(msg(4, 1))
	l.Committed("post-tool-use/a")
	st := l.Settle(t0.Add(time.Hour))
	require.Len(t, st.Commits, 1, "read late, applied first")
	require.Empty(t, st.Expired)
	require.Equal(t, []string{"intent/1/4#1"}, ids(l.Queue))

	l.Admit(msg(5, 1))
	l.Take("post-tool-use/b", EventPostToolUse, t0.Add(time.Hour))
	st = l.Settle(t0.Add(time.Hour + policy.OfferLease))
	require.Len(t, st.Expired, 1)
	require.Equal(t, []string{"intent/1/4#1", "intent/1/5#1"}, ids(l.Queue), "back at the head, in order")
	l.Committed("post-tool-use/b")
	st = l.Settle(t0.Add(2 * time.Hour))
	require.Len(t, st.Commits, 1)
	require.True(t, st.Commits[0].Reconciled)
	require.Equal(t, []string{"intent/1/4#1", "intent/1/5#1"}, ids(st.Commits[0].Fresh))
	require.Empty(t, l.Queue, "what the late commit printed left the queue")
}

// A take sees a late commit the session has not settled yet: what it printed is not handed
// over again.
func TestLedgerTakeSeesLateCommit(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Take("post-tool-use/a", EventPostToolUse, t0)
	l.Settle(t0.Add(policy.OfferLease))
	require.Len(t, l.Queue, 1)
	l.Committed("post-tool-use/a")
	require.Empty(t, l.Take("post-tool-use/b", EventPostToolUse, t0.Add(policy.OfferLease)))
}

// The desk's word says what a hook took: those requests become its offer (what the session
// reserved beyond them is its own again); a late commit of what the standing offer holds asks
// for the offer to be withdrawn first.
func TestLedgerStanding(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(msg(2, 1))
	offer := l.Stand(l.Offerable(), "run")
	require.Equal(t, "standing/run/1", offer.Key)
	o := l.StandingTaken(StandingTaken{Key: offer.Key, Event: EventStop, IDs: []string{"intent/1/1#1"}}, t0)
	require.Equal(t, []string{"intent/1/1#1"}, ids(o.Requests))
	require.Equal(t, []string{"intent/1/2#1"}, ids(l.Queue))
	require.Nil(t, l.StandingTaken(StandingTaken{Key: offer.Key}, t0), "told once")

	// A late commit for what the new standing offer reserves.
	l.Settle(t0.Add(policy.OfferLease))
	require.Equal(t, []string{"intent/1/1#1", "intent/1/2#1"}, ids(l.Queue))
	l.Stand(l.Offerable(), "run")
	l.Committed(offer.Key)
	st := l.Settle(t0.Add(policy.OfferLease))
	require.True(t, st.Withdraw)
	l.StandingWithdrawn()
	st = l.Settle(t0.Add(policy.OfferLease))
	require.Len(t, st.Commits, 1)
	require.Equal(t, []string{"intent/1/1#1"}, ids(st.Commits[0].Fresh))
	require.Equal(t, []string{"intent/1/2#1"}, ids(l.Queue))
}

// A typed block carries one block's worth in order; a reminder beside its own message is
// answered, not typed; a request for what the block carries that arrives while it is typed
// waits for it, and no take hands it over (SessionVersion 3).
func TestLedgerTypedBlock(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(DeliveryRequest{ID: "intent/1/1#r1", ReplyTo: "intent/1/1", Kind: KindReminder, Tick: 1, Text: "reminder"})
	l.Admit(msg(2, 1))
	batch, again := l.NextBatch()
	require.Equal(t, []string{"intent/1/1#1", "intent/1/2#1"}, ids(batch))
	require.Empty(t, again)
	require.Equal(t, []string{"intent/1/1#r1"}, ids(l.Repeats()))
	l.Admit(msg(2, 2))
	require.Empty(t, l.Take("post-tool-use/a", EventPostToolUse, t0), "the block's message is not handed over")
	counts, waited := l.Typed(batch, true)
	require.Equal(t, []bool{true, true}, counts)
	require.Equal(t, []string{"intent/1/2#2"}, ids(waited))

	// The rule before: queued, and a hook could print it while the block was typed.
	old := Ledger{queueWhileTyping: true}
	old.Admit(msg(1, 1))
	batch, _ = old.NextBatch()
	old.Admit(msg(1, 2))
	require.Equal(t, []string{"intent/1/1#2"}, ids(old.Take("post-tool-use/a", EventPostToolUse, t0)))

	// A block that did not go in: what waited for it waits in the queue.
	var failed Ledger
	failed.Admit(msg(1, 1))
	batch, _ = failed.NextBatch()
	failed.Admit(msg(1, 2))
	counts, waited = failed.Typed(batch, false)
	require.Equal(t, []bool{false}, counts)
	require.Empty(t, waited)
	require.Equal(t, []string{"intent/1/1#2"}, ids(failed.Queue))
}

// What travels in a continue-as-new is the exported state, with the names sessions always used.
func TestLedgerTravelsAsBefore(t *testing.T) {
	in := SessionInput{Version: SessionVersion}
	in.Admit(msg(1, 1))
	in.Take("stop/a", EventStop, t0)
	in.Admit(msg(2, 1))
	in.Stand(in.Offerable(), "run")
	data, err := json.Marshal(in)
	require.NoError(t, err)
	for _, field := range []string{`"queue"`, `"offers"`, `"take_keys"`, `"standing"`, `"standing_epoch"`, `"standing_seq"`} {
		require.Contains(t, string(data), field)
	}
	var back SessionInput
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, in.Ledger.Queue, back.Queue)
	require.Equal(t, in.Ledger.Standing, back.Standing)
}

// Issue 35: an intent the person took back (ignored, cancelled) before it reached the agent
// leaves the queue, is never admitted again, and is offered, taken or typed by no path; one the
// standing offer names waits until the desk says what became of the offer: withdrawn, it is
// dropped; taken first, the hook delivered it. An expired offer does not queue it again.
func TestLedgerWithdraw(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(msg(2, 1))
	l.Admit(msg(3, 1))
	require.False(t, l.Withdraw("intent/1/2"), "no standing offer names it")
	require.Equal(t, []string{"intent/1/1#1", "intent/1/3#1"}, ids(l.Queue))
	l.Admit(msg(2, 2))
	require.Equal(t, []string{"intent/1/1#1", "intent/1/3#1"}, ids(l.Queue), "asked again: not admitted")
	reminder := msg(2, 3)
	reminder.Kind, reminder.Tick = KindReminder, 1
	l.Admit(reminder)
	require.Equal(t, []string{"intent/1/1#1", "intent/1/3#1"}, ids(l.Queue), "nor its reminders")

	// Reserved by the standing offer: it stays until the desk answers.
	l.Stand(l.Offerable(), "run")
	require.True(t, l.Withdraw("intent/1/3"))
	require.Equal(t, []string{"intent/1/1#1"}, ids(l.Offerable()), "never offered again")
	require.Equal(t, []string{"intent/1/1#1", "intent/1/3#1"}, ids(l.Queue))
	l.StandingWithdrawn()
	require.Equal(t, []string{"intent/1/1#1"}, ids(l.Queue))
	batch, _ := l.NextBatch()
	require.Equal(t, []string{"intent/1/1#1"}, ids(batch))

	// Held by a hook whose lease ends: not queued again.
	l.Admit(msg(4, 1))
	l.Admit(msg(5, 1))
	require.Len(t, l.Take("stop/a", EventStop, t0), 2)
	l.Withdraw("intent/1/4")
	st := l.Settle(t0.Add(policy.OfferLease))
	require.Len(t, st.Expired, 1)
	require.Equal(t, []string{"intent/1/5#1"}, ids(l.Queue))

	// A standing offer a hook took before the withdrawal reached the desk: the hook has it.
	l.Admit(msg(6, 1))
	offer := l.Stand(l.Offerable(), "run")
	require.True(t, l.Withdraw("intent/1/6"))
	o := l.StandingTaken(StandingTaken{Key: offer.Key, Event: EventPostToolUse}, t0)
	require.Equal(t, []string{"intent/1/5#1", "intent/1/6#1"}, ids(o.Requests))
}

// Issue 35 (SessionVersion 5): a hook's take and the standing offer hand over a message without
// its own reminder beside it; the reminder is answered with it (as a typed block does). Before
// version 5 both went together.
func TestLedgerReminderNotBesideItsMessage(t *testing.T) {
	reminder := msg(1, 2)
	reminder.Kind, reminder.Tick, reminder.Text = KindReminder, 1, "reminder of 1"
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(reminder)
	l.Admit(msg(2, 1))
	require.Equal(t, []string{"intent/1/1#1", "intent/1/2#1"}, ids(l.Offerable()))
	require.Equal(t, []string{"intent/1/1#1", "intent/1/2#1"}, ids(l.Take("stop/a", EventStop, t0)))
	require.Equal(t, []string{"intent/1/1#2"}, ids(l.Repeats()))
	require.Empty(t, l.Queue)

	old := Ledger{reminderBesideMessage: true}
	old.Admit(msg(1, 1))
	old.Admit(reminder)
	require.Len(t, old.Take("stop/a", EventStop, t0), 2, "before version 5")
}

// Issue 35: a typed digest of reminders reads oldest first, whatever order the intents' timers
// fired in.
func TestLedgerDigestOldestFirst(t *testing.T) {
	var l Ledger
	for i, age := range []time.Duration{time.Minute, 3 * time.Minute, 2 * time.Minute} {
		r := msg(i+1, 2)
		r.Kind, r.Tick, r.Since = KindReminder, 1, t0.Add(-age)
		l.Admit(r)
	}
	batch, _ := l.NextBatch()
	require.Equal(t, []string{"intent/1/2#2", "intent/1/3#2", "intent/1/1#2"}, ids(batch))
}

// SessionVersion 5 (offer-skips-late-commits): what a late commit printed, read by a take and
// not settled yet, is left out of the standing offer, as out of a take.
func TestLedgerOfferSkipsLateCommits(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(msg(2, 1))
	require.Len(t, l.Take("post-tool-use/a", EventPostToolUse, t0), 2)
	l.Settle(t0.Add(policy.OfferLease)) // the hook hung: its lease ends, both queued again
	require.Len(t, l.Queue, 2)
	l.Committed("post-tool-use/a") // its commit comes; a take reads it, nothing settles yet
	require.Empty(t, l.Offerable())
	old := Ledger{offerLateCommitted: true, Queue: l.Queue, ExpiredOffers: l.ExpiredOffers}
	old.Committed("post-tool-use/a")
	require.Len(t, old.Offerable(), 2, "before version 5")
}

// Issue 35: an edit puts its text in place of the waiting message; one the standing offer holds
// says so (offered again with the new text); one not waiting any more is left alone.
func TestLedgerReplace(t *testing.T) {
	var l Ledger
	l.Admit(msg(1, 1))
	l.Admit(msg(2, 1))
	replaced, standing := l.Replace("intent/1/1", "edited 1")
	require.True(t, replaced)
	require.False(t, standing)
	require.Equal(t, "edited 1", l.Queue[0].Text)
	l.Stand(l.Offerable(), "run")
	_, standing = l.Replace("intent/1/2", "edited 2")
	require.True(t, standing)
	batch, _ := l.NextBatch()
	require.Len(t, batch, 0, "reserved by the standing offer")
	l.StandingWithdrawn()
	batch, _ = l.NextBatch()
	require.Equal(t, []string{"edited 1", "edited 2"}, []string{batch[0].Text, batch[1].Text})
	replaced, _ = l.Replace("intent/1/1", "too late")
	require.False(t, replaced)
}
