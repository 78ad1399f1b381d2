package workflows

// Digest pushes (issue 15): the reminders of a session's intents due at one tick reach the
// person's phone as one ntfy push that lists them, not one push per intent. An intent hands its
// push to its session (SignalRemindPush); the session gathers what arrives within
// policy.DigestGather, pushes once per topic and answers each intent (SignalPushResult), whose
// own push count and schedule move only when its push went out.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/policy"
)

// Signals of digest pushes.
const (
	SignalRemindPush = "remind-push"
	SignalPushResult = "push-result"
	// SignalPushSent tells a session that an intent's reminder push it holds went out from the
	// intent itself while no worker served the session's host (PushSent): the session drops
	// it, so the person is not reminded twice once the host is back.
	SignalPushSent = "remind-push-sent"
)

// PushSent names the push an intent sent itself (its PushRequest's ID and intent).
type PushSent struct {
	ID     string `json:"id"`
	Intent string `json:"intent"`
}

// KindPush is the kind of a push's DeliveryResult.
const KindPush = "push"

// PushRequest asks a session to push an intent's reminder with the others due.
type PushRequest struct {
	ID      string `json:"id"`
	ReplyTo string `json:"reply_to"`
	// Topic is only carried by intents of older builds: the topic is looked up by session.
	Topic      string    `json:"topic,omitempty"`
	MessageID  string    `json:"message_id"`
	ChatID     string    `json:"chat_id"`
	Snippet    string    `json:"snippet"`
	ReceivedAt time.Time `json:"received_at"`
}

// maxDigestBytes bounds a digest's message (ntfy takes 4096 bytes as a message).
const maxDigestBytes = 3500

// DigestPush is the push for reminders due together, oldest first: the single reminder as it
// always read, or "N messages waiting for <session>" with one line per message (IDs and the
// masked snippet only, SPEC I7), as many as fit.
func DigestPush(session, topic string, reqs []PushRequest) activities.Push {
	p, _ := digestPush(session, topic, reqs, nil)
	return p
}

// digestPush is DigestPush, and the requests whose line it carries (oldest first); the others
// are folded into "… and N more". where, when set, says where each message is (issue 35: the
// agent has it and works, has it and owes an answer, or it waits and why); "" says nothing.
func digestPush(session, topic string, reqs []PushRequest, where func(PushRequest) string) (activities.Push, []PushRequest) {
	reqs = slices.Clone(reqs)
	slices.SortStableFunc(reqs, func(a, b PushRequest) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
	line := func(r PushRequest) string {
		if where != nil {
			if w := where(r); w != "" {
				return fmt.Sprintf("msg_id=%s chat=%s (%s): %s", r.MessageID, r.ChatID, w, r.Snippet)
			}
		}
		return fmt.Sprintf("msg_id=%s chat=%s: %s", r.MessageID, r.ChatID, r.Snippet)
	}
	p := activities.Push{Session: session, Topic: topic, Title: "Telegram pending", Priority: 3, Tags: []string{"envelope"}}
	if where != nil {
		// One title scheme for one message or many (the session's own digests).
		p.Title = "intentq: 1 message waiting for " + session
	}
	if len(reqs) == 1 {
		p.Message = line(reqs[0])
		return p, reqs
	}
	p.Title = fmt.Sprintf("intentq: %d messages waiting for %s", len(reqs), session)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d messages waiting for %s, oldest first:", len(reqs), session)
	carried := reqs
	for i, r := range reqs {
		l := "\n" + line(r)
		if sb.Len()+len(l) > maxDigestBytes {
			fmt.Fprintf(&sb, "\n… and %d more (starter pending)", len(reqs)-i)
			carried = reqs[:i]
			break
		}
		sb.WriteString(l)
	}
	p.Message = sb.String()
	return p, carried
}

// takePushes moves the pushes intents hand over into HeldPushes.
func (s *session) takePushes(ctx workflow.Context) {
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalRemindPush), func(c workflow.ReceiveChannel, _ bool) {
		var r PushRequest
		c.Receive(ctx, &r)
		s.holdPush(ctx, r)
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalPushSent), func(c workflow.ReceiveChannel, _ bool) {
		var p PushSent
		c.Receive(ctx, &p)
		s.dropPush(ctx, p)
	})
	for {
		sel.Select(ctx)
	}
}

// dropPush forgets the held push of an intent that pushed it itself (SignalPushSent), unless it
// is already out. The intent has its answer: none is sent for it.
func (s *session) dropPush(ctx workflow.Context, p PushSent) {
	for i := s.pushingN; i < len(s.HeldPushes); i++ {
		if r := s.HeldPushes[i]; r.ID == p.ID || r.ReplyTo == p.Intent {
			s.HeldPushes = slices.Delete(s.HeldPushes, i, i+1)
			workflow.GetLogger(ctx).Info("reminder push dropped: its intent pushed it while the host was down", "session", s.Config.Name, "intent", p.Intent)
			return
		}
	}
}

