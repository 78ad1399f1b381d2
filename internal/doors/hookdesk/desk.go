// Package hookdesk answers the agents' hooks from the worker's own process (issue 26): a hook's
// take, commit and report cost a local socket's round trip, not the Temporal server's, so a
// hook is as fast during a burst as at rest.
//
// The session workflow stays the one authority over what reaches its agent. While it waits for
// its agent it hands the desk a standing offer (workflows.DeskPublishName): the messages the
// next hook may take. A hook takes it here, at once; the desk tells the session, and passes the
// hook's commit and every hook's report on, many in one signal (workflows.SignalHookWords).
// Before the session types, it withdraws the offer (workflows.DeskWithdrawName): the desk
// answers, atomically with any take, whether a hook has it. The desk keeps each session's offers
// in a journal under data_dir (written before it answers), so a worker that restarts answers a
// withdrawal as the one before would have, and passes on what it had not passed on yet.
//
// The session also tells its desk what is unread in its agent's inbox (workflows.DeskInboxName,
// issue 38), so the agent's Stop hook names unread messages without a read of the server.
package hookdesk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/workflows"
)

// States of a standing offer.
const (
	stateOpen      = "open"
	stateTaken     = "taken"
	stateWithdrawn = "withdrawn"
)

// keepOffers bounds the offers a session's journal keeps (the latest; never one whose word to
// the session is still out); keepHookKeys the hook runs it remembers (a run twice takes once).
const (
	keepOffers   = 20
	keepHookKeys = 500
)

// maxReports bounds the reports waiting to be passed on (the oldest go first when Temporal is
// away for long: a report only says what the agent did, and newer ones say it again).
const maxReports = 1000

// ErrTypeOfferChanged refuses a standing offer published again under its key with other
// messages.
const ErrTypeOfferChanged = "StandingOfferChanged"

// Signal sends one signal to a workflow; nil when the server took it.
type Signal func(ctx context.Context, workflowID, signal string, arg any) error

// Desk holds the standing offers of the sessions whose agents run on this machine.
type Desk struct {
	dir    string
	signal Signal
	log    *zap.Logger
	now    func() time.Time
	// write writes a journal's file anew (private.WriteFileAtomic), appendTo appends a line to
	// it (appendJournal); a test stands in for them.
	write    func(path string, data []byte) error
	appendTo func(path string, line []byte) error

	// closed: the desk serves no hooks (Refuse).
	closed atomic.Bool
	// passing serializes passOn: Run's loop and a PassOn before a session is asked what its
	// agent had would otherwise send one session's words in two batches at once, out of order,
	// and write its journal of what went out from both.
	passing sync.Mutex

	// mu guards the map of sessions (not what each holds) and the words waiting to go out. A
	// session's own lock guards its journal and the journal's file, held across the file's write:
	// one session's slow write never holds another session's hooks (issue 38). A session's lock
	// is taken before mu, never while mu is held.
	mu       sync.Mutex
	sessions map[string]*held
	// out is what waits to be passed on to the sessions, in order; wake wakes the sender; most,
	// when set, bounds a batch (the server refused a larger one).
	out  []outgoing
	wake chan struct{}
	most int
}

// held is one session's journal under the session's own lock. Whatever the journal says is
// told to anyone (a hook, a withdrawal, the session) only after it is on disk, so a worker that
// restarts never contradicts an answer it gave.
type held struct {
	mu      sync.Mutex
	journal *journal
	// size is the length of the journal's file as this desk wrote it: 0 for a new session, after
	// Open and after a failed write, when the next save writes the file anew (journalfile.go).
	size int64
}

// journal is one session's state at the desk, as kept on disk.
type journal struct {
	Offers     []*offer  `json:"offers"`
	HookKeys   []string  `json:"hook_keys,omitempty"`
	LastRemind time.Time `json:"last_remind"`
	// Inbox is what the session last said is unread in its agent's inbox (nil: it has not).
	Inbox *workflows.DeskInboxRequest `json:"inbox,omitempty"`
}

