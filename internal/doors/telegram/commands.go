package telegram

// The control lane (issue 36): commands the person sends the bot are answered at the door, in
// the chat, before anything is queued; no queue and no busy agent holds them up.

import (
	"context"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"
)

// Command is a person's command to intentq, from an allowed sender in an allowed chat.
type Command struct {
	// Name is the command without its slash and bot suffix (pending, cancel, status, stop); Args the
	// rest of the line, trimmed.
	Name string
	Args string
	// ChatID and MessageID are the command's own message; ReplyTo the message it answers (0:
	// none), as /cancel is sent.
	ChatID    int64
	MessageID int
	ReplyTo   int
	UserID    int64
	// User names the sender (for an approval's record).
	User string
}

// Press is a press of an inline button (a callback query) from an allowed sender in an allowed
// chat: Data is the button's opaque data, ChatID and MessageID the card it is on.
type Press struct {
	ID        string
	Data      string
	ChatID    int64
	MessageID int
	UserID    int64
	User      string
}

// Control answers commands and presses; what it returns is sent to the chat as the answer, or
// shown on the press (short, never a raw error).
type Control interface {
	Answer(ctx context.Context, c Command) string
	Press(ctx context.Context, p Press) string
}

// Commands are the commands the door answers, with their descriptions (setMyCommands).
var Commands = []tgbotapi.BotCommand{
	{Command: "pending", Description: "your messages not answered yet, oldest first"},
	{Command: "cancel", Description: "reply /cancel to a message (or /cancel ID) to take it back"},
	{Command: "status", Description: "what each session's agent is doing"},
	{Command: "stop", Description: "interrupt the running turn of this chat's agent"},
	{Command: "reset", Description: "allow one reset of this chat's agent when a message is stuck"},
	{Command: "allow", Description: "reply /allow to an approval card (/allow session: for this session)"},
	{Command: "deny", Description: "reply /deny to an approval card"},
}

// maxArgs bounds a command's arguments: the door answers what is longer as malformed.
const maxArgs = 200

// command is m as a command the door answers, if it is one: "/name", "/name@bot" or "/name args",
// name among Commands. Anything else (other slash words too) is a message for the agent.
func command(m *tgbotapi.Message) (*Command, bool) {
	text := strings.TrimSpace(m.Text)
	if !strings.HasPrefix(text, "/") {
		return nil, false
	}
	head, args, _ := strings.Cut(text[1:], " ")
	name, _, _ := strings.Cut(head, "@")
	known := false
	for _, c := range Commands {
		known = known || c.Command == strings.ToLower(name)
	}
	if !known {
		return nil, false
	}
	c := &Command{Name: strings.ToLower(name), Args: strings.TrimSpace(args), ChatID: m.Chat.ID, MessageID: m.MessageID}
	if m.From != nil {
		c.UserID = m.From.ID
	}
	if m.From != nil {
		c.User = sender(m.From).String()
	}
	// Only the ID of the message it replies to: what that message shows or carries (its text, its
	// buttons) is its sender's to choose, and decides nothing (issue 61).
	if r := m.ReplyToMessage; r != nil {
		c.ReplyTo = r.MessageID
	}
	return c, true
}

// maxPressData bounds a press's data (Telegram's limit on callback_data is 64 bytes).
const maxPressData = 64

// press answers a callback query: from an allowed sender in an allowed chat through Control,
// else with a refusal; every press is answered (answerCallbackQuery), so the phone stops
// spinning, and nothing else happens for one that is not allowed, malformed or too long.
func (p *Poller) press(ctx context.Context, q *tgbotapi.CallbackQuery) {
	var chat int64
	msg := 0
	if q.Message != nil && q.Message.Chat != nil {
		chat, msg = q.Message.Chat.ID, q.Message.MessageID
	}
	var from int64
	if q.From != nil {
		from = q.From.ID
	}
	text := "Not allowed: you are not on this bot's allowlist."
	switch {
	case p.opts.Control == nil:
		text = "This bot takes no button presses."
	case chat == 0 || !p.allowed(chat, from):
		p.log.Warn("button press from a sender not on the allowlist refused", zap.Int64("chat", chat), zap.Int64("user", from))
	case q.Data == "" || len(q.Data) > maxPressData:
		text = "That button carries nothing intentq knows."
	default:
		pr := Press{ID: q.ID, Data: q.Data, ChatID: chat, MessageID: msg, UserID: from}
		if q.From != nil {
			pr.User = sender(q.From).String()
		}
		text = p.opts.Control.Press(ctx, pr)
	}
	if _, err := p.bot.Request(tgbotapi.NewCallback(q.ID, text)); err != nil {
		p.log.Warn("button press not answered", zap.Int64("chat", chat), zap.Int("message", msg), zap.Error(p.redact(err)))
	}
}

// answer runs a command through Control and sends its answer as a reply to the command, once:
// the send is keyed by the command's message, so a batch read again after a crash does not
// answer twice.
func (p *Poller) answer(ctx context.Context, c Command) {
	text := "That command is too long; try /pending, /status, or reply /cancel to a message."
	if len(c.Args) <= maxArgs {
		text = p.opts.Control.Answer(ctx, c)
	}
	chat, msg := strconv.FormatInt(c.ChatID, 10), strconv.Itoa(c.MessageID)
	if err := p.opts.Reply(ctx, chat, msg, text, "command/"+chat+"/"+msg); err != nil {
		p.log.Warn("command answer not sent", zap.String("command", c.Name), zap.Int64("chat", c.ChatID), zap.Int("message", c.MessageID), zap.Error(p.redact(err)))
		return
	}
	p.log.Info("command answered", zap.String("command", c.Name), zap.Int64("chat", c.ChatID), zap.Int("message", c.MessageID))
}

// registerCommands tells Telegram the commands (the menu beside the input field); best effort.
func (p *Poller) registerCommands() {
	if _, err := p.bot.Request(tgbotapi.NewSetMyCommands(Commands...)); err != nil {
		p.log.Warn("commands not registered with Telegram (they still work)", zap.Error(p.redact(err)))
	}
}
