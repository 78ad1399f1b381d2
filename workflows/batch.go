package workflows

// Coalesced delivery (issue 15): what waits for a session is typed together, as one block and
// one prompt, when the agent may be typed into; a burst of messages reaches the agent as a
// handful of prompts, and the reminders due at one tick as one digest. Each message is still
// committed to the history, counted and answered on its own, exactly once.

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

// typedKind reports whether a request of kind is typed into the pane (a context is only
// committed to the history).
func typedKind(kind string) bool { return kind == KindMessage || kind == KindReminder }

// BatchText is how requests typed together read: each begins on its own line with its header
// (the first one's header starts the prompt, so the agent's receipt names it), and the further
// lines of each are indented (TypedForm), so that no text can start a line that looks like
// another message.
func BatchText(reqs []DeliveryRequest) string {
	var sb strings.Builder
	for i, r := range reqs {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(TypedForm(r.Text))
	}
	return sb.String()
}

// TypedForm is a request's text as typed among others: its further lines indented.
func TypedForm(text string) string { return strings.ReplaceAll(text, "\n", "\n  ") }

// nextBatch takes from the queue, in order, the requests to type together (Ledger.NextBatch);
// those typed before are answered at once and not typed again.
func (s *session) nextBatch(ctx workflow.Context) []DeliveryRequest {
	batch, again := s.NextBatch()
	for _, r := range again {
		s.answer(ctx, []DeliveryRequest{r}, nil, 0, false, []bool{false}, nil, false)
	}
	return batch
}

// deliverBatch types what waits, together, once the pane may be typed into. A reminder at the
// head first waits policy.DigestGather for the other reminders due at the same tick.
func (s *session) deliverBatch(ctx workflow.Context) {
	head := s.Queue[0]
	if head.Kind == KindReminder {
		s.gather(ctx, policy.DigestGather)
	}
	actx := workflow.WithActivityOptions(ctx, tmuxActivityOptions)
	err := s.typable()
	if err == nil {
		if err = s.waitUntilIdle(actx, head); errors.Is(err, errTaken) || errors.Is(err, errContinueAsNew) {
			return // a hook took it (its commit answers), or the main loop continues as new
		}
	}
	if !s.withdrawStanding(ctx) {
		// The desk could not say whether a hook took what it holds: nothing is typed until it
		// can (the desk runs in this worker: it answers once the worker does).
		s.tellHeldDue(ctx)
		s.pause(ctx, s.Config.Busy.OrDefault().BusyWait)
		return
	}
	// Commits that came while the pane was read (or the worker was away) are applied before
	// anything is typed: what a hook printed leaves the queue first.
	s.settleOffers(ctx)
	if s.stopping {
		// The person's /stop looks at the screen: nothing is typed until it has ended, then the
		// pane is looked at again (sessionStopHoldsTyping).
		s.holdForStop(ctx)
		return
	}
	batch := s.nextBatch(ctx)
	if len(batch) == 0 {
		return
	}
	s.typings++
	phase, reset := PhaseNudge, false
	if err == nil {
		// Escalation follows the reminder the agent has had longest.
		esc := batch[0]
		for _, r := range batch {
			if r.Kind == KindReminder && (esc.Kind != KindReminder || (!r.Since.IsZero() && (esc.Since.IsZero() || r.Since.Before(esc.Since)))) {
				esc = r
			}
		}
		s.Ledger.typing = esc.ID
		defer func() { s.Ledger.typing = "" }()
		// What waits behind the block stands offered while the agent takes the block in: its
		// hooks then hand it over, as they fire.
		s.standOffer(ctx)
		phase, reset, err = s.escalate(actx, esc)
	}
	if err == nil {
		err = s.commitAllToHistory(ctx, batch)
	}
	if err == nil {
		first := batch[0]
		err = s.submit(actx, DeliveryRequest{ID: first.ID, ReplyTo: first.ReplyTo, Kind: first.Kind, Text: BatchText(batch)}, ContentKey(batch))
	}
	s.confirmReset(actx, err)
	if len(batch) > 1 {
		workflow.GetLogger(ctx).Info("typed together", "session", s.Config.Name, "count", len(batch), "ok", err == nil)
	}
	// A late commit may have counted one while it was typed (reconciled): counted once.
	counts, waited := s.Typed(batch, err == nil)
	s.answer(ctx, batch, err, phase, reset, counts, waited, true)
}

// gather takes the signals that arrive within d (more requests join the queue).
func (s *session) gather(ctx workflow.Context, d time.Duration) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(timerCtx, d)
	for !timer.IsReady() {
		s.waitForSignal(ctx, timer)
	}
}

// pause waits up to d, or until a signal arrives.
func (s *session) pause(ctx workflow.Context, d time.Duration) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	s.waitForSignal(ctx, workflow.NewTimer(timerCtx, d))
}

// commitAllToHistory appends the batch's entries to the session's history in one write, before
// they are typed, each as typed (SPEC H1-H3).
func (s *session) commitAllToHistory(ctx workflow.Context, batch []DeliveryRequest) error {
	return s.appendToHistory(ctx, batch, TypedForm)
}

// appendToHistory appends one entry per request, its text in form, to the session's history in
// one write (none without a history file).
func (s *session) appendToHistory(ctx workflow.Context, reqs []DeliveryRequest, form func(string) string) error {
	if s.Config.HistoryPath == "" {
		return nil
	}
	req := activities.AppendAllRequest{Session: s.Config.Name}
	for _, r := range reqs {
		req.Entries = append(req.Entries, activities.HistoryEntry{Time: workflow.Now(ctx), Session: s.Config.Name, Kind: r.Kind, ID: r.ID, Text: form(r.Text)})
	}
	if err := s.quickStep(ctx, historyActivityOptions, activities.HistoryAppendAllName, req).Get(ctx, nil); err != nil {
		return fmt.Errorf("commit %d entries to history %s: %w", len(reqs), s.Config.HistoryPath, err)
	}
	return nil
}

// answer counts each request's outcome (counts: which count as delivered now) and tells its
// intent, all intents at once, also those whose requests waited for the block (delivered); a
// typed block's results may wait while more waits to be typed (holdResults).
func (s *session) answer(ctx workflow.Context, reqs []DeliveryRequest, err error, phase int, reset bool, counts []bool, waited []DeliveryRequest, typed bool) {
	results := make([]DeliveryResult, 0, len(reqs)+len(waited))
	for i, r := range reqs {
		res := s.result(ctx, r, err)
		res.Phase, res.Reset = phase, reset
		switch {
		case counts[i]:
			s.Delivered++
		case !res.OK:
			s.Failed++
		}
		count(ctx, metricDeliveries, map[string]string{"session": s.Config.Name, "kind": r.Kind, "ok": fmt.Sprint(res.OK)}, 1)
		results = append(results, res)
	}
	for _, r := range waited {
		results = append(results, s.result(ctx, r, nil))
	}
	answered := append(slices.Clone(reqs), waited...)
	if typed {
		s.holdResults(ctx, answered, results)
		return
	}
	s.tellResults(ctx, SignalDeliveryResult, answered, results)
}

// ContentKey names what a typing carries: the request id itself for one request, else a hash of
// every request id in order (issue 24: a typed-once marker keyed by the first request alone
// would read a new block headed by a request typed before as typed already).
func ContentKey(reqs []DeliveryRequest) string {
	if len(reqs) == 1 {
		return reqs[0].ID
	}
	h := sha256.New()
	for _, r := range reqs {
		h.Write([]byte(r.ID))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%s+%d-%x", reqs[0].ID, len(reqs)-1, h.Sum(nil)[:8])
}
