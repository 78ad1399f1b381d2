package workflows

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/intentq/intentq/internal/policy"
)

// The person's ways into the session, played by the exactly-once checker beside the agent and
// the intents: edits of a message before it reached the agent, take-backs (/cancel,
// an ignore) before and after, /stop with its look at the screen slow, and the has-message
// question a person's edit or take-back asks. After each schedule the checker asserts, besides
// "each message once":
//   - a message enters the agent's context in the text the person last sent before it entered;
//   - a message taken back never enters afterwards (once before is fine);
//   - the session's has-message never answers "no" for a message the agent has;
//   - a /stop never presses its key after intentq typed since the stop was asked (the key would
//     interrupt the turn the typing began, not the one the person saw);
//   - every intent whose message reached the agent learns it within policy.ResultsHold (and a
//     little) of the session knowing it (typed, or a hook's commit in), unless the worker was away.
//
// Its draws come from a generator of its own, so each seed's agent, hooks and intents stay as
// they were before these plays were added.

// personPlay is what the person did in one schedule, and what the checker saw of it.
type personPlay struct {
	prng *rand.Rand
	// text and version: each intent's message as the person last sent it (what its intent asks
	// with); edits: when each version was sent.
	text    map[string]string
	version map[string]int
	edits   map[string][]editSent
	// enteredVersion: the version of the text that first entered the agent's context.
	enteredVersion map[string]int
	// withdrawnAt: when the person took each intent back.
	withdrawnAt map[string]time.Duration
	// knownAt: when the session could know the message reached the agent (typed; a hook's commit
	// sent); answeredAt: when its intent was first told it was delivered.
	knownAt    map[string]time.Duration
	answeredAt map[string]time.Duration
	// printedBy: the messages each hook run printed, for its commit.
	printedBy map[string][]string
	// typedAt: every typing; stops: every /stop asked; stopLooking: a /stop is in flight (its
	// look at the screen takes lookTakes, once).
	typedAt     []time.Duration
	stops       []time.Duration
	stopLooking int
	lookTakes   time.Duration
	// counts of what was played, for the checker's summary.
	edited, withdrawn, stopped, asked int
}

// editSent is one edit: its version, and when the person sent it.
type editSent struct {
	version int
	at      time.Duration
}

func newPersonPlay(seed uint64) personPlay {
	return personPlay{prng: rand.New(rand.NewPCG(seed, 0x2e)), text: map[string]string{}, version: map[string]int{},
		edits: map[string][]editSent{}, enteredVersion: map[string]int{}, withdrawnAt: map[string]time.Duration{},
		knownAt: map[string]time.Duration{}, answeredAt: map[string]time.Duration{}, printedBy: map[string][]string{}}
}

// messageText is message i's text at version v (1: as first sent).
func messageText(i, v int) string {
	if v <= 1 {
		return fmt.Sprintf("【新着メッセージ】msg_id=%d chat=1: [M%d] text", i, i)
	}
	return fmt.Sprintf("【新着メッセージ】msg_id=%d chat=1: [M%dv%d] text, edited", i, i, v)
}

// currentText is intent id's message as the person last sent it.
func (r *checkRun) currentText(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p.text[id]
}

// entered notes a message's first entry: its version, and (typed) that the session knows.
func (r *checkRun) firstEntry(key string, version int, typed bool) {
	r.p.enteredVersion[key] = version
	if typed {
		r.p.knownAt[key] = r.now()
	}
}

// committedPrints notes that hook run key committed what it printed: the session knows now.
func (r *checkRun) committedPrints(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.p.printedBy[key] {
		if _, ok := r.p.knownAt[k]; !ok {
			r.p.knownAt[k] = r.now()
		}
	}
}

// schedulePerson plays the person: for some messages an edit or two and a take-back, some
// has-message questions, and a few /stops.
func (r *checkRun) schedulePerson(arrivals map[string]time.Duration) {
	p := &r.p
	for i := 1; i <= r.keys; i++ {
		id := fmt.Sprintf("intent/1/%d", i)
		arrive := arrivals[id]
		for range p.prng.IntN(3) {
			if p.prng.IntN(3) == 0 {
				continue
			}
			r.editAt(arrive+time.Duration(p.prng.IntN(240000))*time.Millisecond, i)
		}
		if p.prng.IntN(6) == 0 {
			r.withdrawAt(arrive+time.Duration(p.prng.IntN(300000))*time.Millisecond, id)
		}
	}
	for range 6 + p.prng.IntN(10) {
		id := fmt.Sprintf("intent/1/%d", 1+p.prng.IntN(r.keys))
		at := time.Duration(p.prng.IntN(1500000)) * time.Millisecond
		r.at(at, func() { r.askHas(id) })
	}
	for range p.prng.IntN(4) {
		look := time.Duration(p.prng.IntN(12000)) * time.Millisecond
		r.stopAt(time.Duration(p.prng.IntN(1500000))*time.Millisecond, look)
	}
}

// editAt plays the door's edit of message i at at: it asks the intent (which knows whether it
// was delivered) and the session's has-message; only a message neither has is replaced. An edit
// of one the agent has is a correction (the person's word), not this checker's.
func (r *checkRun) editAt(at time.Duration, i int) {
	id := fmt.Sprintf("intent/1/%d", i)
	r.at(at, func() {
		r.mu.Lock()
		done := r.answered[id]
		_, gone := r.p.withdrawnAt[id]
		r.mu.Unlock()
		if done || gone || r.askHas(id) {
			return
		}
		r.mu.Lock()
		r.p.version[id]++
		v := r.p.version[id]
		r.p.text[id] = messageText(i, v)
		r.p.edits[id] = append(r.p.edits[id], editSent{version: v, at: r.now()})
		r.p.edited++
		text := r.p.text[id]
		r.mu.Unlock()
		r.note("edit %s to v%d", id, v)
		r.signal(SignalReplace, ReplaceRequest{Intent: id, Text: text})
	})
}

