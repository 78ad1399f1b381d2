package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/intentq/intentq/internal/base/private"
)

// TelegramSendName is Telegram.Send.
const TelegramSendName = "TelegramSend"

// TelegramMaxChars is Telegram's limit on one message's text.
const TelegramMaxChars = 4096

// ErrTypeTelegramRejected marks an answer Telegram refused for good (bad chat, bad token).
const ErrTypeTelegramRejected = "TelegramRejected"

// SendRequest sends Text to a chat as a reply to ReplyTo, split into parts Telegram accepts.
type SendRequest struct {
	ChatID  string `json:"chat_id"`
	ReplyTo string `json:"reply_to,omitempty"`
	Text    string `json:"text"`
	// Key names the answer (its intent and text): the parts sent are recorded under it, each
	// before the next is sent, so a retry after a crash resumes after the last part Telegram
	// accepted. Empty: only heartbeats record them.
	Key string `json:"key,omitempty"`
	// Session, when set, is the session the text speaks for: a person's reply to any of its
	// parts goes to that session (issue 36), whatever the chat's mapping says.
	Session string `json:"session,omitempty"`
	// Buttons, when set, go under the last part as an inline keyboard, one row of buttons
	// (an approval's card, issue 36).
	Buttons []Button `json:"buttons,omitempty"`
	// Card, when set, is the approval whose card the text is: the message that carries the
	// buttons is recorded as that approval's card (CardOf), so a typed /allow or /deny counts
	// only as a reply to it (issue 61).
	Card string `json:"card,omitempty"`
	// HTML: the text is in Telegram's HTML (parse_mode HTML) and goes as one message; its
	// sender keeps it within Telegram's limit.
	HTML bool `json:"html,omitempty"`
}

// Button is an inline keyboard button: its label and the opaque data a press sends back
// (callback_data, at most 64 bytes).
type Button struct {
	Text string `json:"text"`
	Data string `json:"data"`
}

// Telegram sends messages through the Bot API.
type Telegram struct {
	Token string
	// Endpoint is telegram-bot-api's endpoint format; empty: api.telegram.org.
	Endpoint string
	// SentDir keeps, per SendRequest.Key, the IDs of the parts sent (fsynced before the next
	// part goes out); empty: heartbeats only (batched by the SDK: a worker that dies after a
	// part may not have reported it).
	SentDir string
}

// Send sends the text in parts of at most 4096 characters, the first as a reply, and returns
// the Telegram message IDs. Parts already sent are reported through heartbeats, so a retried
// attempt resumes after them.
func (t *Telegram) Send(ctx context.Context, req SendRequest) ([]int, error) {
	chat, err := strconv.ParseInt(req.ChatID, 10, 64)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("telegram send: chat %q is not a number", req.ChatID), ErrTypeTelegramRejected, err)
	}
	bot := t.bot()
	parts := SplitMessage(req.Text, TelegramMaxChars)
	if req.HTML {
		parts = []string{req.Text} // a cut could fall inside a tag; Telegram counts the text without them
	}
	var sent []int
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &sent) // parts an earlier attempt already sent
	}
	ledger := t.sentPath(req.Key)
	if recorded := readSent(ledger); len(recorded) > len(sent) {
		sent = recorded
	}
	for i := len(sent); i < len(parts); i++ {
		text := parts[i]
		if sendingWas(ledger) == i {
			// The last attempt sent this part and lost the answer (a timeout or a reset after
			// the request went out, or a crash): Telegram may have it. The Bot API cannot tell,
			// so it goes again, saying so, rather than being lost.
			text = resentLabel + text
		}
		if utf8.RuneCountInString(text) > TelegramMaxChars && !req.HTML {
			if _, err := bot.Send(tgbotapi.NewMessage(chat, strings.TrimSpace(resentLabel))); err != nil {
				return sent, fmt.Errorf("telegram send to chat %s (part %d of %d, repeat notice): %w", req.ChatID, i+1, len(parts), redactToken(err, t.Token))
			}
			text = parts[i]
		}
		msg := tgbotapi.NewMessage(chat, text)
		if req.HTML {
			msg.ParseMode = tgbotapi.ModeHTML
		}
		if i == 0 && req.ReplyTo != "" {
			if id, err := strconv.Atoi(req.ReplyTo); err == nil {
				msg.ReplyToMessageID = id
				msg.AllowSendingWithoutReply = true
			}
		}
		if i == len(parts)-1 && len(req.Buttons) > 0 {
			var row []tgbotapi.InlineKeyboardButton
			for _, b := range req.Buttons {
				row = append(row, tgbotapi.NewInlineKeyboardButtonData(b.Text, b.Data))
			}
			msg.ReplyMarkup = tgbotapi.NewInlineKeyboardMarkup(row)
		}
		if err := markSending(ledger, i); err != nil {
			return sent, fmt.Errorf("telegram send to chat %s (part %d of %d): %w", req.ChatID, i+1, len(parts), err)
		}
		m, err := bot.Send(msg)
		if err != nil {
			if neverSent(err) {
				markSent(ledger)
			}
			if apiErr, ok := err.(*tgbotapi.Error); ok && apiErr.Code >= 400 && apiErr.Code < 500 && apiErr.Code != 429 {
				return sent, temporal.NewNonRetryableApplicationError(fmt.Sprintf("telegram send to chat %s: %d %s", req.ChatID, apiErr.Code, apiErr.Message), ErrTypeTelegramRejected, nil)
			}
			return sent, fmt.Errorf("telegram send to chat %s (part %d of %d): %w", req.ChatID, i+1, len(parts), redactToken(err, t.Token))
		}
		sent = append(sent, m.MessageID)
		if req.Session != "" {
			if err := t.writeSender(req.ChatID, m.MessageID, req.Session); err != nil {
				return sent, temporal.NewNonRetryableApplicationError(fmt.Sprintf("telegram send to chat %s: part %d sent, but its session not recorded: %v", req.ChatID, i+1, err), ErrTypeTelegramRejected, err)
			}
		}
		if req.Card != "" && i == len(parts)-1 {
			if err := t.writeCard(req.ChatID, m.MessageID, req.Card); err != nil {
				return sent, temporal.NewNonRetryableApplicationError(fmt.Sprintf("telegram send to chat %s: card sent, but not recorded as %s's: %v", req.ChatID, req.Card, err), ErrTypeTelegramRejected, err)
			}
		}
		if err := writeSent(ledger, sent); err != nil {
			return sent, temporal.NewNonRetryableApplicationError(fmt.Sprintf("telegram send to chat %s: part %d sent, but not recorded: %v", req.ChatID, i+1, err), ErrTypeTelegramRejected, err)
		}
		markSent(ledger)
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, sent)
		}
	}
	return sent, nil
}

