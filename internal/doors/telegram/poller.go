// Package telegram is intentq's Telegram door: it long-polls the Bot API and records every
// message the allowlist lets in as an intent (SPEC I1, I4): with both lists set, one from an
// allowed user in an allowed chat; with one list, that list decides.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// Recorder records messages; *intent.Recorder is the real one. Start runs for several
// messages at once; QueueDeliveries then queues a batch's deliveries in arrival order.
type Recorder interface {
	Start(ctx context.Context, m intent.Message) (intent.Result, error)
	QueueDeliveries(ctx context.Context, results []*intent.Result)
}

// DefaultConcurrency is how many intents of one getUpdates batch are started at once. A batch
// is recorded whole before the next is read (the offset moves only then), so its slowest starts
// leave the server idle at each batch's end: with 16 the door recorded a burst at 0.67-0.79x the
// server's own rate for starts (16 in flight, back to back), with 64 at 0.83-1.03x (issue 26).
const DefaultConcurrency = 64

// Options configure the poller.
type Options struct {
	Token config.Secret
	// Endpoint is telegram-bot-api's endpoint format; empty means api.telegram.org.
	Endpoint string
	// AllowedChats and AllowedUsers are the allowlist: with both set, a message needs an allowed
	// chat AND an allowed user (in an allowed group, only the listed members get in); with one
	// set, that one decides; with neither, nothing is recorded.
	AllowedChats []int64
	AllowedUsers []int64
	Recorder     Recorder
	Logger       *zap.Logger
	// PollTimeout is the long-polling timeout (default 30 s).
	PollTimeout time.Duration
	// MaxBackoff caps the wait between failed calls (default 60 s).
	MaxBackoff time.Duration
	// Concurrency bounds the intents started at once (default DefaultConcurrency).
	Concurrency int
	// StatusFile, when set, keeps the poller's conflict state for doctor (PollerStatus).
	StatusFile string
	// Alert, when set, is told once when another poller takes the bot token (409 Conflict).
	Alert func(ctx context.Context, title, message string)
	// Control, when set, answers the person's commands (/pending, /cancel, /status) at the
	// door, through Reply (chat, the command's message, the answer, a key that sends it once).
	Control Control
	Reply   func(ctx context.Context, chat, replyTo, text, key string) error
	// Edit, when set, takes a person's edit of a message (the message as edited: its chat, ID,
	// new text, sender, and SentAt the edit's date) and says what to tell them ("" nothing);
	// unset, edits are logged and passed over.
	Edit func(ctx context.Context, edited intent.Message) string
	// SenderOf, when set, names the session that sent a bot message (chat, message): a
	// person's reply to it goes to that session (issue 36).
	SenderOf func(chat string, msg int) string
}

// PollerStatus is what the poller keeps in Options.StatusFile.
type PollerStatus struct {
	// ConflictSince is when getUpdates began answering 409 Conflict (another poller holds the
	// token); nil while polling works. LastConflictAt is the latest such answer.
	ConflictSince  *time.Time `json:"conflict_since,omitempty"`
	LastConflictAt *time.Time `json:"last_conflict_at,omitempty"`
	// LastPollAt is the last successful getUpdates.
	LastPollAt *time.Time `json:"last_poll_at,omitempty"`
}

// ReadPollerStatus reads a poller's status file; the zero status when there is none.
func ReadPollerStatus(path string) (PollerStatus, error) {
	var st PollerStatus
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("telegram poller status: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("telegram poller status %s: %w", path, err)
	}
	return st, nil
}

// setStatus updates the status file (best effort: it only informs doctor).
func (p *Poller) setStatus(change func(*PollerStatus)) {
	change(&p.status)
	if p.opts.StatusFile == "" {
		return
	}
	data, _ := json.Marshal(p.status)
	if err := private.WriteFile(p.opts.StatusFile, data); err != nil {
		p.log.Warn("telegram poller status not kept", zap.Error(err))
	}
}

