package workflows

// What the agent had, for a new context: after a reset intentq did not make (the
// CLI restarting, the person's /clear, a compaction), the agent's SessionStart hook lists the
// session's pending intents from their memos, and names the ones still on their way to the
// agent without their text (they follow on their own). An intent's memo says it was delivered
// only once the session told it, and the session holds the results of a typed block while more
// waits to be typed (sessionResultsAfterBacklog); visibility also lags behind the intent. So the
// hook asks the session itself (QueryHad) which of the listed intents the agent had: those are
// printed in full, whatever their memos say yet.

import (
	"time"

	"github.com/intentq/intentq/internal/hookapi"
)

// QueryHad asks a session which of the given intents' messages are in its agent's context.
const QueryHad = hookapi.QueryHad

// HadMessage is an intent whose message the agent has in its context, as the session's record
// says.
type HadMessage = hookapi.HadMessage

// maxHadAsked bounds the intents one QueryHad looks up (a hook asks about what it lists, at most
// a page of them).
const maxHadAsked = 100

// had answers QueryHad: which of intents have their message in the agent's context as the
// ledger records it (typed and confirmed, or committed by a hook, its commit read), with when
// this run counted each delivered. A message queued, reserved by the standing offer, held by a
// hook that has not committed, or being typed is not had: it reaches the agent on its own; so is
// one a reset will present again (sessionRepresentsAfterReset: its hook printed it into the
// context the reset ended, or it waits to be presented again).
func (s *session) had(intents []string) ([]HadMessage, error) {
	var had []HadMessage
	for _, id := range intents[:min(len(intents), maxHadAsked)] {
		switch {
		case s.Ledger.presentsAgain(id):
			had = append(had, HadMessage{Intent: id, Follows: true})
		case s.Ledger.had(id):
			had = append(had, HadMessage{Intent: id, At: s.deliveredAt[id]})
		}
	}
	return had, nil
}

// noteDelivered keeps when each message in reqs was counted delivered (its result), for
// QueryHad: a hook that runs late after a reset (Gemini CLI's SessionStart) tells by it whether
// the new context got the message before or after it began.
func (s *session) noteDelivered(reqs []DeliveryRequest, results []DeliveryResult) {
	for i, r := range reqs {
		if r.Kind != KindMessage || i >= len(results) || !results[i].OK {
			continue
		}
		if _, ok := s.deliveredAt[r.ReplyTo]; ok || !s.inContext(r) {
			continue // the first time counts; a failed or repeated request says nothing new
		}
		if s.deliveredAt == nil {
			s.deliveredAt = map[string]time.Time{}
		}
		s.deliveredAt[r.ReplyTo] = results[i].At
	}
}