// SplitMessage cuts text into parts of at most max characters, preferring to cut after a
// newline or space in the last tenth of a part.
func SplitMessage(text string, max int) []string {
	var parts []string
	for utf8.RuneCountInString(text) > max {
		runes := []rune(text)
		cut := max
		for i := max - 1; i > max*9/10; i-- {
			if runes[i] == '\n' || runes[i] == ' ' {
				cut = i + 1
				break
			}
		}
		parts = append(parts, string(runes[:cut]))
		text = string(runes[cut:])
	}
	if text != "" || len(parts) == 0 {
		parts = append(parts, text)
	}
	return parts
}

func redactToken(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "<token>"))
}

// EditRequest changes the text of a message the bot sent and takes its buttons away (a card
// once answered).
type EditRequest struct {
	ChatID    string `json:"chat_id"`
	MessageID int    `json:"message_id"`
	Text      string `json:"text"`
	// HTML: Text is in Telegram's HTML (parse_mode HTML).
	HTML bool `json:"html,omitempty"`
}

// TelegramEditName is the registered name of Telegram.Edit.
const TelegramEditName = "TelegramEdit"

// Edit sets a sent message's text (editMessageText, no reply markup: its buttons go). An edit
// that changes nothing ("message is not modified": an earlier attempt made it) counts as done;
// one Telegram refuses otherwise is a non-retryable ErrTypeTelegramRejected.
func (t *Telegram) Edit(ctx context.Context, req EditRequest) error {
	chat, err := strconv.ParseInt(req.ChatID, 10, 64)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("telegram edit: chat %q is not a number", req.ChatID), ErrTypeTelegramRejected, err)
	}
	edit := tgbotapi.NewEditMessageText(chat, req.MessageID, req.Text)
	if req.HTML {
		edit.ParseMode = tgbotapi.ModeHTML
	}
	_, err = t.bot().Request(edit)
	var apiErr *tgbotapi.Error
	if errors.As(err, &apiErr) && strings.Contains(apiErr.Message, "message is not modified") {
		return nil
	}
	return t.failed(err, fmt.Sprintf("telegram edit of %s/%d", req.ChatID, req.MessageID))
}

// failed is err of a Bot API call (what: the call, for the message) as an activity error: an
// answer Telegram refuses for good (4xx but 429) is a non-retryable ErrTypeTelegramRejected,
// anything else is retried; the token never shows. nil stays nil.
func (t *Telegram) failed(err error, what string) error {
	var apiErr *tgbotapi.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr) && apiErr.Code >= 400 && apiErr.Code < 500 && apiErr.Code != 429:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %d %s", what, apiErr.Code, apiErr.Message), ErrTypeTelegramRejected, nil)
	}
	return fmt.Errorf("%s: %w", what, redactToken(err, t.Token))
}

// bot is a Bot API client of t's token and endpoint.
func (t *Telegram) bot() *tgbotapi.BotAPI {
	endpoint := t.Endpoint
	if endpoint == "" {
		endpoint = tgbotapi.APIEndpoint
	}
	bot := &tgbotapi.BotAPI{Token: t.Token, Client: &http.Client{Timeout: 30 * time.Second}, Buffer: 1}
	bot.SetAPIEndpoint(endpoint)
	return bot
}

