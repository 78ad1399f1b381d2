package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

// UpdateReply sends the agent's answer to the person and closes the intent, exactly once per
// answer (SPEC I2): the MCP reply tool and `starter reply` use it.
const UpdateReply = "reply"

// ReplyRequest is an answer to send as a reply to the intent's message.
type ReplyRequest struct {
	// Key identifies the answer (ReplyKey of its text): the same answer asked again, by a
	// retried or repeated tool call, is sent once and answered with the same message IDs.
	Key  string `json:"key"`
	Text string `json:"text"`
}

// ReplyRecord is an answer that was sent.
type ReplyRecord struct {
	Key        string    `json:"key"`
	MessageIDs []int     `json:"message_ids"`
	At         time.Time `json:"at"`
	// Repeated: this request asked for an answer already sent.
	Repeated bool `json:"repeated,omitempty"`
}

// ReplyKey is the key of an answer: a hash of its text.
func ReplyKey(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:8])
}

// replyHandler sends r's text through the Bot API as a reply to the intent's message (split at
// 4096 characters) and closes the intent; an answer already sent is answered from the record.
func (w *intent) replyHandler(ctx workflow.Context, r ReplyRequest) (ReplyRecord, error) {
	for _, rec := range w.st.Replies {
		if rec.Key == r.Key {
			rec.Repeated = true
			return rec, nil
		}
	}
	if err := w.open("reply to"); err != nil {
		return ReplyRecord{}, err
	}
	if w.replying {
		return ReplyRecord{}, temporal.NewApplicationError(fmt.Sprintf("intent %s: another reply is being sent; try again", w.id), "ReplyInProgress")
	}
	w.replying = true
	defer func() { w.replying = false }()
	var ids []int
	err := workflow.ExecuteActivity(withTelegram(ctx, telegramSendOptions), activities.TelegramSendName,
		activities.SendRequest{ChatID: w.in.ChatID, ReplyTo: w.in.MessageID, Text: r.Text, Key: w.id + "/reply/" + r.Key, Session: w.in.Session}).Get(ctx, &ids)
	if err != nil {
		return ReplyRecord{}, err
	}
	rec := ReplyRecord{Key: r.Key, MessageIDs: ids, At: workflow.Now(ctx)}
	w.st.Replies = append(w.st.Replies, rec)
	w.transition(ctx, StatusClosed, ReasonReplied)
	return rec, nil
}

// validateReply refuses an empty answer, and an answer to an intent that has ended unless it
// repeats one already sent.
func (w *intent) validateReply(r ReplyRequest) error {
	if r.Text == "" || r.Key == "" {
		return temporal.NewApplicationError("reply needs text and key", "InvalidReply")
	}
	for _, rec := range w.st.Replies {
		if rec.Key == r.Key {
			return nil
		}
	}
	return w.open("reply to")
}