// holdPush keeps r for the next digest; a push of the same intent still held (its intent waited
// too long and asked again) is replaced, not pushed twice, unless it is already out. The first
// push held for the next digest starts its gathering.
func (s *session) holdPush(ctx workflow.Context, r PushRequest) {
	for i := range s.HeldPushes {
		if i >= s.pushingN && s.HeldPushes[i].ReplyTo == r.ReplyTo {
			s.HeldPushes[i] = r
			return
		}
	}
	if len(s.HeldPushes) == s.pushingN {
		s.gatherSince = workflow.Now(ctx)
	}
	s.HeldPushes = append(s.HeldPushes, r)
}

// gatherDigest waits until the digest's pushes have gathered for policy.DigestGather from when
// its first push was held, not from when the previous digest was answered (a push due while
// another was out waited for that one, its answers and a whole gathering: 1.05 s at p99 for 20
// intents due together).
func (s *session) gatherDigest(ctx workflow.Context) error {
	if wait := s.gatherSince.Add(policy.DigestGather).Sub(workflow.Now(ctx)); wait > 0 {
		return workflow.Sleep(ctx, wait)
	}
	return nil
}

// pushDigests pushes what intents handed over, gathered for policy.DigestGather, one push per
// topic, and answers each intent.
func (s *session) pushDigests(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return len(s.HeldPushes) > 0 }); err != nil {
			return
		}
		if err := s.gatherDigest(ctx); err != nil {
			return
		}
		n := len(s.HeldPushes)
		if s.workingPushesWait {
			if n = s.duePushes(workflow.Now(ctx)); n == 0 {
				// All about messages the agent works on: looked at again when something
				// changes, or in a while (a message grows old).
				held := len(s.HeldPushes)
				if _, err := workflow.AwaitWithTimeout(ctx, 30*time.Second, func() bool {
					now := workflow.Now(ctx)
					return len(s.HeldPushes) != held || slices.ContainsFunc(s.HeldPushes, func(r PushRequest) bool { return !s.pushWaits(r, now) })
				}); err != nil {
					return
				}
				continue
			}
		}
		s.pushing = true
		s.pushingN = n
		held := s.HeldPushes[:n:n]
		var topics []string
		byTopic := map[string][]PushRequest{}
		for _, r := range held {
			if _, ok := byTopic[r.Topic]; !ok {
				topics = append(topics, r.Topic)
			}
			byTopic[r.Topic] = append(byTopic[r.Topic], r)
		}
		var answers []workflow.Future
		var folded []PushRequest
		for _, topic := range topics {
			reqs := byTopic[topic]
			push, carried := digestPush(s.Config.Name, topic, reqs, s.whereIs)
			if len(carried) < len(reqs) {
				// A push counts for an intent only if its line reached the phone: the folded
				// remainder goes out in the next digest, at once.
				for _, r := range reqs {
					if !slices.ContainsFunc(carried, func(c PushRequest) bool { return c.ID == r.ID }) {
						folded = append(folded, r)
					}
				}
				reqs = carried
			}
			err := workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, push).Get(ctx, nil)
			if err != nil {
				workflow.GetLogger(ctx).Warn("reminder push failed", "session", s.Config.Name, "count", len(reqs), "error", err)
			}
			for _, r := range reqs {
				res := s.result(ctx, DeliveryRequest{ID: r.ID, Kind: KindPush}, err)
				answers = append(answers, workflow.SignalExternalWorkflow(ctx, r.ReplyTo, "", SignalPushResult, res))
			}
		}
		for _, f := range answers {
			_ = f.Get(ctx, nil) // an intent that ended meanwhile needs no answer
		}
		s.HeldPushes = append(folded, s.HeldPushes[n:]...)
		if len(folded) > 0 {
			s.gatherSince = time.Time{} // they have waited: no new gathering
		}
		s.pushing, s.pushingN = false, 0
		s.wakeCh.SendAsync(true) // the main loop may continue as new now
	}
}

// pushWaits reports whether the push of r waits: the agent has its message and works on it in
// a live turn, and it is younger than policy.WorkingPushAfter.
func (s *session) pushWaits(r PushRequest, now time.Time) bool {
	return s.Agent != nil && s.Agent.State == AgentWorking && now.Sub(r.ReceivedAt) < policy.WorkingPushAfter &&
		s.inContext(DeliveryRequest{Kind: KindMessage, ReplyTo: r.ReplyTo})
}