// offer is one standing offer and what became of it.
type offer struct {
	Key      string                      `json:"key"`
	Messages []workflows.DeliveryRequest `json:"messages"`
	State    string                      `json:"state"`
	// Taken: by which hook run, for which event, when; Committed: the hook printed it.
	Taken     *workflows.StandingTaken `json:"taken,omitempty"`
	Committed bool                     `json:"committed,omitempty"`
	// TakenSent and CommitSent: the session has that word.
	TakenSent  bool `json:"taken_sent,omitempty"`
	CommitSent bool `json:"commit_sent,omitempty"`
}

// outgoing is one word to pass on to a session (a report, a take, or a commit); done notes in
// the journal (under the session's lock) that the server took it, the journal is saved once after the
// dones of a batch, and sent runs after that save.
type outgoing struct {
	session string
	event   *workflows.AgentEvent
	taken   *workflows.StandingTaken
	commit  string
	context *workflows.DeliveryRequest
	done    func()
	sent    func()
}

// Open loads the journals under dir and returns the desk; what its journals say was not passed
// on yet goes out once Run runs.
func Open(dir string, signal Signal, log *zap.Logger) (*Desk, error) {
	if log == nil {
		log = zap.NewNop()
	}
	d := &Desk{dir: dir, signal: signal, log: log, now: time.Now, write: private.WriteFileAtomic, appendTo: appendJournal, sessions: map[string]*held{}, wake: make(chan struct{}, 1)}
	if err := d.convertLegacy(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("hook desk: %w", err)
	}
	for _, e := range entries {
		session, ok := journalSession(e.Name(), journalExt)
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("hook desk: %w", err)
		}
		j, err := lastJournal(data)
		if err != nil {
			if err := d.setAside(e.Name(), err); err != nil {
				return nil, err
			}
			continue
		}
		d.sessions[session] = &held{journal: &j}
		for _, o := range j.Offers {
			if o.Taken != nil && !o.TakenSent {
				d.sendTaken(session, o)
			}
			if o.Committed && !o.CommitSent {
				d.sendCommit(session, o, nil)
			}
		}
	}
	if err := d.applyRecorded(); err != nil {
		return nil, err
	}
	return d, nil
}

// convertLegacy saves each journal of the single-document form as a journal file of the current
// form (JSON lines, save's first write) and removes it; one that cannot be read is set aside.
func (d *Desk) convertLegacy() error {
	entries, err := os.ReadDir(d.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hook desk: %w", err)
	}
	for _, e := range entries {
		session, ok := journalSession(e.Name(), legacyExt)
		if !ok {
			continue
		}
		path := filepath.Join(d.dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("hook desk: %w", err)
		}
		var j journal
		if err := json.Unmarshal(data, &j); err != nil {
			if err := d.setAside(e.Name(), err); err != nil {
				return err
			}
			continue
		}
		if err := d.save(session, &held{journal: &j}); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("hook desk: journal %s: %w", e.Name(), err)
		}
	}
	return nil
}

// setAside moves an unreadable journal file aside, for a look, not in the way: the worker starts,
// and what the journal held is not known (an offer a hook took before could be typed too).
func (d *Desk) setAside(name string, cause error) error {
	aside := filepath.Join(d.dir, name+".unreadable")
	d.log.Error("hook desk: journal unreadable; set aside, its offers are forgotten", zap.String("journal", name), zap.String("kept_as", aside), zap.Error(cause))
	if err := os.Rename(filepath.Join(d.dir, name), aside); err != nil {
		return fmt.Errorf("hook desk: set aside unreadable journal %s: %w", name, err)
	}
	return nil
}

// Refuse makes the desk take no new offers (its socket could not serve): the sessions' hooks
// take through the workflows. Withdrawals are still answered from the journal. What the sessions
// said is unread in their agents' inboxes is forgotten: told that this desk serves no hooks, they
// tell it nothing more, and a later worker's desk reads the inboxes rather than name a stale word.
func (d *Desk) Refuse() {
	d.closed.Store(true)
	d.mu.Lock()
	sessions := slices.Collect(maps.Keys(d.sessions))
	d.mu.Unlock()
	// Each session is looked at under its lock, after closed is set: a word that came in before
	// is cleared here, and none comes in after.
	for _, session := range sessions {
		h := d.lock(session)
		if h.journal.Inbox != nil {
			h.journal.Inbox = nil
			d.saveQuietly(session, h)
		}
		h.mu.Unlock()
	}
}