// ReactRequest puts an emoji reaction on a message.
type ReactRequest struct {
	ChatID    string `json:"chat_id"`
	MessageID string `json:"message_id"`
	// Emoji is one of Telegram's reaction emoji; empty removes the bot's reaction.
	Emoji string `json:"emoji"`
}

// TelegramReactName is the registered name of Telegram.React.
const TelegramReactName = "TelegramReact"

// React sets the bot's reaction on a message (setMessageReaction). A reaction Telegram refuses
// (an emoji outside its list, a message gone) is a non-retryable ErrTypeTelegramRejected.
func (t *Telegram) React(ctx context.Context, req ReactRequest) error {
	bot := t.bot()
	reaction := "[]"
	if req.Emoji != "" {
		b, _ := json.Marshal([]map[string]string{{"type": "emoji", "emoji": req.Emoji}})
		reaction = string(b)
	}
	params := tgbotapi.Params{"chat_id": req.ChatID, "message_id": req.MessageID, "reaction": reaction}
	_, err := bot.MakeRequest("setMessageReaction", params)
	return t.failed(err, fmt.Sprintf("telegram reaction on %s/%s", req.ChatID, req.MessageID))
}

// resentLabel heads a part sent again because the attempt that sent it before lost Telegram's
// answer: the person may already have it.
const resentLabel = "(sent again: the connection broke as this was sent; it may be above already)\n\n"

// neverSent tells a failure after which Telegram surely has not got the request: it answered
// (an API error) or the connection was never made. Anything else (a timeout or reset after the
// request went out) is ambiguous.
func neverSent(err error) bool {
	var apiErr *tgbotapi.Error
	if errors.As(err, &apiErr) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// markSending records, beside the sent parts at ledger, that part i is going out; markSent
// clears it once Telegram answered. A mark left behind (a lost answer, a crash) makes the next
// attempt label that part as sent again.
func markSending(ledger string, i int) error {
	if ledger == "" {
		return nil
	}
	return private.WriteFile(ledger+".sending", []byte(strconv.Itoa(i)))
}

func markSent(ledger string) {
	if ledger != "" {
		_ = os.Remove(ledger + ".sending")
	}
}

// sendingWas returns the part a mark at ledger names (-1 without one).
func sendingWas(ledger string) int {
	if ledger == "" {
		return -1
	}
	b, err := os.ReadFile(ledger + ".sending")
	if err != nil {
		return -1
	}
	i, err := strconv.Atoi(string(b))
	if err != nil {
		return -1
	}
	return i
}

// writeSender records that message msg of chat speaks for session (with SentDir).
func (t *Telegram) writeSender(chat string, msg int, session string) error {
	return t.writeRecord(senderKey(chat, msg), session)
}

// SenderOf is the session that sent message msg of chat, as Send recorded it (Session set);
// empty when none did (or the record was pruned).
func (t *Telegram) SenderOf(chat string, msg int) string { return t.readRecord(senderKey(chat, msg)) }

func senderKey(chat string, msg int) string { return "sender/" + chat + "/" + strconv.Itoa(msg) }

// writeCard records that message msg of chat is the card of approval (with SentDir).
func (t *Telegram) writeCard(chat string, msg int, approval string) error {
	return t.writeRecord(cardKey(chat, msg), approval)
}

// CardOf is the approval (its workflow ID) whose card message msg of chat is, as Send recorded
// it (Card set); empty for any other message: one intentq did not send as a card, another
// program's, or one whose record was pruned.
func (t *Telegram) CardOf(chat string, msg int) string { return t.readRecord(cardKey(chat, msg)) }

// writeRecord keeps value under key in SentDir (nothing without a SentDir).
func (t *Telegram) writeRecord(key, value string) error {
	path := keyFile(t.SentDir, key)
	if path == "" {
		return nil
	}
	return private.WriteFile(path, []byte(value))
}

// readRecord is what writeRecord kept under key, or "".
func (t *Telegram) readRecord(key string) string {
	path := keyFile(t.SentDir, key)
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// SentDir is where the worker keeps the records of what it sent (Telegram.SentDir), in its
// data_dir.
func SentDir(dataDir string) string { return filepath.Join(dataDir, "sent") }

func cardKey(chat string, msg int) string { return "card/" + chat + "/" + strconv.Itoa(msg) }

// sentPath is the file that records the parts sent for key ("" without SentDir or key).
func (t *Telegram) sentPath(key string) string { return keyFile(t.SentDir, key) }

// readSent reads the part IDs recorded at path (none when there is no record).
func readSent(path string) []int {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var ids []int
	if json.Unmarshal(b, &ids) != nil {
		return nil
	}
	return ids
}

// writeSent records the part IDs at path, durably, before the next part is sent.
func writeSent(path string, ids []int) error {
	if path == "" {
		return nil
	}
	b, _ := json.Marshal(ids)
	return private.WriteFile(path, b)
}

// PruneSent removes records of sends older than age.
func (t *Telegram) PruneSent(age time.Duration) error {
	if err := pruneOlder(t.SentDir, age); err != nil {
		return fmt.Errorf("sent records: %w", err)
	}
	return nil
}
