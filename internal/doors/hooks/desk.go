package hooks

import (
	"context"
	"errors"
	"sync"

	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/hookapi"
)

// ViaDesk is the Backend a hook uses: every call through the desk (takes, commits, reports,
// printed blocks; the lists, texts, closes and inbox sends the worker's client makes), and
// through Backend (Temporal) when the desk cannot answer.
type ViaDesk struct {
	// Desk is the worker's hook desk as a hook reaches it (desksocket.Client): answered by the
	// worker's own process and its Temporal client, no connection of the hook's own (issue 26).
	Desk Backend
	Backend
	// DataDir is where a commit the desk did not take is recorded for the next worker
	// (desksocket.RecordCommit); empty: not recorded.
	DataDir string
	mu      sync.Mutex
	// viaDesk are the keys of the takes the desk answered: their commits go to it.
	viaDesk map[string]bool
}

// ThroughDesk is the Backend of a hook of the intentq whose data_dir is dataDir: its worker's
// desk, reached with the access token, and b.
func ThroughDesk(dataDir, token string, b Backend) *ViaDesk {
	return &ViaDesk{Desk: desksocket.Client{Path: desksocket.SocketPath(dataDir), Token: token}, Backend: b, DataDir: dataDir}
}

// Take takes the session's standing offer from the desk; should the desk not answer (no worker
// here), the session itself is asked.
func (v *ViaDesk) Take(ctx context.Context, session string, req hookapi.TakeRequest) (hookapi.TakeResult, error) {
	res, err := v.Desk.Take(ctx, session, req)
	if err != nil {
		return v.Backend.Take(ctx, session, req)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.viaDesk == nil {
		v.viaDesk = map[string]bool{}
	}
	v.viaDesk[res.Key] = true
	return res, nil
}

// Taken commits a take: through the desk that answered it (it keeps the commit and passes it
// on). When the desk does not take it (the worker died after answering the take), the commit is
// recorded on disk first, for the next worker to apply before its workflows run, then sent by
// the taken signal too (the session commits its standing offer on that as well; a commit that
// arrives twice counts once). A take through the workflow commits by the signal, recorded too
// when the signal fails.
func (v *ViaDesk) Taken(ctx context.Context, session, key string) error {
	v.mu.Lock()
	desk := v.viaDesk[key]
	v.mu.Unlock()
	if desk && v.Desk.Taken(ctx, session, key) == nil {
		return nil
	}
	recorded := desk && v.record(session, key)
	if err := v.Backend.Taken(ctx, session, key); err != nil && !recorded && !v.record(session, key) {
		return err
	}
	return nil
}

// record keeps a commit on disk for the next worker; it reports whether it did.
func (v *ViaDesk) record(session, key string) bool {
	return v.DataDir != "" && desksocket.RecordCommit(v.DataDir, session, key) == nil
}

// Report reports through the desk, else by the signal.
func (v *ViaDesk) Report(ctx context.Context, session string, ev hookapi.AgentEvent) error {
	if v.Desk.Report(ctx, session, ev) == nil {
		return nil
	}
	return v.Backend.Report(ctx, session, ev)
}

// CommitContext passes a printed block on through the desk, else by the signal.
func (v *ViaDesk) CommitContext(ctx context.Context, session, id, text string) error {
	if v.Desk.CommitContext(ctx, session, id, text) == nil {
		return nil
	}
	return v.Backend.CommitContext(ctx, session, id, text)
}

// PendingPage lists pending intents through the desk (the worker's connection), else directly.
func (v *ViaDesk) PendingPage(ctx context.Context, f hookapi.Filter, limit int) (hookapi.Page, error) {
	if page, err := v.Desk.PendingPage(ctx, f, limit); err == nil {
		return page, nil
	}
	return v.Backend.PendingPage(ctx, f, limit)
}

// Unread is what is unread in an agent's inbox: as the desk knows it (its session told it), else
// as the desk or Temporal reads it.
func (v *ViaDesk) Unread(ctx context.Context, agent string) (hookapi.InboxUnread, error) {
	if u, err := v.Desk.Unread(ctx, agent); err == nil {
		return u, nil
	}
	return v.Backend.Unread(ctx, agent)
}

// Text reads an intent's full text through the desk, else directly.
func (v *ViaDesk) Text(ctx context.Context, id string) (string, error) {
	text, err := v.Desk.Text(ctx, id)
	if answered(err) {
		return text, err
	}
	return v.Backend.Text(ctx, id)
}

// Had asks the session through the desk (the worker's client); directly only when no desk took
// the call (one that took it and did not answer in time has no quicker way).
func (v *ViaDesk) Had(ctx context.Context, session string, intents []string) ([]hookapi.HadMessage, error) {
	had, err := v.Desk.Had(ctx, session, intents)
	if !unsent(err) {
		return had, err
	}
	return v.Backend.Had(ctx, session, intents)
}

// Close closes an intent through the desk; directly only when the desk did not take the call.
func (v *ViaDesk) Close(ctx context.Context, id string) error {
	if err := v.Desk.Close(ctx, id); !unsent(err) {
		return err
	}
	return v.Backend.Close(ctx, id)
}

// CloseOldest closes a chat's oldest pending intent through the desk; directly only when the
// desk did not take the call (made twice, it would close two).
func (v *ViaDesk) CloseOldest(ctx context.Context, chat string) (string, error) {
	id, err := v.Desk.CloseOldest(ctx, chat)
	if !unsent(err) {
		return id, err
	}
	return v.Backend.CloseOldest(ctx, chat)
}

// SendInbox sends an agent's message through the desk; directly only when the desk did not take
// the call.
func (v *ViaDesk) SendInbox(ctx context.Context, agent string, msg hookapi.InboxSend) error {
	if err := v.Desk.SendInbox(ctx, agent, msg); !unsent(err) {
		return err
	}
	return v.Backend.SendInbox(ctx, agent, msg)
}

// answered says whether a read through the desk has its answer: done, or refused for a reason
// the hook acts on (no such intent). Any other error reads the other way.
func answered(err error) bool {
	return err == nil || errors.Is(err, hookapi.ErrNotFound) || errors.Is(err, hookapi.ErrNotOpen)
}

// unsent says whether a call that changes something never reached a desk that does it: no desk
// answered the socket, or the desk does not know the call (an older worker). A call that timed
// out waiting for its answer may have been done: it is not made again.
func unsent(err error) bool {
	return errors.Is(err, desksocket.ErrNoDesk) || errors.Is(err, desksocket.ErrUnknownCall)
}

// Lazy is a Backend that dials on its first call: a hook that only takes and commits through
// the desk never waits for a connection to Temporal. closeFn closes what was dialed.
func Lazy(dial Dial) (b Backend, closeFn func()) {
	l := &lazy{dial: dial}
	return l, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.close != nil {
			l.close()
		}
	}
}