// lock takes a session's lock and returns what it holds (a new journal when it has none); the
// caller unlocks h.mu.
func (d *Desk) lock(session string) *held {
	d.mu.Lock()
	h := d.sessions[session]
	if h == nil {
		h = &held{journal: &journal{}}
		d.sessions[session] = h
	}
	d.mu.Unlock()
	h.mu.Lock()
	return h
}

// save keeps a session's journal in its file (private; safe from a crash of any process before
// it returns; not fsynced: a power loss ends the agents whose takes it keeps, and every take,
// commit and offer writes it, under the session's lock): appended as a line, or the file
// written anew (journalfile.go).
func (d *Desk) save(session string, h *held) error {
	data, err := json.Marshal(h.journal)
	if err != nil {
		return fmt.Errorf("hook desk: journal of %s: %w", session, err)
	}
	line := append(data, '\n')
	path := journalPath(d.dir, session)
	if h.size > 0 && h.size+int64(len(line)) <= maxJournalFile {
		if err := d.appendTo(path, line); err == nil {
			h.size += int64(len(line))
			return nil
		}
		// Written anew: the failed append may have left part of its line.
	}
	if err := d.write(path, line); err != nil {
		h.size = 0
		return fmt.Errorf("hook desk: journal of %s: %w", session, err)
	}
	h.size = int64(len(line))
	return nil
}

// find is the offer key names, nil if the journal has none.
func (j *journal) find(key string) *offer {
	for _, o := range j.Offers {
		if o.Key == key {
			return o
		}
	}
	return nil
}

// trim keeps the latest keepOffers offers, and every one whose word is still out.
func (j *journal) trim() {
	for len(j.Offers) > keepOffers {
		i := slices.IndexFunc(j.Offers, func(o *offer) bool {
			return o.State == stateWithdrawn || (o.TakenSent && (o.CommitSent || !o.Committed))
		})
		if i < 0 || i >= len(j.Offers)-keepOffers/2 {
			return
		}
		j.Offers = slices.Delete(j.Offers, i, i+1)
	}
}

// Publish keeps a session's standing offer for its next hook (the activity
// workflows.DeskPublishName). The same offer again changes nothing, the same key with other
// messages is refused (ErrTypeOfferChanged); an older offer still open is withdrawn (the session
// asks for one at a time).
func (d *Desk) Publish(_ context.Context, req workflows.DeskPublishRequest) error {
	if req.Session == "" || req.Key == "" || len(req.Messages) == 0 {
		return temporal.NewNonRetryableApplicationError("standing offer without a session, key or messages", "InvalidStandingOffer", nil)
	}
	h, err := d.lockServing(req.Session)
	if err != nil {
		return err
	}
	defer h.mu.Unlock()
	j := h.journal
	if o := j.find(req.Key); o != nil {
		if !slices.Equal(requestIDs(o.Messages), requestIDs(req.Messages)) {
			// A key's content never changes (issue 32): a session that asks so is told, takes
			// the offer back, and learns from the withdrawal what a hook holds under it.
			return temporal.NewNonRetryableApplicationError("standing offer "+req.Key+" already holds other messages", ErrTypeOfferChanged, nil)
		}
		return nil
	}
	before := slices.Clone(j.Offers)
	for _, o := range j.Offers {
		if o.State == stateOpen {
			o.State = stateWithdrawn
		}
	}
	j.Offers = append(j.Offers, &offer{Key: req.Key, Messages: req.Messages, State: stateOpen})
	j.trim()
	if err := d.save(req.Session, h); err != nil {
		j.Offers = before
		return err
	}
	return nil
}

// lockServing is lock, unless the desk serves no hooks (Refuse): then it says so
// (workflows.ErrTypeNoDesk: the session goes without the desk) and holds no lock.
func (d *Desk) lockServing(session string) (*held, error) {
	h := d.lock(session)
	if d.closed.Load() {
		h.mu.Unlock()
		return nil, temporal.NewNonRetryableApplicationError("the hook desk does not serve hooks", workflows.ErrTypeNoDesk, nil)
	}
	return h, nil
}

