package workflows

// The texts intentq types into a session. Message text stays on the machine; what leaves it
// is built in alerts.go from the masked snippet.

import (
	"fmt"
	"strings"
)

// ReminderText is what a reminder types into the session (SPEC I6).
func ReminderText(messageID, chatID, snippet string) string {
	return fmt.Sprintf("【未対応メッセージ】msg_id=%s chat=%s: %s", messageID, chatID, snippet)
}

// DeliveryText is how a message from the Telegram door is typed into the session. The full
// text stays on the machine; newlines are kept for the session to receive as one message.
func DeliveryText(in IntentInput) string {
	from := ""
	if in.User != "" {
		from = " from=" + in.User
	}
	hint := ""
	if in.ReplyHint != "" {
		hint = " (" + in.ReplyHint + ")"
	}
	return fmt.Sprintf("【新着メッセージ】msg_id=%s chat=%s%s%s: %s", in.MessageID, in.ChatID, from, hint, in.Text)
}

// Headers intentq types before a message or a reminder.
const (
	deliveryHeader = "【新着メッセージ】msg_id="
	reminderHeader = "【未対応メッセージ】msg_id="
)

// ReceiptOf reads a prompt the agent received: when it begins with the header of a message or
// reminder intentq typed, it names that intent (its workflow ID). Only the header at the very
// start counts: a message cannot claim another's receipt by quoting a header.
func ReceiptOf(prompt string) (string, bool) {
	rest, ok := strings.CutPrefix(prompt, deliveryHeader)
	if !ok {
		if rest, ok = strings.CutPrefix(prompt, reminderHeader); !ok {
			return "", false
		}
	}
	msg, rest, ok := strings.Cut(rest, " chat=")
	if !ok || msg == "" || strings.ContainsAny(msg, " \n") {
		return "", false
	}
	end := strings.IndexAny(rest, " :\n")
	if end <= 0 {
		return "", false
	}
	return IntentID(rest[:end], msg), true
}