// conflict notes a 409: the first of a streak is pushed once with what to do.
func (p *Poller) conflict(ctx context.Context) {
	now := time.Now().UTC()
	first := p.status.ConflictSince == nil
	p.setStatus(func(st *PollerStatus) {
		if st.ConflictSince == nil {
			st.ConflictSince = &now
		}
		st.LastConflictAt = &now
	})
	if first && p.opts.Alert != nil {
		p.opts.Alert(ctx, "intentq: another Telegram poller", "getUpdates answers 409 Conflict: another program polls this bot token "+
			"(the Claude Code Telegram plugin started with --channels, or a second worker). Use one poller per token: stop the other, "+
			"or drop telegram.token and keep the plugin. intentq keeps retrying and resumes recording when it is alone.")
	}
}

// Poller long-polls getUpdates and records messages. The offset only moves past an update once
// its intent workflow is started (or it can never be recorded), so a crash re-reads it.
type Poller struct {
	opts   Options
	status PollerStatus
	bot    *tgbotapi.BotAPI
	log    *zap.Logger
	chats  map[int64]bool
	users  map[int64]bool
	offset int
	// ctx of the running poll, used by the HTTP client so shutdown interrupts a long poll.
	ctx context.Context
	// lane queues the deliveries of recorded batches, batch after batch (runLane), while the
	// door reads and starts the next: nil while Run does not run (queued at once).
	lane chan laneJob
}

// laneJob is one batch's deliveries for the lane; done closes once they and every batch's
// before them are queued (a job without results only waits for those before it).
type laneJob struct {
	results []*intent.Result
	done    chan struct{}
}

// laneDepth is how many batches may wait in the lane before the door waits for it.
const laneDepth = 4

// laneTimeout bounds the queueing of one batch's deliveries; it outlives the door's context,
// so a batch whose offset has moved is still queued at shutdown (else Recover does it at the
// next start, and its intents ask for themselves after their wait).
const laneTimeout = 30 * time.Second

// runLane queues each job's deliveries in the order the jobs came, until jobs closes. The jobs
// that wait behind the one it takes are queued with it, in order: each session gets one signal
// for all of them. Under a 50-session burst the door recorded a batch faster than the lane sent
// its 50 sessions their signals, and then waited for the lane (issue 38).
func (p *Poller) runLane(ctx context.Context, jobs <-chan laneJob) {
	for job := range jobs {
		batch := append([]laneJob{job}, waiting(jobs)...)
		var results []*intent.Result
		for _, j := range batch {
			results = append(results, j.results...)
		}
		if len(results) > 0 {
			qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), laneTimeout)
			p.opts.Recorder.QueueDeliveries(qctx, results)
			cancel()
		}
		for _, j := range batch {
			close(j.done)
		}
	}
}

// waiting takes the jobs that wait in the lane now, without waiting for more.
func waiting(jobs <-chan laneJob) []laneJob {
	var more []laneJob
	for {
		select {
		case job, ok := <-jobs:
			if !ok {
				return more
			}
			more = append(more, job)
		default:
			return more
		}
	}
}

// queueDeliveries hands a recorded batch's deliveries to the lane (queues them at once when
// Run does not run); it waits only while the lane is full.
func (p *Poller) queueDeliveries(ctx context.Context, results []*intent.Result) {
	if p.lane == nil {
		p.opts.Recorder.QueueDeliveries(ctx, results)
		return
	}
	p.lane <- laneJob{results: results, done: make(chan struct{})}
}

// flush waits until every batch handed to the lane has been queued: a command, a button or an
// edit may concern a message of those batches, and must reach its session after it.
func (p *Poller) flush() {
	if p.lane == nil {
		return
	}
	done := make(chan struct{})
	p.lane <- laneJob{done: done}
	<-done
}

