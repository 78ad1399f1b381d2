// Package intent is the client side of intent workflows: every door turns an inbound message
// (Telegram, HTTP ingest, the starter) into its intent workflow here (record.go), and the starter
// and the hooks list, show and change intents here (client.go).
//
// Starting the workflow under the ID `intent/<chat>/<msg>` is the
// dedupe: the same message twice is one intent (SPEC I1, I4).
package intent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/policy"
	"github.com/intentq/intentq/internal/redact"
	"github.com/intentq/intentq/internal/session"
	"github.com/intentq/intentq/workflows"
)

// TelegramMaxChars is Telegram's own limit on a message's text.
const TelegramMaxChars = 4096

// Message is an inbound message as a door received it.
type Message struct {
	ChatID    string
	MessageID string
	Text      string
	User      string
	// Sender (zero ID: unknown), Forwarded and ChatType: who sent it and how, from the
	// Telegram door (see workflows.IntentInput); the delivered header is built from them.
	Sender    workflows.Sender
	Forwarded bool
	// ViaBot is the inline bot the message was sent through (nil: none).
	ViaBot   *workflows.Sender
	ChatType string
	Source   string
	// SentAt is when the sender sent it, when the door knows; zero otherwise.
	SentAt time.Time
	// ReceivedAt is when the door received it; zero means now. Doors that start several
	// intents at once set it in arrival order.
	ReceivedAt time.Time
	// Corrects, when set, is the message this one corrects: the person edited it after its
	// agent had it (issue 35); the delivered header names it.
	Corrects string
	// Session, when set, is the session the message answers (a reply to its answer or its
	// card, issue 36); it goes there whatever the chat's mapping says. Empty: the chat's.
	Session string
}

// Result says what Record did.
type Result struct {
	ID      string `json:"id"`
	Created bool   `json:"created"`
	Session string `json:"session"`
	// Repaired: invalid UTF-8 in the text was replaced with U+FFFD.
	Repaired bool `json:"repaired,omitempty"`
	// DeliveryQueued: the message was queued for delivery to the session's pane.
	DeliveryQueued bool `json:"delivery_queued,omitempty"`
	// delivery is the request QueueDelivery sends, for a new intent that is to be delivered.
	delivery *workflows.DeliveryRequest
}

