package workflows

// The texts intentq types into a session. Message text stays on the machine; what leaves it
// is built in alerts.go from the masked snippet.

import "fmt"

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