// New builds a poller. It does not contact Telegram: a network that is down at start is just
// the first error Run backs off from.
func New(opts Options) *Poller {
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = 30 * time.Second
	}
	// Telegram takes whole seconds; below one second would be a busy short-poll loop.
	opts.PollTimeout = max(opts.PollTimeout, time.Second)
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 60 * time.Second
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	p := &Poller{opts: opts, log: opts.Logger.Named("telegram"), chats: map[int64]bool{}, users: map[int64]bool{}, ctx: context.Background()}
	for _, id := range opts.AllowedChats {
		p.chats[id] = true
	}
	for _, id := range opts.AllowedUsers {
		p.users[id] = true
	}
	endpoint := opts.Endpoint
	if endpoint == "" {
		endpoint = tgbotapi.APIEndpoint
	}
	p.bot = &tgbotapi.BotAPI{
		Token:  opts.Token.Reveal(),
		Client: ctxClient{p: p, client: &http.Client{Timeout: opts.PollTimeout + 15*time.Second}},
		Buffer: 100,
	}
	p.bot.SetAPIEndpoint(endpoint)
	return p
}

// ctxClient ties every Bot API request to the poller's context.
type ctxClient struct {
	p      *Poller
	client *http.Client
}

// Do sends req. An answer that is not the Bot API's JSON (a proxy's 502 page, a 500 from a
// server in trouble) becomes an error with the HTTP status, rather than a JSON parse error;
// the Bot API's own errors (400, 401, 409, 429: JSON with error_code) pass through.
func (c ctxClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.client.Do(req.WithContext(c.p.ctx))
	if err != nil || resp.StatusCode < 500 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	if resp.StatusCode < 300 && resp.Header.Get("Content-Type") == "" {
		return resp, nil // a minimal server that sets no type: let the JSON decoder judge
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return nil, &HTTPError{Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
}

// HTTPError is an answer from the Bot API endpoint that is not its JSON.
type HTTPError struct {
	Status int
	Body   string // the start of the body, for the log
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("HTTP %d %s from the Bot API endpoint: %.120q", e.Status, http.StatusText(e.Status), e.Body)
}

// Run polls until ctx ends.
func (p *Poller) Run(ctx context.Context) error {
	p.ctx = ctx
	jobs := make(chan laneJob, laneDepth)
	laneDone := make(chan struct{})
	go func() {
		defer close(laneDone)
		p.runLane(ctx, jobs)
	}()
	p.lane = jobs
	defer func() {
		p.lane = nil
		close(jobs)
		<-laneDone
	}()
	p.log.Info("telegram poller started", zap.Int("allowed_chats", len(p.chats)), zap.Int("allowed_users", len(p.users)))
	if p.opts.Control != nil {
		p.registerCommands()
	}
	failures := 0
	for ctx.Err() == nil {
		updates, err := p.getUpdates()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			var apiErr *tgbotapi.Error
			if errors.As(err, &apiErr) && apiErr.Code == http.StatusConflict {
				p.conflict(ctx)
			}
			wait := p.backoff(err, failures)
			p.log.Warn("getUpdates failed", zap.Error(p.redact(err)), zap.Int("failures", failures), zap.Duration("retry_in", wait))
			sleep(ctx, wait)
			continue
		}
		failures = 0
		if p.status.ConflictSince != nil {
			p.log.Info("telegram poller alone again: recording resumes", zap.Time("conflict_since", *p.status.ConflictSince))
		}
		now := time.Now().UTC()
		if p.status.ConflictSince != nil || p.status.LastPollAt == nil || now.Sub(*p.status.LastPollAt) > time.Minute {
			p.setStatus(func(st *PollerStatus) { st.ConflictSince, st.LastPollAt = nil, &now })
		} else {
			p.status.LastPollAt = &now
		}
		p.handleBatch(ctx, updates)
	}
	p.log.Info("telegram poller stopped", zap.Int("offset", p.offset))
	return nil
}

// Offset is the next update ID the poller asks for.
func (p *Poller) Offset() int { return p.offset }

func (p *Poller) getUpdates() ([]json.RawMessage, error) {
	params := tgbotapi.Params{}
	params.AddNonZero("offset", p.offset)
	params.AddNonZero("limit", 100)
	params.AddNonZero("timeout", int(p.opts.PollTimeout/time.Second))
	resp, err := p.bot.MakeRequest("getUpdates", params)
	if err != nil {
		return nil, err
	}
	var updates []json.RawMessage
	if err := json.Unmarshal(resp.Result, &updates); err != nil {
		return nil, fmt.Errorf("getUpdates result is not a list: %w", err)
	}
	return updates, nil
}

// backoff picks the wait after a failed call: Telegram's retry_after for 429, a long pause for a
// conflicting poller (409) or a bad token (401), else exponential from 1 s up to MaxBackoff.
func (p *Poller) backoff(err error, failures int) time.Duration {
	var apiErr *tgbotapi.Error
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.Code == http.StatusTooManyRequests && apiErr.RetryAfter > 0:
			return time.Duration(apiErr.RetryAfter) * time.Second
		case apiErr.Code == http.StatusConflict:
			p.log.Error("another poller uses this bot token (409 Conflict): use either the Claude Code plugin or intentq as the poller")
		case apiErr.Code == http.StatusUnauthorized:
			p.log.Error("Telegram rejects the bot token (401): check telegram.token")
			return p.opts.MaxBackoff
		}
	}
	d := time.Second << min(failures-1, 10)
	return min(d, p.opts.MaxBackoff)
}