// duePushes puts the held pushes that may go now first, in their order, and returns how many
// they are; the others wait for the next digest (sessionWorkingPushesWait).
func (s *session) duePushes(now time.Time) int {
	var due, waiting []PushRequest
	for _, r := range s.HeldPushes {
		if s.pushWaits(r, now) {
			waiting = append(waiting, r)
		} else {
			due = append(due, r)
		}
	}
	s.HeldPushes = append(due, waiting...)
	return len(due)
}

// whereIs says where the message of a push's intent is, for its line in the digest: with the
// agent (working on it, or idle and no answer yet), or not delivered yet and why; "" when the
// session cannot tell (a message the agent received itself).
func (s *session) whereIs(r PushRequest) string {
	switch msg := (DeliveryRequest{Kind: KindMessage, ReplyTo: r.ReplyTo}); {
	case s.inContext(msg) && s.Agent != nil && s.Agent.State == AgentWorking:
		return "the agent has it and is working"
	case s.inContext(msg):
		return "the agent has it, no answer yet"
	case s.heldIn(msg) >= 0:
		return "being handed to the agent"
	case slices.ContainsFunc(s.Queue, func(q DeliveryRequest) bool { return q.Kind == KindMessage && q.ReplyTo == r.ReplyTo }):
		if s.busyWhy != "" {
			return "not delivered yet: " + s.busyWhy
		}
		return "not delivered yet"
	}
	return ""
}

// pushRequest is the intent's reminder push, as its session gathers it for a digest.
func (w *intent) pushRequest(snippet string) PushRequest {
	return PushRequest{
		ID:      fmt.Sprintf("%s#push-%d-%d", w.id, w.st.Pushes+1, w.st.PushFailures),
		ReplyTo: w.id, Topic: w.in.Policy.NtfyTopic, MessageID: w.in.MessageID, ChatID: w.in.ChatID,
		Snippet: snippet, ReceivedAt: w.in.ReceivedAt,
	}
}

// pushBySession hands the intent's reminder push to its session, for the digest, and settles
// the returned future with the outcome (DeliveryTimeout when no answer comes in time). When the
// session cannot be signalled, it pushes on its own.
func (w *intent) pushBySession(ctx workflow.Context, snippet string) workflow.Future {
	f, settle := workflow.NewFuture(ctx)
	req := w.pushRequest(snippet)
	workflow.Go(ctx, func(ctx workflow.Context) {
		if err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(w.in.Session), "", SignalRemindPush, req).Get(ctx, nil); err != nil {
			settle.Chain(workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, w.reminderPush(snippet)))
			return
		}
		// The answer to an earlier attempt of this intent counts too: the session replaces a
		// push it still holds, and one that went out did go out.
		timeout := policy.Or(w.in.Policy.DeliveryTimeout, policy.DeliveryTimeout)
		res, ok := awaitResult(ctx, SignalPushResult, timeout, func(DeliveryResult) bool { return true })
		switch {
		case !ok && w.pushesWhenHostDown && w.hostDown(ctx):
			// Nobody serves the session now: the person is reminded from here, and the session,
			// which still holds the request, drops it once its host is back (before
			// intentWithdrawsHeldPush it pushed it again then).
			pushed := workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, w.reminderPush(snippet))
			settle.Chain(pushed)
			if w.withdrawsHeldPush && pushed.Get(ctx, nil) == nil {
				err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(w.in.Session), "", SignalPushSent, PushSent{ID: req.ID, Intent: w.id}).Get(ctx, nil)
				if err != nil {
					workflow.GetLogger(ctx).Warn("session not told of the push sent; it may push it again", "intent", w.id, "session", w.in.Session, "error", err)
				}
			}
		case !ok:
			settle.Set(nil, temporal.NewApplicationError(fmt.Sprintf("session %s did not report push %s in time", w.in.Session, req.ID), ErrTypeDeliveryTimeout))
		case !res.OK:
			settle.Set(nil, temporal.NewApplicationError(res.Error, res.ErrorType))
		default:
			settle.Set(nil, nil)
		}
	})
	return f
}

// hostDown reports whether no worker serves the session's host (activities.HostServed); a
// session it cannot describe counts as served: the push waits for it, as before.
func (w *intent) hostDown(ctx workflow.Context) bool {
	var res activities.HostServedResult
	err := workflow.ExecuteActivity(withHostServedOptions(ctx), activities.HostServedName,
		activities.HostServedRequest{WorkflowID: SessionWorkflowID(w.in.Session)}).Get(ctx, &res)
	if err != nil {
		workflow.GetLogger(ctx).Warn("could not tell whether the session's host is served", "intent", w.id, "session", w.in.Session, "error", err)
		return false
	}
	if !res.Served {
		workflow.GetLogger(ctx).Info("no worker serves the session's host; the reminder is pushed from the intent", "intent", w.id, "session", w.in.Session, "queue", res.Queue)
	}
	return !res.Served
}