// InvalidError is a message that cannot be recorded as it is; the reason is safe to show the
// sender (it never contains the text).
type InvalidError struct {
	Field  string
	Reason string
	// TooLarge marks a text over the size cap (HTTP 413).
	TooLarge bool
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Recorder starts intent workflows.
type Recorder struct {
	client client.Client
	cfg    *config.Config
	now    func() time.Time
}

// New returns a Recorder that starts workflows through c with the policy from cfg.
func New(c client.Client, cfg *config.Config) *Recorder {
	return &Recorder{client: c, cfg: cfg, now: time.Now}
}

// Prepare validates m and repairs its text in place. It needs no Temporal, so doors can
// answer bad input before they touch the cluster.
func (r *Recorder) Prepare(m *Message) (repaired bool, err error) {
	if err := workflows.CheckIDPart("chat_id", m.ChatID); err != nil {
		return false, &InvalidError{Field: "chat_id", Reason: err.Error()}
	}
	if err := workflows.CheckIDPart("message_id", m.MessageID); err != nil {
		return false, &InvalidError{Field: "message_id", Reason: err.Error()}
	}
	m.Text, repaired = redact.Repair(m.Text)
	if m.Text == "" {
		return repaired, &InvalidError{Field: "text", Reason: "is empty"}
	}
	if max := r.cfg.Ingest.MaxTextBytes; len(m.Text) > max {
		return repaired, &InvalidError{Field: "text", TooLarge: true,
			Reason: fmt.Sprintf("is %d bytes, over the %d-byte limit (ingest.max_text_bytes)", len(m.Text), max)}
	}
	if m.Source == workflows.SourceTelegram && redact.Chars(m.Text) > TelegramMaxChars {
		return repaired, &InvalidError{Field: "text", TooLarge: true,
			Reason: fmt.Sprintf("has %d characters, over Telegram's %d", redact.Chars(m.Text), TelegramMaxChars)}
	}
	m.User, _ = redact.Repair(m.User)
	if len(m.User) > 256 {
		return repaired, &InvalidError{Field: "user", Reason: "is longer than 256 bytes"}
	}
	m.Sender.Name, _ = redact.Repair(m.Sender.Name)
	m.Sender.Username, _ = redact.Repair(m.Sender.Username)
	if len(m.Sender.Name)+len(m.Sender.Username) > 512 {
		return repaired, &InvalidError{Field: "sender", Reason: "name is longer than 512 bytes"}
	}
	return repaired, nil
}

// Record prepares m, starts its intent workflow (or finds it already recorded) and queues its
// delivery to the session.
func (r *Recorder) Record(ctx context.Context, m Message) (Result, error) {
	res, err := r.Start(ctx, m)
	if err != nil {
		return res, err
	}
	r.QueueDelivery(ctx, &res)
	return res, nil
}

// Start prepares m and starts its intent workflow, or finds it already recorded. Doors that
// start several intents at once call QueueDelivery afterwards, in arrival order.
func (r *Recorder) Start(ctx context.Context, m Message) (Result, error) {
	repaired, err := r.Prepare(&m)
	if err != nil {
		return Result{}, err
	}
	session, err := r.cfg.SessionFor(m.ChatID)
	if _, ok := r.cfg.Sessions[m.Session]; ok {
		session, err = m.Session, nil
	}
	if err != nil {
		return Result{}, &InvalidError{Field: "chat_id", Reason: err.Error()}
	}
	in := r.input(m, session)
	if in.Headless {
		prompt, err := headless.Prepare(r.cfg, session, workflows.PromptRequest{Channel: workflows.SourceTelegram, Text: m.Text}, false)
		if err != nil {
			return Result{}, &InvalidError{Field: "session", Reason: err.Error()}
		}
		in.Prompt = &prompt
	}
	id := workflows.IntentID(m.ChatID, m.MessageID)
	res := Result{ID: id, Session: session, Repaired: repaired}
	memo := map[string]any{workflows.MemoKey: workflows.IntentMemo{
		Snippet:   redact.Snippet(m.Text, in.Policy.SnippetChars),
		MessageID: m.MessageID,
		Source:    m.Source,
	}}
	if len(in.Text) <= workflows.MaxMemoText {
		memo[workflows.MemoTextKey] = in.Text
	}
	_, err = r.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: r.cfg.Temporal.TaskQueue,
		// The ID is the dedupe key for as long as the namespace keeps the intent, closed or not.
		WorkflowIDReusePolicy:                    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.IntentStatusKey.ValueSet(workflows.StatusPending),
			workflows.IntentChatKey.ValueSet(m.ChatID),
			workflows.IntentSessionKey.ValueSet(session),
			workflows.IntentReceivedAtKey.ValueSet(in.ReceivedAt),
		),
		Memo: memo,
	}, workflows.IntentWorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &started):
		return res, nil
	case err != nil:
		return Result{}, fmt.Errorf("start intent %s: %w", id, err)
	}
	res.Created = true
	if in.DeliveryQueued {
		req := workflows.DoorDeliveryRequest(in)
		res.delivery = &req
	}
	return res, nil
}

// QueueDelivery asks the session to type a newly started intent's message into its pane. The
// intent exists, so the answer has somewhere to go; if this signal is lost, the intent asks the
// session itself once its wait times out.
func (r *Recorder) QueueDelivery(ctx context.Context, res *Result) {
	r.QueueDeliveries(ctx, []*Result{res})
}