// item is one update of a batch on its way to becoming an intent.
type item struct {
	updateID int
	msg      *intent.Message // nil: nothing to record (skipped, logged)
	cmd      *Command        // a command the door answers (nothing is recorded)
	edit     *intent.Message // a person's edit of a message recorded before
	press    *tgbotapi.CallbackQuery
	res      intent.Result
	recorded bool
}

// handleBatch records a getUpdates batch: intents are started concurrently, their deliveries
// handed to the lane (queued there in arrival order, behind the door), and then the offset
// moves past the batch. If ctx ends before the intents are started, the offset stays and the
// batch is read again (starting is idempotent).
func (p *Poller) handleBatch(ctx context.Context, updates []json.RawMessage) {
	items := make([]*item, 0, len(updates))
	seen := map[[2]string]bool{}
	for _, raw := range updates {
		it := p.parse(raw)
		if it == nil {
			continue
		}
		if it.msg != nil {
			// The same message twice in one batch: the first copy is recorded, so the intent
			// keeps its place in arrival order; later copies are duplicates anyway.
			key := [2]string{it.msg.ChatID, it.msg.MessageID}
			if seen[key] {
				p.log.Info("duplicate message in batch passed over", zap.Int("update_id", it.updateID),
					zap.String("chat", it.msg.ChatID), zap.String("message", it.msg.MessageID))
				it.msg = nil
			}
			seen[key] = true
		}
		items = append(items, it)
	}
	var g errgroup.Group
	g.SetLimit(p.opts.Concurrency)
	for _, it := range items {
		if it.msg == nil {
			continue
		}
		g.Go(func() error {
			it.res, it.recorded = p.start(ctx, it.updateID, *it.msg)
			return nil
		})
	}
	_ = g.Wait()
	// The offset moves past the recorded prefix of the batch, whose deliveries are queued
	// together, in arrival order; the rest is read again.
	done := len(items)
	var started []*intent.Result
	for i, it := range items {
		if it.msg == nil {
			continue
		}
		if !it.recorded {
			done = i
			break
		}
		if it.res.ID != "" { // empty: the message could never be recorded (logged)
			started = append(started, &it.res)
		}
	}
	// The deliveries are queued in the lane, in arrival order, while the next batch is read:
	// the batch's intents are started (on disk), which is what moving the offset needs; a
	// crash before they are queued is what Recover mends at the next start.
	p.queueDeliveries(ctx, started)
	// Commands after the batch's messages are recorded and queued: a /cancel may name one.
	if slices.ContainsFunc(items[:done], func(it *item) bool { return it.cmd != nil || it.press != nil || it.edit != nil }) {
		p.flush()
	}
	for _, it := range items[:done] {
		if it.cmd != nil {
			p.answer(ctx, *it.cmd)
		}
		if it.press != nil {
			p.press(ctx, it.press)
		}
		if e := it.edit; e != nil {
			if text := p.opts.Edit(ctx, *e); text != "" {
				if err := p.opts.Reply(ctx, e.ChatID, e.MessageID, text, "edit/"+e.ChatID+"/"+e.MessageID+"/"+strconv.Itoa(it.updateID)); err != nil {
					p.log.Warn("edit answer not sent", zap.String("chat", e.ChatID), zap.String("message", e.MessageID), zap.Error(p.redact(err)))
				}
			}
		}
	}
	if done > 0 {
		p.offset = items[done-1].updateID + 1
	}
}