type lazy struct {
	dial  Dial
	mu    sync.Mutex
	b     Backend
	close func()
	err   error
}

// get dials once; a failed dial is not tried again by the same hook.
func (l *lazy) get(ctx context.Context) (Backend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b == nil && l.err == nil {
		l.b, l.close, l.err = l.dial(ctx)
	}
	return l.b, l.err
}

// call runs fn on the dialed backend (dialing it the first time).
func call[T any](l *lazy, ctx context.Context, fn func(Backend) (T, error)) (T, error) {
	b, err := l.get(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	return fn(b)
}

// done is call for the calls that return only an error.
func done(l *lazy, ctx context.Context, fn func(Backend) error) error {
	_, err := call(l, ctx, func(b Backend) (struct{}, error) { return struct{}{}, fn(b) })
	return err
}

func (l *lazy) PendingPage(ctx context.Context, f hookapi.Filter, limit int) (hookapi.Page, error) {
	return call(l, ctx, func(b Backend) (hookapi.Page, error) { return b.PendingPage(ctx, f, limit) })
}

func (l *lazy) Text(ctx context.Context, id string) (string, error) {
	return call(l, ctx, func(b Backend) (string, error) { return b.Text(ctx, id) })
}

func (l *lazy) Close(ctx context.Context, id string) error {
	return done(l, ctx, func(b Backend) error { return b.Close(ctx, id) })
}

func (l *lazy) CloseOldest(ctx context.Context, chat string) (string, error) {
	return call(l, ctx, func(b Backend) (string, error) { return b.CloseOldest(ctx, chat) })
}

func (l *lazy) Unread(ctx context.Context, agent string) (hookapi.InboxUnread, error) {
	return call(l, ctx, func(b Backend) (hookapi.InboxUnread, error) { return b.Unread(ctx, agent) })
}

func (l *lazy) SendInbox(ctx context.Context, agent string, msg hookapi.InboxSend) error {
	return done(l, ctx, func(b Backend) error { return b.SendInbox(ctx, agent, msg) })
}

func (l *lazy) CommitContext(ctx context.Context, session, id, text string) error {
	return done(l, ctx, func(b Backend) error { return b.CommitContext(ctx, session, id, text) })
}

func (l *lazy) Report(ctx context.Context, session string, ev hookapi.AgentEvent) error {
	return done(l, ctx, func(b Backend) error { return b.Report(ctx, session, ev) })
}

func (l *lazy) Take(ctx context.Context, session string, req hookapi.TakeRequest) (hookapi.TakeResult, error) {
	return call(l, ctx, func(b Backend) (hookapi.TakeResult, error) { return b.Take(ctx, session, req) })
}

func (l *lazy) Had(ctx context.Context, session string, intents []string) ([]hookapi.HadMessage, error) {
	return call(l, ctx, func(b Backend) ([]hookapi.HadMessage, error) { return b.Had(ctx, session, intents) })
}

func (l *lazy) Taken(ctx context.Context, session, key string) error {
	return done(l, ctx, func(b Backend) error { return b.Taken(ctx, session, key) })
}