// KnowInbox keeps what a session says is unread in its agent's inbox (the activity
// workflows.DeskInboxName), for the agent's Stop hook; a word older than the one kept (an
// attempt that arrives late) changes nothing.
func (d *Desk) KnowInbox(_ context.Context, req workflows.DeskInboxRequest) error {
	if req.Session == "" {
		return temporal.NewNonRetryableApplicationError("inbox word without a session", "InvalidInboxWord", nil)
	}
	h, err := d.lockServing(req.Session)
	if err != nil {
		return err
	}
	defer h.mu.Unlock()
	j := h.journal
	if j.Inbox != nil && req.At.Before(j.Inbox.At) {
		return nil
	}
	before := j.Inbox
	j.Inbox = &req
	if err := d.save(req.Session, h); err != nil {
		j.Inbox = before
		return err
	}
	return nil
}

// UnreadInbox is what the session of agent last said is unread in the agent's inbox; ok is false
// when it has said nothing (the hook asks the server).
func (d *Desk) UnreadInbox(agent string) (u workflows.InboxUnread, ok bool) {
	d.mu.Lock()
	h := d.sessions[agent]
	d.mu.Unlock()
	if h == nil {
		return workflows.InboxUnread{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	j := h.journal
	if j.Inbox == nil {
		return workflows.InboxUnread{}, false
	}
	return j.Inbox.Unread, true
}

// Withdraw takes a standing offer back for its session (the activity
// workflows.DeskWithdrawName): withdrawn when no hook took it (none can now), else who took it.
// An offer this desk never got may be at another worker's desk, in a hook's hands: it counts
// as taken (workflows.UnknownOfferTaken), so the worst case is a late delivery, never a second.
func (d *Desk) Withdraw(_ context.Context, req workflows.DeskWithdrawRequest) (workflows.DeskWithdrawResult, error) {
	h := d.lock(req.Session)
	defer h.mu.Unlock()
	o := h.journal.find(req.Key)
	switch {
	case o == nil:
		return workflows.UnknownOfferTaken(req.Key, d.now()), nil
	case o.State == stateWithdrawn:
		return workflows.DeskWithdrawResult{Withdrawn: true}, nil
	case o.State == stateTaken:
		t := *o.Taken
		return workflows.DeskWithdrawResult{Taken: &t}, nil
	}
	o.State = stateWithdrawn
	if err := d.save(req.Session, h); err != nil {
		o.State = stateOpen
		return workflows.DeskWithdrawResult{}, err
	}
	return workflows.DeskWithdrawResult{Withdrawn: true}, nil
}

// Take is a hook's take: the session's standing offer, if one is open, now this hook run's
// (once per run key), and whether the hook's reminder of old intents is due (at most one per
// req.RemindEvery). The take is also the hook's report of its event.
func (d *Desk) Take(session string, req workflows.TakeRequest) (workflows.TakeResult, error) {
	if session == "" || req.Key == "" {
		return workflows.TakeResult{}, errors.New("take without a session or key")
	}
	h := d.lock(session)
	defer h.mu.Unlock()
	j := h.journal
	now := d.now()
	d.report(session, workflows.AgentEvent{Event: req.Event, At: now, Detail: req.Detail, Receipt: req.Receipt})
	res := workflows.TakeResult{Key: req.Key}
	if slices.Contains(j.HookKeys, req.Key) {
		return res, nil
	}
	before := *j
	j.HookKeys = append(slices.Clone(j.HookKeys), req.Key)
	if n := len(j.HookKeys); n > keepHookKeys {
		j.HookKeys = j.HookKeys[n-keepHookKeys:]
	}
	if req.RemindEvery > 0 && now.Sub(j.LastRemind) >= req.RemindEvery {
		j.LastRemind, res.RemindDue = now, true
	}
	var took *offer
	if i := slices.IndexFunc(j.Offers, func(o *offer) bool { return o.State == stateOpen }); i >= 0 && delivers(req.Event) && !req.RemindOnly {
		took = j.Offers[i]
		took.State = stateTaken
		took.Taken = &workflows.StandingTaken{Key: took.Key, Hook: req.Key, Event: req.Event, At: now, IDs: requestIDs(took.Messages)}
		res.Key, res.Messages = took.Key, took.Messages
	}
	if err := d.save(session, h); err != nil {
		*j = before
		if took != nil {
			took.State, took.Taken = stateOpen, nil
		}
		return workflows.TakeResult{}, err
	}
	if took != nil {
		d.sendTaken(session, took)
	}
	return res, nil
}

// requestIDs are the IDs of msgs, in order: what a taken offer handed out, said to the session.
func requestIDs(msgs []workflows.DeliveryRequest) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

// delivers reports whether a hook event hands messages over (as the session's take update).
func delivers(event string) bool {
	switch event {
	case workflows.EventPostToolUse, workflows.EventStop, workflows.EventUserPromptSubmit, workflows.EventSessionStart:
		return true
	}
	return false
}

// Commit records that the hook printed what it took and passes the commit on. A key the desk
// does not know (a take through the workflow) is passed on too.
func (d *Desk) Commit(session, key string) error {
	if session == "" || key == "" {
		return errors.New("commit without a session or key")
	}
	h := d.lock(session)
	defer h.mu.Unlock()
	return d.commit(session, h, key, nil)
}

// commit is Commit under the session's lock (h what it holds); sent (when set) runs once the
// session has the commit, or at once when the journal already had it.
func (d *Desk) commit(session string, h *held, key string, sent func()) error {
	o := h.journal.find(key)
	if o == nil {
		d.enqueue(outgoing{session: session, commit: key, sent: sent})
		return nil
	}
	if o.Committed {
		switch {
		case sent == nil:
		case o.CommitSent:
			sent()
		default:
			d.enqueue(outgoing{session: session, commit: key, sent: sent})
		}
		return nil
	}
	o.Committed = true
	if err := d.save(session, h); err != nil {
		o.Committed = false
		return err
	}
	d.sendCommit(session, o, sent)
	return nil
}

// Report passes a hook's report on to its session.
func (d *Desk) Report(session string, ev workflows.AgentEvent) error {
	if session == "" || ev.Event == "" {
		return errors.New("report without a session or event")
	}
	if ev.At.IsZero() {
		ev.At = d.now()
	}
	d.report(session, ev)
	return nil
}

// Context passes on a block a hook printed that no take handed over (the intents a session
// start lists), for the session's history.
func (d *Desk) Context(session, id, text string) error {
	if session == "" || id == "" {
		return errors.New("context without a session or id")
	}
	d.enqueue(outgoing{session: session, context: &workflows.DeliveryRequest{ID: id, Kind: workflows.KindContext, Text: text}})
	return nil
}

func (d *Desk) report(session string, ev workflows.AgentEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	reports := 0
	for _, o := range d.out {
		if o.event != nil {
			reports++
		}
	}
	if reports >= maxReports {
		i := slices.IndexFunc(d.out, func(o outgoing) bool { return o.event != nil })
		d.out = slices.Delete(d.out, i, i+1)
	}
	d.push(outgoing{session: session, event: &ev})
}

func (d *Desk) sendTaken(session string, o *offer) {
	t := *o.Taken
	d.enqueue(outgoing{session: session, taken: &t, done: func() { o.TakenSent = true }})
}

func (d *Desk) sendCommit(session string, o *offer, sent func()) {
	d.enqueue(outgoing{session: session, commit: o.Key, done: func() { o.CommitSent = true }, sent: sent})
}

// saveQuietly keeps that a word went out; should that fail, the word goes out again after a
// restart, which the session bears.
func (d *Desk) saveQuietly(session string, h *held) {
	if err := d.save(session, h); err != nil {
		d.log.Warn("hook desk: journal not kept", zap.String("session", session), zap.Error(err))
	}
}

// enqueue adds a word to what waits to go out.
func (d *Desk) enqueue(o outgoing) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.push(o)
}

// push is enqueue under mu.
func (d *Desk) push(o outgoing) {
	d.out = append(d.out, o)
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run passes the desk's words on to the sessions until ctx ends: everything that waits for a
// session goes in one signal (workflows.SignalHookWords), retried until the server takes it; a
// session that no longer runs needs none.
func (d *Desk) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for {
		sent, err := d.passOn(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			d.log.Warn("hook desk: words to a session not passed on yet; retrying", zap.Error(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		case sent:
			backoff = 100 * time.Millisecond
		default:
			select {
			case <-ctx.Done():
				return
			case <-d.wake:
			}
		}
	}
}

// Flush passes on what waits now (the commits the journals and the hooks' records hold), before
// it returns: the worker calls it before its workflows run, so a session reads every commit a
// hook made before it looks at any lease or types anything (issue 32).
func (d *Desk) Flush(ctx context.Context) error {
	for {
		sent, err := d.passOn(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("hook desk: commits not passed on to the sessions: %w", err)
		case err != nil:
			select {
			case <-ctx.Done():
				return fmt.Errorf("hook desk: commits not passed on to the sessions: %w", err)
			case <-time.After(200 * time.Millisecond):
			}
		case !sent:
			return nil
		}
	}
}

// PassOn passes on what waits now, before it returns (Flush): a session asked what its agent had
// counts the commits hooks made moments ago.
func (d *Desk) PassOn(ctx context.Context) error { return d.Flush(ctx) }

// passOn sends what waits for one session in one signal; it reports whether there was any.
func (d *Desk) passOn(ctx context.Context) (bool, error) {
	d.passing.Lock()
	defer d.passing.Unlock()
	d.mu.Lock()
	var batch, rest []outgoing
	most := d.most
	for _, o := range d.out {
		if (len(batch) == 0 || o.session == batch[0].session) && (most == 0 || len(batch) < most) {
			batch = append(batch, o)
		} else {
			rest = append(rest, o)
		}
	}
	d.out = rest
	d.mu.Unlock()
	if len(batch) == 0 {
		return false, nil
	}
	var words workflows.HookWords
	for _, o := range batch {
		switch {
		case o.event != nil:
			words.Events = append(words.Events, *o.event)
		case o.taken != nil:
			words.Taken = append(words.Taken, *o.taken)
		case o.commit != "":
			words.Commits = append(words.Commits, o.commit)
		case o.context != nil:
			words.Contexts = append(words.Contexts, *o.context)
		}
	}
	session := batch[0].session
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	// The words need no fsync of their own (tclient.CommitLater): the desk's journal keeps them
	// across a crash, and a power loss ends the agents they are about.
	err := d.signal(tclient.CommitLater(sctx), workflows.SessionWorkflowID(session), workflows.SignalHookWords, words)
	cancel()
	var notFound *serviceerror.NotFound
	var refused *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &refused) && len(batch) > 1:
		// Refused for good (over the server's size limit): the batch goes again in halves, so
		// one word too large never holds the others back.
		d.mu.Lock()
		d.out, d.most = append(batch, d.out...), (len(batch)+1)/2
		d.mu.Unlock()
		d.log.Warn("hook desk: words refused by the server; passed on in smaller batches", zap.String("session", session), zap.Int("words", len(batch)), zap.Error(err))
		return true, nil
	case errors.As(err, &refused):
		d.log.Error("hook desk: a word the server refuses for good is set aside; the others go on", zap.String("session", session),
			zap.Int("events", len(words.Events)), zap.Int("taken", len(words.Taken)), zap.Strings("commits", words.Commits), zap.Int("contexts", len(words.Contexts)), zap.Error(err))
		d.mu.Lock()
		d.most = 0
		d.mu.Unlock()
		return true, nil
	case err != nil && !errors.As(err, &notFound):
		d.mu.Lock()
		d.out = append(batch, d.out...) // first again, in order
		d.mu.Unlock()
		return false, fmt.Errorf("session %s, %d words: %w", session, len(batch), err)
	}
	d.mu.Lock()
	if d.most > 0 && len(d.out) == 0 {
		d.most = 0 // the backlog that was refused whole has gone out
	}
	d.mu.Unlock()
	// The session's journal keeps what went out, written once for the batch (a lock held over
	// one write per word kept the hooks waiting behind a slow disk); should that fail, the words
	// go out again after a restart, which the session bears.
	h := d.lock(session)
	defer h.mu.Unlock()
	noted := false
	for _, o := range batch {
		if o.done != nil {
			o.done()
			noted = true
		}
	}
	if noted {
		d.saveQuietly(session, h)
	}
	for _, o := range batch {
		if o.sent != nil {
			o.sent()
		}
	}
	return true, nil
}