// parse turns one raw update into an item; nil for an update this process already handled or
// one without an update_id (which cannot be confirmed individually).
func (p *Poller) parse(raw json.RawMessage) *item {
	var head struct {
		UpdateID *int `json:"update_id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.UpdateID == nil {
		p.log.Error("malformed update without update_id skipped", zap.Int("bytes", len(raw)))
		return nil
	}
	it := &item{updateID: *head.UpdateID}
	if it.updateID < p.offset {
		return nil // already handled in this process
	}
	u, dropped, err := decodeUpdate(raw)
	if err != nil {
		p.log.Error("malformed update skipped", zap.Int("update_id", it.updateID), zap.String("error", jsonProblem(err)))
		return it
	}
	if len(dropped) > 0 {
		// A mistyped field costs that field, not the message.
		p.log.Warn("update fields of the wrong type passed over", zap.Int("update_id", it.updateID), zap.Strings("fields", dropped))
	}
	it.msg = p.message(u, raw)
	it.press = u.CallbackQuery
	if m := u.EditedMessage; m != nil && p.opts.Edit != nil && m.Chat != nil {
		var from int64
		if m.From != nil {
			from = m.From.ID
		}
		if p.allowed(m.Chat.ID, from) {
			it.edit = &intent.Message{ChatID: strconv.FormatInt(m.Chat.ID, 10), MessageID: strconv.Itoa(m.MessageID), Text: Text(m),
				ChatType: m.Chat.Type, Source: workflows.SourceTelegram, SentAt: sentAt(m.EditDate), ReceivedAt: time.Now()}
			if m.From != nil {
				it.edit.Sender = sender(m.From)
				it.edit.User = it.edit.Sender.String()
			}
		}
	}
	if it.msg != nil && p.opts.Control != nil {
		if c, ok := command(u.Message); ok {
			it.msg, it.cmd = nil, c
		}
	}
	return it
}

// decodeUpdate decodes an update, passing over fields of the wrong type (e.g. "date" as a
// string): each is removed and the decode tried again. It returns the fields passed over.
func decodeUpdate(raw json.RawMessage) (tgbotapi.Update, []string, error) {
	var u tgbotapi.Update
	err := json.Unmarshal(raw, &u)
	var typeErr *json.UnmarshalTypeError
	if err == nil || !errors.As(err, &typeErr) {
		return u, nil, err
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return u, nil, err
	}
	var dropped []string
	for range 32 {
		if !errors.As(err, &typeErr) || typeErr.Field == "" || identifying(typeErr.Field) || !deletePath(tree, strings.Split(typeErr.Field, ".")) {
			return u, dropped, err
		}
		dropped = append(dropped, typeErr.Field)
		fixed, _ := json.Marshal(tree)
		u = tgbotapi.Update{}
		if err = json.Unmarshal(fixed, &u); err == nil {
			return u, dropped, nil
		}
	}
	return u, dropped, err
}

// identifying reports the fields a message cannot be recorded without: the message itself,
// its ID and its chat.
func identifying(field string) bool {
	return !strings.Contains(field, ".") || strings.HasSuffix(field, "message_id") || strings.Contains(field, "chat")
}

// deletePath removes the value at path from a decoded JSON object; false when it is not there.
func deletePath(tree map[string]any, path []string) bool {
	for i, key := range path {
		if i == len(path)-1 {
			_, ok := tree[key]
			delete(tree, key)
			return ok
		}
		next, ok := tree[key].(map[string]any)
		if !ok {
			return false
		}
		tree = next
	}
	return false
}

// message is the message to record for an update (raw is the update as it came), or nil:
// edits, non-messages and strangers are logged (IDs only) and passed over.
func (p *Poller) message(u tgbotapi.Update, raw json.RawMessage) *intent.Message {
	switch {
	case u.EditedMessage != nil:
		if m := u.EditedMessage; p.opts.Edit == nil {
			p.log.Info("edited message ignored: the intent keeps the original", zap.Int("update_id", u.UpdateID),
				zap.Int64("chat", m.Chat.ID), zap.Int("message", m.MessageID))
		}
		return nil // Options.Edit takes it (parse)
	case u.ChannelPost != nil || u.EditedChannelPost != nil:
		m := u.ChannelPost
		if m == nil {
			m = u.EditedChannelPost
		}
		p.log.Info("channel post ignored: intentq records messages people send the bot", zap.Int("update_id", u.UpdateID),
			zap.Int64("chat", m.Chat.ID), zap.Int("message", m.MessageID))
		return nil
	case u.Message == nil:
		p.log.Debug("update without a message skipped", zap.Int("update_id", u.UpdateID))
		return nil
	}
	m := u.Message
	if m.Chat == nil {
		p.log.Error("message without a chat cannot be recorded", zap.Int("update_id", u.UpdateID), zap.Int("message", m.MessageID))
		return nil
	}
	var from int64
	if m.From != nil {
		from = m.From.ID
	}
	if !p.allowed(m.Chat.ID, from) {
		p.log.Warn("message from a sender not on the allowlist rejected", zap.Int("update_id", u.UpdateID),
			zap.Int64("chat", m.Chat.ID), zap.Int64("user", from), zap.Int("message", m.MessageID))
		return nil
	}
	msg := &intent.Message{
		ChatID:    strconv.FormatInt(m.Chat.ID, 10),
		MessageID: strconv.Itoa(m.MessageID),
		Text:      Text(m),
		Forwarded: forwarded(raw),
		ChatType:  m.Chat.Type,
		Source:    workflows.SourceTelegram,
		SentAt:    sentAt(m.Date),
		// Taken here, in update order, because the batch is started concurrently.
		ReceivedAt: time.Now(),
	}
	if m.From != nil {
		msg.Sender = sender(m.From)
		msg.User = msg.Sender.String()
	}
	if r := m.ReplyToMessage; r != nil && r.From != nil && r.From.IsBot && p.opts.SenderOf != nil {
		msg.Session = p.opts.SenderOf(msg.ChatID, r.MessageID)
	}
	if m.ViaBot != nil {
		// An inline bot's result: marked in the header (issue 33), not the sender's own words.
		via := sender(m.ViaBot)
		msg.ViaBot = &via
	}
	return msg
}

// allowed applies the allowlist to a message in chat from user (0: no sender): with both
// lists, the chat and the user must be on them; with one, that one decides.
func (p *Poller) allowed(chat, user int64) bool {
	switch {
	case len(p.chats) > 0 && len(p.users) > 0:
		return p.chats[chat] && p.users[user]
	case len(p.chats) > 0:
		return p.chats[chat]
	default:
		return p.users[user]
	}
}

// forwardFields are the Bot API's marks of a forwarded message: forward_origin since Bot API
// 7.0, the fields it replaced, and is_automatic_forward (a channel post copied into its
// discussion group).
var forwardFields = []string{"forward_origin", "forward_from", "forward_from_chat", "forward_from_message_id",
	"forward_signature", "forward_sender_name", "forward_date", "is_automatic_forward"}

// forwarded reports whether the update's message was forwarded. It reads the raw update, so a
// field the Bot API library does not know (forward_origin) or one of the wrong type still
// counts; null, false, 0 and "" do not.
func forwarded(raw json.RawMessage) bool {
	var u struct {
		Message map[string]json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return false
	}
	for _, field := range forwardFields {
		if v, ok := u.Message[field]; ok {
			switch string(v) {
			case "null", "false", "0", `""`:
			default:
				return true
			}
		}
	}
	return false
}

// maxQuotedName bounds the display name as the header quotes it, well within the intent's
// 256-byte user field.
const maxQuotedName = 200

// sender is who sent a message: Telegram's numeric id, username and display name, the name
// cut to fit the header quoted (workflows.Sender's String).
func sender(u *tgbotapi.User) workflows.Sender {
	s := workflows.Sender{ID: u.ID, Username: u.UserName, Name: strings.Join(strings.Fields(u.FirstName+" "+u.LastName), " ")}
	if len(strconv.Quote(s.Name)) > maxQuotedName {
		runes := []rune(s.Name)
		for len(runes) > 0 && len(strconv.Quote(string(runes)+"…")) > maxQuotedName {
			runes = runes[:len(runes)-1]
		}
		s.Name = string(runes) + "…"
	}
	return s
}

// start starts one intent, retrying until it is durably recorded; false only when ctx ended
// first. A message that can never be recorded is logged and counts as done.
func (p *Poller) start(ctx context.Context, updateID int, msg intent.Message) (intent.Result, bool) {
	for attempt := 1; ; attempt++ {
		res, err := p.opts.Recorder.Start(ctx, msg)
		if err == nil {
			p.log.Info("intent recorded", zap.String("intent", res.ID), zap.String("session", res.Session),
				zap.Bool("created", res.Created), zap.Int("update_id", updateID), zap.String("door", workflows.SourceTelegram))
			return res, true
		}
		var invalid *intent.InvalidError
		if errors.As(err, &invalid) {
			p.log.Error("message cannot be recorded", zap.Int("update_id", updateID), zap.String("chat", msg.ChatID),
				zap.String("message", msg.MessageID), zap.String("field", invalid.Field), zap.String("reason", invalid.Reason))
			return intent.Result{}, true
		}
		wait := min(time.Second<<min(attempt-1, 6), p.opts.MaxBackoff)
		p.log.Warn("intent not recorded yet, retrying", zap.String("chat", msg.ChatID), zap.String("message", msg.MessageID),
			zap.Int("attempt", attempt), zap.Duration("retry_in", wait), zap.Error(err))
		if !sleep(ctx, wait) {
			return intent.Result{}, false
		}
	}
}

// Text is the message's text for the intent: the text, else the caption, with a placeholder
// for media, e.g. "(photo) look at this".
func Text(m *tgbotapi.Message) string {
	placeholder := ""
	switch {
	case len(m.Photo) > 0:
		placeholder = "(photo)"
	case m.Video != nil:
		placeholder = "(video)"
	case m.Animation != nil:
		placeholder = "(animation)"
	case m.Voice != nil:
		placeholder = "(voice)"
	case m.Audio != nil:
		placeholder = "(audio)"
	case m.VideoNote != nil:
		placeholder = "(video note)"
	case m.Document != nil:
		placeholder = strings.TrimSpace("(document "+m.Document.FileName) + ")"
	case m.Sticker != nil:
		placeholder = strings.TrimSpace("(sticker "+m.Sticker.Emoji) + ")"
	case m.Location != nil:
		placeholder = fmt.Sprintf("(location %.5f,%.5f)", m.Location.Latitude, m.Location.Longitude)
	case m.Contact != nil:
		placeholder = "(contact)"
	case m.Poll != nil:
		placeholder = "(poll)"
	}
	body := m.Text
	if body == "" {
		body = m.Caption
	}
	switch {
	case placeholder != "" && body != "":
		return placeholder + " " + body
	case placeholder != "":
		return placeholder
	case body != "":
		return body
	default:
		return "(message)"
	}
}

// redact removes the bot token from errors (HTTP errors carry the request URL).
func (p *Poller) redact(err error) error {
	tok := p.opts.Token.Reveal()
	if tok == "" || !strings.Contains(err.Error(), tok) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), tok, "<token>"))
}

func jsonProblem(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Sprintf("field %s must be %s, not %s", typ.Field, typ.Type, typ.Value)
	}
	return "malformed JSON"
}

// sleep waits d or until ctx ends; it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sentAt is the message's date; zero when Telegram's date was missing or passed over.
func sentAt(date int) time.Time {
	if date == 0 {
		return time.Time{}
	}
	return time.Unix(int64(date), 0).UTC()
}