// QueueDeliveries queues the first deliveries of newly started intents, in the order given,
// with one signal per session: a door's batch reaches each session at once and in order. The
// sessions are signalled side by side (QueueParallel at once), each session's signals in order.
func (r *Recorder) QueueDeliveries(ctx context.Context, results []*Result) {
	var sessions []string
	bySession := map[string][]*Result{}
	for _, res := range results {
		if res.delivery == nil || res.DeliveryQueued {
			continue
		}
		if _, ok := bySession[res.Session]; !ok {
			sessions = append(sessions, res.Session)
		}
		bySession[res.Session] = append(bySession[res.Session], res)
	}
	var g errgroup.Group
	g.SetLimit(QueueParallel)
	for _, name := range sessions {
		g.Go(func() error {
			r.queueSession(ctx, name, bySession[name])
			return nil
		})
	}
	_ = g.Wait()
}

// QueueParallel bounds the sessions QueueDeliveries signals at once.
const QueueParallel = 16

// queueSession queues one session's part of a batch, in order, in signals well under Temporal's
// payload limit (long texts escape to more).
func (r *Recorder) queueSession(ctx context.Context, name string, batch []*Result) {
	for len(batch) > 0 {
		n, size := 0, 0
		for n < len(batch) && (n == 0 || size+len(batch[n].delivery.Text) <= maxSignalText) {
			size += len(batch[n].delivery.Text)
			n++
		}
		reqs := make([]workflows.DeliveryRequest, n)
		for i, res := range batch[:n] {
			reqs[i] = *res.delivery
		}
		// Not queued: each intent asks its session itself once its wait runs out.
		queued := session.QueueAll(ctx, r.client, name, reqs) == nil
		for _, res := range batch[:n] {
			res.DeliveryQueued = queued
		}
		batch = batch[n:]
	}
}

// maxSignalText bounds the text of the deliveries one deliver-all signal carries.
const maxSignalText = 256 << 10

func receivedAt(m Message, now func() time.Time) time.Time {
	if m.ReceivedAt.IsZero() {
		return now().UTC().Truncate(time.Microsecond)
	}
	return m.ReceivedAt.UTC().Truncate(time.Microsecond)
}

// input builds the workflow input: message, session and the reminder policy from config.
func (r *Recorder) input(m Message, session string) workflows.IntentInput {
	var hint, ack, done, cancel, delivered, failed string
	if m.Source == workflows.SourceTelegram {
		hint = r.cfg.ReplyHintFor(session, m.ChatID, m.MessageID)
		t := r.cfg.Telegram
		ack, done, cancel, delivered, failed = t.AckReaction, t.DoneReaction, t.CancelReaction, t.DeliveredReaction, t.FailedReaction
	}
	deliver := m.Source == workflows.SourceTelegram && r.cfg.Sessions[session].Mode == config.ModeTmux
	var sender *workflows.Sender
	if m.Sender.ID != 0 {
		sender = &m.Sender
	}
	return workflows.IntentInput{
		Version:    workflows.IntentVersion,
		ChatID:     m.ChatID,
		MessageID:  m.MessageID,
		Text:       m.Text,
		User:       m.User,
		Sender:     sender,
		Forwarded:  m.Forwarded,
		ViaBot:     m.ViaBot,
		ChatType:   m.ChatType,
		Source:     m.Source,
		ReceivedAt: receivedAt(m, r.now),
		SentAt:     m.SentAt,
		Session:    session,
		Deliver:    deliver,
		Headless:   m.Source == workflows.SourceTelegram && r.cfg.Sessions[session].Mode == config.ModeHeadless,
		// Record runs in arrival order per door, so the door queues the delivery itself.
		DeliveryQueued:    deliver,
		ReplyHint:         hint,
		AckReaction:       ack,
		DoneReaction:      done,
		CancelReaction:    cancel,
		Corrects:          m.Corrects,
		DeliveredReaction: delivered,
		FailedReaction:    failed,
		Policy: workflows.ReminderPolicy{
			Reminders:       r.cfg.Reminders,
			Push:            r.cfg.NtfyTopicFor(session) != "",
			DeliveryTimeout: policy.DeliveryTimeout,
		},
	}
}