// withdrawAt plays the person taking intent id back at at (its intent stops asking).
func (r *checkRun) withdrawAt(at time.Duration, id string) {
	r.at(at, func() {
		r.mu.Lock()
		r.p.withdrawnAt[id] = r.now()
		r.p.withdrawn++
		r.mu.Unlock()
		r.note("withdraw %s", id)
		r.signal(SignalWithdraw, WithdrawRequest{Intent: id})
	})
}

// askHas asks the session whether its agent has id's message, checks the answer against what
// the checker saw (outside the worker's outages, and once the session can know), and returns it.
func (r *checkRun) askHas(id string) bool {
	v, err := r.env.QueryWorkflow(QueryHasMessage, id)
	if err != nil {
		r.note("has-message %s: %v", id, err)
		return false
	}
	var has bool
	if err := v.Get(&has); err != nil {
		r.fail("has-message %s: %v", id, err)
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.asked++
	known, ok := r.p.knownAt[id]
	r.note("has-message %s: %v", id, has)
	if !has && ok && known <= r.now() && !r.nearOutage(known, r.now()) {
		r.fail("has-message %s answered no; the agent has had it since %s", id, known)
	}
	return has
}

// stopAt plays the person's /stop at at, its look at the screen taking look.
func (r *checkRun) stopAt(at, look time.Duration) {
	r.at(at, func() {
		r.mu.Lock()
		r.p.stops = append(r.p.stops, r.now())
		r.p.stopLooking++
		r.p.lookTakes = look
		r.p.stopped++
		r.mu.Unlock()
		r.note("stop asked (its look takes %s)", look)
		done := func() {
			r.mu.Lock()
			r.p.stopLooking--
			r.mu.Unlock()
		}
		r.env.UpdateWorkflow(UpdateStop, fmt.Sprintf("stop@%s", at), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { done(); r.note("stop refused: %v", err) },
			OnComplete: func(v interface{}, err error) {
				done()
				if err != nil {
					r.note("stop failed: %v", err)
					return
				}
				r.note("stop answered %+v", v)
			},
		})
	})
}

// lookDelay is how long the next capture takes: a /stop's look, slow once (a loaded machine).
func (r *checkRun) lookDelay() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p.stopLooking == 0 {
		return 0
	}
	d := r.p.lookTakes
	r.p.lookTakes = 0
	return d
}

// keysPressed checks a key the session pressed (the caller holds r.mu): a stop key goes only if
// nothing was typed since the stop was asked. (The model's agent does not start a turn when
// typed into, so a key into its "idle" agent after an earlier typing is a stop of the turn that
// typing began, which the person may ask for.)
func (r *checkRun) keysPressed(keys []string) {
	if !slices.Contains(keys, "Escape") {
		return
	}
	now := r.now()
	r.note("keys %s", strings.Join(keys, " "))
	var asked time.Duration = -1
	for _, s := range r.p.stops {
		if s <= now {
			asked = s
		}
	}
	for _, t := range r.p.typedAt {
		if asked >= 0 && t > asked && t <= now {
			r.fail("the stop asked at %s pressed its key after intentq typed at %s", asked, t)
		}
	}
}

// nearOutage reports whether the worker was away within a delivery timeout of [from, to]: its
// results then wait for the intents to ask again.
func (r *checkRun) nearOutage(from, to time.Duration) bool {
	for _, w := range r.away {
		if w.from <= to+policy.DeliveryTimeout && w.to >= from-policy.OfferLease {
			return true
		}
	}
	return false
}

// resultBound is how long after the session knows a message reached the agent its intent may
// wait to be told: held results go at most policy.ResultsHold after the first of them.
const resultBound = policy.ResultsHold + 15*time.Second

// checkPerson asserts the person's invariants after a schedule.
func (r *checkRun) checkPerson() {
	p := &r.p
	for i := 1; i <= r.keys; i++ {
		id := fmt.Sprintf("intent/1/%d", i)
		at, entered := r.enteredAt[id]
		// A take-back while the worker is away may lose to the desk's offer (docs/exactly-once.md,
		// "Not covered"): the message then enters once.
		if w, ok := p.withdrawnAt[id]; ok && entered && at > w && !r.outage(w) {
			r.fail("message %s entered the agent's context at %s, after the person took it back at %s", id, at, w)
		}
		if entered {
			// An edit sent in the very instant the message entered may or may not be in it.
			before, upTo := 1, 1
			for _, e := range p.edits[id] {
				if r.outage(e.at) {
					// The desk (away with the worker) could not be told: its offer, taken once
					// the worker is back, may carry the text before it (docs/exactly-once.md,
					// "Not covered").
					if e.at <= at {
						upTo = e.version
					}
					continue
				}
				if e.at < at {
					before = e.version
				}
				if e.at <= at {
					upTo = e.version
				}
			}
			if got := p.enteredVersion[id]; got < before || got > upTo {
				r.fail("message %s entered at %s as version %d; the person had sent version %d before", id, at, got, before)
			}
		}
		known, ok := p.knownAt[id]
		if _, gone := p.withdrawnAt[id]; gone || !ok || r.nearOutage(known, known+resultBound) {
			continue
		}
		told, toldOK := p.answeredAt[id]
		if !toldOK || told > known+resultBound {
			when := "never"
			if toldOK {
				when = "at " + told.String()
			}
			r.fail("intent %s was told of its delivery %s; the session knew at %s (bound %s)", id, when, known, resultBound)
		}
	}
}

// markerVersion is the version a marker's text names (1 without one).
func markerVersion(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
