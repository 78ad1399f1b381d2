package workflows

// The texts intentq types into a session. Message text stays on the machine; what leaves it
// is built in alerts.go from the masked snippet.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/intentq/intentq/internal/hookapi"
	"github.com/intentq/intentq/internal/receipt"
)

// ReceiptOf reads a prompt the agent received: when it begins with the header of a message or
// reminder intentq typed, it names that intent (its workflow ID).
func ReceiptOf(prompt string) (string, bool) { return hookapi.ReceiptOf(prompt) }

// ReminderText is what a reminder types into the session (SPEC I6).
func ReminderText(messageID, chatID, snippet string) string {
	return fmt.Sprintf("【未対応メッセージ】msg_id=%s chat=%s: %s", messageID, chatID, snippet)
}

// DeliveryText is how a message from the Telegram door is typed into the session. The full
// text stays on the machine; newlines are kept for the session to receive as one message.
//
// The header says who sent it in a way the sender cannot forge: with a Sender, `from=<numeric
// id>` and then the @username only when Telegram gave one, else the display name quoted
// (`from=42 @alice`, `from=43 name="@owner"`); a message in a group is marked `group=<chat id>`,
// a forwarded one `forwarded`, one sent through an inline bot `via_bot=<id> @bot`. Intents started without those fields (other doors) keep the
// header they always had.
func DeliveryText(in IntentInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s chat=%s", deliveryHeader, in.MessageID, in.ChatID)
	if in.Corrects != "" {
		b.WriteString(" corrects=" + in.Corrects)
	}
	if in.ChatType != "" && in.ChatType != "private" {
		b.WriteString(" group=" + in.ChatID)
	}
	if in.Forwarded {
		b.WriteString(" forwarded")
	}
	if in.ViaBot != nil {
		b.WriteString(" via_bot=" + in.ViaBot.String())
	}
	switch {
	case in.Sender != nil:
		b.WriteString(" from=" + in.Sender.String())
	case in.User != "":
		b.WriteString(" from=" + in.User)
	}
	if in.ReplyHint != "" {
		b.WriteString(" (" + in.ReplyHint + ")")
	}
	b.WriteString(": " + in.Text)
	return b.String()
}

// String is the sender as the delivery header shows it: the numeric id, then `@username` when
// it is a Telegram username, else the display name quoted, e.g. `42 @alice`, `43 name="Bob"`.
// Quoting escapes quotes, backslashes and invisible characters, so no name reads as a
// username, as another field or as a new line.
func (s Sender) String() string {
	out := strconv.FormatInt(s.ID, 10)
	if IsUsername(s.Username) {
		return out + " @" + s.Username
	}
	if s.Username != "" {
		out += " username=" + strconv.Quote(s.Username)
	}
	if s.Name != "" {
		out += " name=" + strconv.Quote(s.Name)
	}
	return out
}

// IsUsername reports whether u can be a Telegram username (without the @): 1 to 32 ASCII
// letters, digits and underscores.
func IsUsername(u string) bool {
	if u == "" || len(u) > 32 {
		return false
	}
	for _, c := range []byte(u) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Headers intentq types before a message or a reminder.
const (
	deliveryHeader = receipt.DeliveryHeader
	reminderHeader = receipt.ReminderHeader
)