// Recover queues the first delivery of every pending Telegram intent that has not reached its
// pane yet, after a crash between starting a batch's intents and queueing their deliveries: the
// sessions learn of them at worker start, in arrival order, with one signal per session, before
// newer messages (the worker runs it before its doors open). Intents are read in parallel
// (RecoverParallel), each read retried on a slow answer (RecoverAttempts); a session whose
// intents could not all be read is left out whole (queueing part of it would put newer messages
// before older ones) and named in the error, which wraps ErrRecoverIncomplete. A message the
// session already has (typed, or held or committed by a hook) is answered, not handed over
// again, and one already queued keeps its place. It returns how many deliveries it queued.
func (r *Recorder) Recover(ctx context.Context) (int, error) {
	queued := 0
	var failed []string
	var errs []error
	for _, name := range r.cfg.SessionNames() {
		if r.cfg.Sessions[name].Mode != config.ModeTmux {
			continue
		}
		reqs, err := r.recoverSession(ctx, name)
		if err == nil && len(reqs) > 0 {
			err = session.QueueAll(ctx, r.client, name, reqs)
		}
		if err != nil {
			failed = append(failed, name)
			errs = append(errs, err)
			continue
		}
		queued += len(reqs)
	}
	if len(failed) > 0 {
		return queued, fmt.Errorf("%w: sessions %s: %w", ErrRecoverIncomplete, strings.Join(failed, ", "), errors.Join(errs...))
	}
	return queued, nil
}

// ErrRecoverIncomplete marks a recovery that could not read every pending intent of some
// sessions.
var ErrRecoverIncomplete = errors.New("recovery incomplete")

// RecoverParallel bounds the intents Recover reads at once; RecoverAttempts how often it asks
// one that answers slowly, each within RecoverQueryTimeout.
const (
	RecoverParallel     = 16
	RecoverAttempts     = 4
	RecoverQueryTimeout = 10 * time.Second
)

// recoverSession reads the session's pending Telegram intents not yet delivered, and returns
// their door requests in arrival order.
func (r *Recorder) recoverSession(ctx context.Context, name string) ([]workflows.DeliveryRequest, error) {
	list, err := List(ctx, r.client, Filter{Status: workflows.StatusPending, Session: name})
	if err != nil {
		return nil, fmt.Errorf("recover deliveries of %s: %w", name, err)
	}
	var todo []Summary
	for _, s := range list {
		if s.Source == workflows.SourceTelegram && s.Delivered == nil {
			todo = append(todo, s)
		}
	}
	views := make([]*workflows.IntentView, len(todo))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(RecoverParallel)
	for i, s := range todo {
		g.Go(func() error {
			var v workflows.IntentView
			err := retry(gctx, RecoverAttempts, func(ctx context.Context) error {
				qctx, cancel := context.WithTimeout(ctx, RecoverQueryTimeout)
				defer cancel()
				var err error
				v, err = Show(qctx, r.client, s.ID)
				return err
			})
			if errors.Is(err, ErrNotFound) {
				return nil // gone meanwhile (retention): nothing to deliver
			}
			if err != nil {
				return fmt.Errorf("recover deliveries of %s: %w", name, err)
			}
			if v.Deliver && v.Delivered == nil && v.Status == workflows.StatusPending {
				views[i] = &v
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var found []workflows.IntentView
	for _, v := range views {
		if v != nil {
			found = append(found, *v)
		}
	}
	// Arrival order: what a dead worker started is typed before what arrives after.
	sort.SliceStable(found, func(i, j int) bool { return found[i].ReceivedAt.Before(found[j].ReceivedAt) })
	reqs := make([]workflows.DeliveryRequest, 0, len(found))
	for _, v := range found {
		reqs = append(reqs, workflows.DoorDeliveryRequest(v.IntentInput))
	}
	return reqs, nil
}

// retry runs f up to attempts times, waiting a little longer after each failure, until it
// succeeds, fails with ErrNotFound, or ctx ends.
func retry(ctx context.Context, attempts int, f func(context.Context) error) error {
	var err error
	for i := range attempts {
		if err = f(ctx); err == nil || errors.Is(err, ErrNotFound) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(i+1) * 500 * time.Millisecond):
		}
	}
	return err
}
