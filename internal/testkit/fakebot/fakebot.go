// Package fakebot is a local HTTP server that speaks enough of the Telegram
// Bot API for tests and benchmarks of a long-polling bot.
//
// It serves /bot<token>/<method> for getMe, getUpdates (long polling with
// offset, limit and timeout), sendMessage, sendChatAction, setMyCommands,
// deleteWebhook and getWebhookInfo. Parameters may come as a query string, a
// form-encoded or multipart body (what github.com/go-telegram-bot-api sends)
// or a JSON body (what grammY and most other clients send). Every answer has
// the Bot API's shape: {"ok":true,"result":...} or
// {"ok":false,"error_code":N,"description":"...","parameters":{...}}.
//
// The getUpdates semantics follow the open-source Bot API server
// (github.com/tdlib/telegram-bot-api, Client::do_get_updates):
//   - updates with update_id >= offset are returned in order, at most limit
//     (1-100, default 100) per call;
//   - a call with a positive offset confirms, and drops, every update whose
//     update_id is below it; without an offset the earliest unconfirmed update
//     comes first, so unconfirmed updates are served again on the next call;
//   - a negative offset -k returns the last k updates and forgets the others;
//   - an offset more than 10 past the next update_id is ignored (updates come
//     from the earliest unconfirmed one again, nothing is confirmed);
//   - timeout (seconds, at most 50) makes an empty call wait until an update
//     arrives, the timeout passes (then it returns []), or the client leaves;
//   - when a long poll is waiting and another getUpdates call arrives that has
//     a timeout and finds nothing to return, the waiting one is the call that
//     is terminated: it gets 409 "Conflict: terminated by other getUpdates
//     request; make sure that only one bot instance is running", and the newer
//     call goes on waiting. As on the real server, at most one such 409 is
//     answered immediately in any 3 seconds; later ones are answered after a
//     3 second delay (see SetConflictDelay).
//
// Update ids start at FirstUpdateID, not at 1, as real ones are large numbers.
//
// A text sent or edited with parse_mode HTML is parsed as Telegram does: a tag
// it does not know, a tag left open or closed out of order, a bare '<' or '&'
// is refused with 400 "can't parse entities", the 4,096-character limit
// counts the text without its tags, and the message comes back with its text
// as the chat shows it (SentMessage.Text and Edit.Text keep the parameter as
// sent).
//
// Not emulated: the real server's 3-second minimum wait for repeated short
// polls with the same offset, webhooks, allowed_updates filtering, expiry of
// updates after 24 hours, "chat not found" and "message to be replied not
// found" errors, the entities of parsed markup, and Markdown parse modes (a
// text sent with one comes back as sent).
package fakebot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// FirstUpdateID is the update_id of the first update a new Server enqueues.
const FirstUpdateID = 100000001

// firstSentMessageID is the message_id of the first message the bot sends;
// high enough not to collide with the ids tests give incoming messages.
const firstSentMessageID = 900001

// maxLongPollTimeout is the real server's cap on getUpdates' timeout.
const maxLongPollTimeout = 50 * time.Second

// conflictText is the description of the 409 a terminated long poll gets.
const conflictText = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"

// SentMessage is a message the bot sent with sendMessage.
type SentMessage struct {
	// MessageID is the id the server gave the message.
	MessageID int
	// ChatID is the chat_id parameter.
	ChatID int64
	// Text is the text parameter, as sent (markup is not parsed out).
	Text string
	// ReplyTo is reply_to_message_id, or reply_parameters.message_id; 0 if neither.
	ReplyTo int
	// Params holds every parameter of the request as received.
	Params url.Values
	// At is when the server handled the request.
	At time.Time
}

// User is a Telegram user as the Bot API serialises it.
type User struct {
	ID           int64  `json:"id"`
	IsBot        bool   `json:"is_bot"`
	FirstName    string `json:"first_name"`
	LastName     string `json:"last_name,omitempty"`
	Username     string `json:"username,omitempty"`
	LanguageCode string `json:"language_code,omitempty"`
}

// Chat is a Telegram chat as the Bot API serialises it inside a Message.
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"` // private, group, supergroup or channel
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
}

// MessageEntity is a special part of a text (a bot command, a URL, ...).
// Offset and Length count UTF-16 code units, as in the Bot API.
type MessageEntity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
	URL    string `json:"url,omitempty"`
}

// PhotoSize is one size of a photo.
type PhotoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	FileSize     int    `json:"file_size,omitempty"`
}

// Document is a general file.
type Document struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int    `json:"file_size,omitempty"`
}

// Sticker is a sticker.
type Sticker struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Type         string `json:"type"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	IsAnimated   bool   `json:"is_animated"`
	IsVideo      bool   `json:"is_video"`
	Emoji        string `json:"emoji,omitempty"`
	SetName      string `json:"set_name,omitempty"`
	FileSize     int    `json:"file_size,omitempty"`
}

// Message is a Telegram message with the fields tests commonly need.
type Message struct {
	MessageID       int             `json:"message_id"`
	From            *User           `json:"from,omitempty"`
	SenderChat      *Chat           `json:"sender_chat,omitempty"`
	Date            int64           `json:"date"`
	Chat            Chat            `json:"chat"`
	EditDate        int64           `json:"edit_date,omitempty"`
	ReplyToMessage  *Message        `json:"reply_to_message,omitempty"`
	MediaGroupID    string          `json:"media_group_id,omitempty"`
	Text            string          `json:"text,omitempty"`
	Entities        []MessageEntity `json:"entities,omitempty"`
	Caption         string          `json:"caption,omitempty"`
	CaptionEntities []MessageEntity `json:"caption_entities,omitempty"`
	Photo           []PhotoSize     `json:"photo,omitempty"`
	Document        *Document       `json:"document,omitempty"`
	Sticker         *Sticker        `json:"sticker,omitempty"`
	// ForwardOrigin marks a forwarded message (Bot API 7.0 and later). The fields it replaced
	// (forward_from, forward_from_chat, forward_sender_name, forward_date) are still sent by
	// Telegram beside it; Forwarded sets both.
	ForwardOrigin     *MessageOrigin `json:"forward_origin,omitempty"`
	ForwardFrom       *User          `json:"forward_from,omitempty"`
	ForwardFromChat   *Chat          `json:"forward_from_chat,omitempty"`
	ForwardSenderName string         `json:"forward_sender_name,omitempty"`
	ForwardDate       int64          `json:"forward_date,omitempty"`
	// IsAutomaticForward marks a channel post Telegram copied into the channel's discussion group.
	IsAutomaticForward bool `json:"is_automatic_forward,omitempty"`
}

// MessageOrigin is where a forwarded message came from: Type is "user" (SenderUser),
// "hidden_user" (SenderUserName), "chat" (SenderChat) or "channel" (Chat, MessageID).
type MessageOrigin struct {
	Type           string `json:"type"`
	Date           int64  `json:"date"`
	SenderUser     *User  `json:"sender_user,omitempty"`
	SenderUserName string `json:"sender_user_name,omitempty"`
	SenderChat     *Chat  `json:"sender_chat,omitempty"`
	Chat           *Chat  `json:"chat,omitempty"`
	MessageID      int    `json:"message_id,omitempty"`
}

// Update is an incoming update. AddUpdate overwrites UpdateID.
type Update struct {
	UpdateID          int      `json:"update_id"`
	Message           *Message `json:"message,omitempty"`
	EditedMessage     *Message `json:"edited_message,omitempty"`
	ChannelPost       *Message `json:"channel_post,omitempty"`
	EditedChannelPost *Message `json:"edited_channel_post,omitempty"`
}

// NewUser returns a human user with the given id, first name "User<id>" and
// username "user<id>".
func NewUser(id int64) User {
	return User{ID: id, FirstName: fmt.Sprintf("User%d", id), Username: fmt.Sprintf("user%d", id), LanguageCode: "en"}
}

// ChatFor returns the chat a message with this chat id is in, as Telegram
// shows it: a positive id is the private chat with that user (from supplies
// the names), an id of -100xxxxxxxxxx is a supergroup, another negative id a
// basic group.
func ChatFor(chatID int64, from User) Chat {
	switch {
	case chatID > 0:
		return Chat{ID: chatID, Type: "private", FirstName: from.FirstName, LastName: from.LastName, Username: from.Username}
	case chatID <= -1000000000000:
		return Chat{ID: chatID, Type: "supergroup", Title: fmt.Sprintf("Supergroup %d", -chatID)}
	default:
		return Chat{ID: chatID, Type: "group", Title: fmt.Sprintf("Group %d", -chatID)}
	}
}

func baseMessage(chatID, fromID int64, messageID int) Message {
	from := NewUser(fromID)
	return Message{MessageID: messageID, From: &from, Date: time.Now().Unix(), Chat: ChatFor(chatID, from)}
}

// TextMessage returns a text message from user fromID in chat chatID, dated
// now, with bot_command entities for commands such as /start or /new@bot, as
// Telegram adds them (github.com/go-telegram-bot-api's IsCommand needs them).
func TextMessage(chatID, fromID int64, messageID int, text string) Message {
	m := baseMessage(chatID, fromID, messageID)
	m.Text = text
	m.Entities = CommandEntities(text)
	return m
}

// PhotoMessage returns a photo message with a caption (may be empty) and the
// usual three sizes, smallest first.
func PhotoMessage(chatID, fromID int64, messageID int, caption string) Message {
	m := baseMessage(chatID, fromID, messageID)
	m.Caption = caption
	m.CaptionEntities = CommandEntities(caption)
	for i, wh := range [][2]int{{90, 67}, {320, 240}, {1280, 960}} {
		m.Photo = append(m.Photo, PhotoSize{
			FileID:       fmt.Sprintf("AgACAgIAAxkBAAI%08d%c", messageID, 'a'+i),
			FileUniqueID: fmt.Sprintf("AQAD%08d%c", messageID, 'a'+i),
			Width:        wh[0], Height: wh[1], FileSize: wh[0] * wh[1] / 8,
		})
	}
	return m
}

// DocumentMessage returns a message carrying a file, with a caption (may be
// empty).
func DocumentMessage(chatID, fromID int64, messageID int, fileName, mimeType, caption string) Message {
	m := baseMessage(chatID, fromID, messageID)
	m.Caption = caption
	m.CaptionEntities = CommandEntities(caption)
	m.Document = &Document{
		FileID:       fmt.Sprintf("BQACAgIAAxkBAAI%08d", messageID),
		FileUniqueID: fmt.Sprintf("AgAD%08d", messageID),
		FileName:     fileName, MimeType: mimeType, FileSize: 12345,
	}
	return m
}

// StickerMessage returns a message carrying a static sticker.
func StickerMessage(chatID, fromID int64, messageID int, emoji string) Message {
	m := baseMessage(chatID, fromID, messageID)
	m.Sticker = &Sticker{
		FileID:       fmt.Sprintf("CAACAgIAAxkBAAI%08d", messageID),
		FileUniqueID: fmt.Sprintf("AgADs%08d", messageID),
		Type:         "regular", Width: 512, Height: 512, Emoji: emoji, SetName: "FakeStickers", FileSize: 23456,
	}
	return m
}

// ChannelPost returns a post in a channel: no from, sender_chat is the channel.
func ChannelPost(chatID int64, messageID int, text string) Message {
	c := Chat{ID: chatID, Type: "channel", Title: fmt.Sprintf("Channel %d", -chatID)}
	return Message{MessageID: messageID, SenderChat: &c, Date: time.Now().Unix(), Chat: c, Text: text, Entities: CommandEntities(text)}
}

// Edited returns m as Telegram sends it after an edit: the new text (or the
// new caption, for a message with media) and edit_date set to now.
func Edited(m Message, newText string) Message {
	if m.Photo != nil || m.Document != nil || m.Caption != "" {
		m.Caption = newText
		m.CaptionEntities = CommandEntities(newText)
	} else {
		m.Text = newText
		m.Entities = CommandEntities(newText)
	}
	m.EditDate = time.Now().Unix()
	if m.EditDate <= m.Date {
		m.EditDate = m.Date + 1
	}
	return m
}

// Forwarded returns m as the forward of a message origin wrote an hour before m: with
// forward_origin and the older forward_from and forward_date, as Telegram sends it.
func Forwarded(m Message, origin User) Message {
	date := m.Date - 3600
	m.ForwardOrigin = &MessageOrigin{Type: "user", Date: date, SenderUser: &origin}
	m.ForwardFrom = &origin
	m.ForwardDate = date
	return m
}

// MessageUpdate wraps m as a "message" update.
func MessageUpdate(m Message) Update { return Update{Message: &m} }

// EditedMessageUpdate wraps m as an "edited_message" update; see Edited.
func EditedMessageUpdate(m Message) Update { return Update{EditedMessage: &m} }

// ChannelPostUpdate wraps m as a "channel_post" update; see ChannelPost.
func ChannelPostUpdate(m Message) Update { return Update{ChannelPost: &m} }

// CommandEntities returns the bot_command entities of text: every /command
// (optionally @botname) that starts the text or follows whitespace.
func CommandEntities(text string) []MessageEntity {
	var out []MessageEntity
	u16 := 0 // offset in UTF-16 code units
	prevSpace := true
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == '/' && prevSpace {
			j := i + 1
			for j < len(text) && isCmdChar(text[j]) {
				j++
			}
			if j > i+1 && j-i-1 <= 32 {
				if j < len(text) && text[j] == '@' {
					k := j + 1
					for k < len(text) && isCmdChar(text[k]) {
						k++
					}
					if k > j+1 {
						j = k
					}
				}
				if j == len(text) || !isCmdTail(text[j]) {
					out = append(out, MessageEntity{Type: "bot_command", Offset: u16, Length: j - i})
				}
			}
		}
		prevSpace = r == ' ' || r == '\n' || r == '\t' || r == '\r'
		u16 += utf16.RuneLen(r) // 2 above U+FFFF, else 1
		i += size
	}
	return out
}

func isCmdChar(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// isCmdTail reports whether b, right after a command, makes it something else
// (as in a path like /usr/bin).
func isCmdTail(b byte) bool { return b == '/' }

type entry struct {
	id          int
	raw         json.RawMessage
	firstServed time.Time
}

type redelivery struct {
	e      *entry
	served bool
}

type poller struct {
	terminated chan struct{}
}

type failure struct {
	method string // "" for any method
	status int
	body   []byte // nil: the standard JSON body for status
	// lose: the request is carried out, then the connection drops before the answer (a
	// timeout or reset after Telegram accepted it).
	lose bool
	n    int
}

// Server is a fake Telegram Bot API server. Its methods are safe for
// concurrent use.
type Server struct {
	token string
	bot   User
	srv   *httptest.Server

	closeOnce sync.Once
	done      chan struct{}

	mu            sync.Mutex
	changed       chan struct{} // closed and replaced on every change of state
	nextID        int
	all           map[int]*entry
	queue         []*entry // unconfirmed updates, by id
	reactions     []Reaction
	nextCallback  int
	callbacks     []CallbackAnswer
	edits         []Edit
	redeliveries  []*redelivery
	confirmed     int
	longPoll      *poller
	conflictDelay time.Duration
	sendDelay     time.Duration
	nextConflict  time.Time
	failures      []*failure
	calls         map[string]int
	sent          []SentMessage
	nextMessageID int
	messages      map[[2]int64]json.RawMessage // (chat id, message id) -> message, for reply_to_message
	chats         map[int64]json.RawMessage
}

// New starts a server that accepts the given bot token. Close it when done.
// The bot's user id is the token's number before the colon, if it has one.
func New(token string) *Server {
	id := int64(1234567890)
	if i := strings.IndexByte(token, ':'); i > 0 {
		if n, err := strconv.ParseInt(token[:i], 10, 64); err == nil && n > 0 {
			id = n
		}
	}
	s := &Server{
		token:         token,
		bot:           User{ID: id, IsBot: true, FirstName: "Fake Bot", Username: "fake_test_bot"},
		done:          make(chan struct{}),
		changed:       make(chan struct{}),
		nextID:        FirstUpdateID,
		all:           make(map[int]*entry),
		conflictDelay: 3 * time.Second,
		calls:         make(map[string]int),
		nextMessageID: firstSentMessageID,
		messages:      make(map[[2]int64]json.RawMessage),
		chats:         make(map[int64]json.RawMessage),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// Endpoint returns the API endpoint format string for
// tgbotapi.NewBotAPIWithClient: "http://127.0.0.1:PORT/bot%s/%s".
func (s *Server) Endpoint() string { return s.srv.URL + "/bot%s/%s" }

// URL returns the server's base URL, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.srv.URL }

// Bot returns the bot user getMe answers with.
func (s *Server) Bot() User { return s.bot }

// Close answers waiting long polls with an empty result and shuts the
// server down. It may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}

// SetConflictDelay sets how long a 409 for a terminated long poll is held
// back when another one was answered less than 3 seconds before (3 seconds,
// as on the real server, by default; 0 answers every conflict at once).
func (s *Server) SetConflictDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conflictDelay = d
}

// notifyLocked wakes everything waiting for a change of state. s.mu is held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// AddMessage enqueues a "message" update with a text message (see
// TextMessage) and returns its update_id.
func (s *Server) AddMessage(chatID, fromID int64, messageID int, text string) int {
	return s.AddUpdate(MessageUpdate(TextMessage(chatID, fromID, messageID, text)))
}

// AddUpdate enqueues an arbitrary update and returns the update_id it got.
// u is an Update, a json.RawMessage, []byte or string holding a JSON object,
// or any value that marshals to a JSON object. Its update_id, if any, is
// replaced by the next one in sequence. The object may be malformed for the
// Bot API (say, {"message":{"message_id":"x"}}) as long as it is valid JSON.
// AddUpdate panics if u is not a JSON object.
func (s *Server) AddUpdate(u any) int {
	var raw []byte
	switch v := u.(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	case string:
		raw = []byte(v)
	default:
		b, err := json.Marshal(u)
		if err != nil {
			panic("fakebot: AddUpdate: " + err.Error())
		}
		raw = b
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		panic(fmt.Sprintf("fakebot: AddUpdate: not a JSON object: %.200s", raw))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	obj["update_id"] = json.RawMessage(strconv.Itoa(id))
	b, err := json.Marshal(obj)
	if err != nil {
		panic("fakebot: AddUpdate: " + err.Error())
	}
	e := &entry{id: id, raw: b}
	s.all[id] = e
	s.queue = append(s.queue, e)
	s.rememberLocked(obj)
	s.notifyLocked()
	return id
}

// rememberLocked keeps the messages and chats of an update, so that a reply
// to them carries reply_to_message and the right chat.
func (s *Server) rememberLocked(obj map[string]json.RawMessage) {
	for _, k := range []string{"message", "channel_post"} {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		var m struct {
			MessageID int `json:"message_id"`
			Chat      struct {
				ID int64 `json:"id"`
			} `json:"chat"`
		}
		var chat struct {
			Chat json.RawMessage `json:"chat"`
		}
		if json.Unmarshal(raw, &m) != nil || json.Unmarshal(raw, &chat) != nil || m.Chat.ID == 0 {
			continue
		}
		s.messages[[2]int64{m.Chat.ID, int64(m.MessageID)}] = raw
		s.chats[m.Chat.ID] = chat.Chat
	}
}

// Redeliver serves an update that was already served once more, with the
// same update_id and content, as Telegram does when it did not register the
// confirmation (after a crash, say): the next getUpdates call returns it,
// whatever its offset, in update_id order with anything else due. A later
// call with an offset above updateID confirms it again. It panics if
// updateID was never added.
func (s *Server) Redeliver(updateID int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.all[updateID]
	if !ok {
		panic(fmt.Sprintf("fakebot: Redeliver: unknown update %d", updateID))
	}
	for _, r := range s.redeliveries {
		if r.e == e {
			r.served = false
			s.notifyLocked()
			return
		}
	}
	s.redeliveries = append(s.redeliveries, &redelivery{e: e})
	s.notifyLocked()
}

// Duplicate enqueues a copy of an update's content under a new update_id (a
// duplicate delivery of the same message, the same message_id included) and
// returns the new update_id. It panics if updateID was never added.
func (s *Server) Duplicate(updateID int) int {
	s.mu.Lock()
	e, ok := s.all[updateID]
	s.mu.Unlock()
	if !ok {
		panic(fmt.Sprintf("fakebot: Duplicate: unknown update %d", updateID))
	}
	return s.AddUpdate(e.raw)
}

// FailNext makes the next n requests, of any method, fail with status and
// the body Telegram gives for it: 409 is the getUpdates conflict, 429 "Too
// Many Requests: retry after 1" with parameters.retry_after = 1, 5xx "Internal
// Server Error", "Bad Gateway" and so on, all as {"ok":false,...} JSON. The
// token is still checked first; a failed request has no other effect (a
// failed getUpdates confirms nothing).
func (s *Server) FailNext(status int, n int) { s.FailNextMethod("", status, n) }

// SetSendDelay makes every sendMessage wait d before it sends and answers, as a slow Telegram.
func (s *Server) SetSendDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sendDelay = d
}

// FailNextMethod is FailNext for requests of one method only (say,
// "sendMessage"); requests of other methods are not affected.
func (s *Server) FailNextMethod(method string, status int, n int) {
	s.addFailure(&failure{method: method, status: status, n: n})
}

// FailNextRaw makes the next n requests of method ("" for any) answer status
// with body verbatim: HTML if it starts with '<' (as the 502 page of
// Telegram's front end), JSON otherwise.
func (s *Server) FailNextRaw(method string, status int, body string, n int) {
	s.addFailure(&failure{method: method, status: status, body: []byte(body), n: n})
}

// LoseAnswerNext makes the next n requests of method ("" for any) take effect (a sendMessage
// sends its message) and then drops the connection without an answer, as a timeout or a reset
// after Telegram accepted a request looks to the client.
func (s *Server) LoseAnswerNext(method string, n int) {
	s.addFailure(&failure{method: method, lose: true, n: n})
}

func (s *Server) addFailure(f *failure) {
	if f.n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f)
}

// Sent returns the messages sent so far, oldest first.
func (s *Server) Sent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent...)
}

// WaitSent waits until at least n messages were sent and returns them all, or
// returns what there is and ctx's error.
func (s *Server) WaitSent(ctx context.Context, n int) ([]SentMessage, error) {
	for {
		s.mu.Lock()
		sent, ch := append([]SentMessage(nil), s.sent...), s.changed
		s.mu.Unlock()
		if len(sent) >= n {
			return sent, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return sent, ctx.Err()
		}
	}
}

// Confirmed returns the highest offset a getUpdates call has confirmed: all
// updates with an update_id below it are confirmed. It is 0 before any.
func (s *Server) Confirmed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed
}

// WaitConfirmed waits until Confirmed() > updateID, that is until the client
// has confirmed that update.
func (s *Server) WaitConfirmed(ctx context.Context, updateID int) error {
	for {
		s.mu.Lock()
		ok, ch := s.confirmed > updateID, s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Served returns when an update was first served to a poller, or the zero
// time if it has not been. A redelivery does not change it.
func (s *Server) Served(updateID int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.all[updateID]; ok {
		return e.firstServed
	}
	return time.Time{}
}

// Pending returns how many updates getUpdates would still return: those not
// yet confirmed, served or not, plus pending redeliveries.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingLocked()
}

func (s *Server) pendingLocked() int {
	n := len(s.queue)
	for _, r := range s.redeliveries {
		if len(s.queue) == 0 || r.e.id < s.queue[0].id {
			n++
		}
	}
	return n
}

// Polling reports whether a getUpdates long poll is waiting for updates.
func (s *Server) Polling() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.longPoll != nil
}

// Calls returns how many requests of method reached the server with the right
// token, failed or not ("" counts all methods).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if method == "" {
		n := 0
		for _, c := range s.calls {
			n += c
		}
		return n
	}
	return s.calls[strings.ToLower(method)]
}

// ---- HTTP ----

type apiError struct {
	Ok          bool             `json:"ok"`
	ErrorCode   int              `json:"error_code"`
	Description string           `json:"description"`
	Parameters  *json.RawMessage `json:"parameters,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeResult(w http.ResponseWriter, result any) {
	r, err := json.Marshal(result)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Internal Server Error: "+err.Error())
		return
	}
	writeRawResult(w, r)
}

func writeRawResult(w http.ResponseWriter, result []byte) {
	var b bytes.Buffer
	b.WriteString(`{"ok":true,"result":`)
	b.Write(result)
	b.WriteString(`}`)
	writeJSON(w, http.StatusOK, b.Bytes())
}

func writeError(w http.ResponseWriter, code int, description string) {
	e := apiError{ErrorCode: code, Description: description}
	if code == http.StatusTooManyRequests {
		p := json.RawMessage(`{"retry_after":1}`)
		e.Parameters = &p
		if description == "" {
			e.Description = "Too Many Requests: retry after 1"
		}
	}
	b, _ := json.Marshal(e)
	writeJSON(w, code, b)
}

// standardDescription is the description Telegram gives with an error code.
func standardDescription(code int) string {
	switch code {
	case 400:
		return "Bad Request"
	case 401:
		return "Unauthorized"
	case 403:
		return "Forbidden: bot was blocked by the user"
	case 404:
		return "Not Found"
	case 409:
		return conflictText
	case 429:
		return "Too Many Requests: retry after 1"
	case 500:
		return "Internal Server Error"
	}
	if t := http.StatusText(code); t != "" {
		return t
	}
	return fmt.Sprintf("Error %d", code)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	slash := strings.LastIndexByte(rest, '/')
	if !ok || slash < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	token, method := rest[:slash], strings.ToLower(rest[slash+1:])
	if token != s.token {
		writeError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}

	s.mu.Lock()
	s.calls[method]++
	var fail *failure
	for i, f := range s.failures {
		if f.method == "" || strings.EqualFold(f.method, method) {
			fail = f
			f.n--
			if f.n == 0 {
				s.failures = append(s.failures[:i:i], s.failures[i+1:]...)
			}
			break
		}
	}
	s.mu.Unlock()
	if fail != nil && fail.lose {
		s.serveMethod(httptest.NewRecorder(), r, method)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
		return
	}
	if fail != nil {
		if fail.body == nil {
			writeError(w, fail.status, standardDescription(fail.status))
			return
		}
		ct := "application/json"
		if bytes.HasPrefix(bytes.TrimSpace(fail.body), []byte("<")) {
			ct = "text/html"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(fail.status)
		_, _ = w.Write(fail.body)
		return
	}
	s.serveMethod(w, r, method)
}

// serveMethod carries out one Bot API method and answers it.
func (s *Server) serveMethod(w http.ResponseWriter, r *http.Request, method string) {
	p, err := parseParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	switch method {
	case "getme":
		writeResult(w, s.bot)
	case "getupdates":
		s.getUpdates(w, r, p)
	case "sendmessage":
		s.mu.Lock()
		delay := s.sendDelay
		s.mu.Unlock()
		time.Sleep(delay) // a slow Telegram: the message is sent after it
		s.sendMessage(w, p)
	case "sendchataction", "setmycommands":
		writeResult(w, true)
	case "setmessagereaction":
		s.setReaction(w, p)
	case "answercallbackquery":
		s.answerCallback(w, p)
	case "editmessagetext":
		s.editMessageText(w, p)
	case "deletewebhook":
		if b, _ := strconv.ParseBool(p.Get("drop_pending_updates")); b {
			s.mu.Lock()
			s.confirmLocked(s.nextID)
			s.notifyLocked()
			s.mu.Unlock()
		}
		writeJSON(w, http.StatusOK, []byte(`{"ok":true,"result":true,"description":"Webhook is already deleted"}`))
	case "getwebhookinfo":
		s.mu.Lock()
		n := s.pendingLocked()
		s.mu.Unlock()
		writeResult(w, map[string]any{"url": "", "has_custom_certificate": false, "pending_update_count": n})
	default:
		writeError(w, http.StatusNotFound, "Not Found")
	}
}

// parseParams reads the parameters of a request, whatever its encoding.
func parseParams(r *http.Request) (url.Values, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		v := r.URL.Query()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return v, nil
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return nil, fmt.Errorf("can't parse JSON object: %v", err)
		}
		for k, x := range obj {
			switch x := x.(type) {
			case string:
				v.Set(k, x)
			case json.Number:
				v.Set(k, x.String())
			case bool:
				v.Set(k, strconv.FormatBool(x))
			case nil:
			default:
				b, _ := json.Marshal(x)
				v.Set(k, string(b))
			}
		}
		return v, nil
	case "multipart/form-data":
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, err
		}
		return r.Form, nil
	default:
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		return r.Form, nil
	}
}

// intParam parses an integer parameter the lenient way the real server
// does: absent or unparsable gives def, and the result is clamped to [lo, hi].
func intParam(p url.Values, name string, def, lo, hi int) int {
	n, err := strconv.Atoi(strings.TrimSpace(p.Get(name)))
	if err != nil {
		n = def
	}
	return min(max(n, lo), hi)
}

// ---- getUpdates ----

// resolveOffsetLocked turns the offset parameter into the first update_id to
// return and confirms what it confirms.
func (s *Server) resolveOffsetLocked(offset int) (from int, confirms bool) {
	head := s.nextID
	if len(s.queue) > 0 {
		head = s.queue[0].id
	}
	switch {
	case offset == 0:
		return head, false
	case offset < 0:
		from = max(s.nextID+offset, head)
	case offset > s.nextID+10:
		// The real server treats this as "from_id in the future" and serves
		// from the earliest unconfirmed update, confirming nothing.
		return head, false
	default:
		from = offset
	}
	s.confirmLocked(from)
	return from, true
}

// confirmLocked drops every update below from, and served redeliveries.
func (s *Server) confirmLocked(from int) {
	i := sort.Search(len(s.queue), func(i int) bool { return s.queue[i].id >= from })
	if i > 0 {
		s.queue = append(s.queue[:0:0], s.queue[i:]...)
	}
	kept := s.redeliveries[:0]
	for _, r := range s.redeliveries {
		if !(r.served && r.e.id < from) {
			kept = append(kept, r)
		}
	}
	clear(s.redeliveries[len(kept):])
	s.redeliveries = kept
	if from > s.confirmed {
		s.confirmed = from
		s.notifyLocked()
	}
}

// batchLocked returns the updates due for a call starting at from.
func (s *Server) batchLocked(from, limit int) []*entry {
	var out []*entry
	seen := make(map[int]bool)
	for _, r := range s.redeliveries {
		out = append(out, r.e)
		seen[r.e.id] = true
	}
	i := sort.Search(len(s.queue), func(i int) bool { return s.queue[i].id >= from })
	for _, e := range s.queue[i:] {
		if len(out) >= limit+len(seen) {
			break
		}
		if !seen[e.id] {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].id < out[b].id })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// serveLocked marks a batch as served and encodes it.
func (s *Server) serveLocked(batch []*entry) []byte {
	now := time.Now()
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range batch {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.raw)
		if e.firstServed.IsZero() {
			e.firstServed = now
		}
		for _, r := range s.redeliveries {
			if r.e == e {
				r.served = true
			}
		}
	}
	b.WriteByte(']')
	return b.Bytes()
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p url.Values) {
	offset := intParam(p, "offset", 0, -1<<31, 1<<31-1)
	limit := intParam(p, "limit", 100, 1, 100)
	timeout := time.Duration(intParam(p, "timeout", 0, 0, int(maxLongPollTimeout/time.Second))) * time.Second

	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var me *poller
	expired := false

	s.mu.Lock()
	from, confirms := s.resolveOffsetLocked(offset)
	for {
		batch := s.batchLocked(from, limit)
		if len(batch) > 0 || timeout == 0 || expired {
			body := s.serveLocked(batch)
			if me != nil && s.longPoll == me {
				s.longPoll = nil
			}
			s.notifyLocked()
			s.mu.Unlock()
			writeRawResult(w, body)
			return
		}
		if me == nil {
			if s.longPoll != nil {
				close(s.longPoll.terminated)
			}
			me = &poller{terminated: make(chan struct{})}
			s.longPoll = me
			s.notifyLocked()
		}
		changed := s.changed
		s.mu.Unlock()

		select {
		case <-changed:
		case <-timer:
			expired = true
		case <-me.terminated:
			s.answerConflict(w, r)
			return
		case <-r.Context().Done():
			s.mu.Lock()
			if s.longPoll == me {
				s.longPoll = nil
				s.notifyLocked()
			}
			s.mu.Unlock()
			return
		case <-s.done:
			expired = true
		}

		s.mu.Lock()
		if confirms {
			// Updates that arrived below the offset are dropped, as on the
			// real server, where every wake-up re-runs the query.
			s.confirmLocked(from)
		}
	}
}

// answerConflict answers a terminated long poll with 409, held back if
// another conflict was answered less than 3 seconds ago.
func (s *Server) answerConflict(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := time.Now()
	var delay time.Duration
	if now.Before(s.nextConflict) {
		delay = s.conflictDelay
	} else {
		s.nextConflict = now.Add(3 * time.Second)
	}
	s.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.done:
		}
	}
	writeError(w, http.StatusConflict, conflictText)
}

// ---- sendMessage ----

func (s *Server) sendMessage(w http.ResponseWriter, p url.Values) {
	chatRef := strings.TrimSpace(p.Get("chat_id"))
	if chatRef == "" {
		writeError(w, http.StatusBadRequest, "Bad Request: chat_id is empty")
		return
	}
	chatID, err := strconv.ParseInt(chatRef, 10, 64)
	if err != nil || chatID == 0 {
		writeError(w, http.StatusBadRequest, "Bad Request: chat not found")
		return
	}
	text, ok := shownText(w, p)
	if !ok {
		return
	}
	if strings.TrimSpace(text) == "" {
		writeError(w, http.StatusBadRequest, "Bad Request: message text is empty")
		return
	}
	if len(utf16.Encode([]rune(text))) > 4096 {
		writeError(w, http.StatusBadRequest, "Bad Request: message is too long")
		return
	}
	replyTo := 0
	if v := p.Get("reply_to_message_id"); v != "" {
		replyTo, _ = strconv.Atoi(v)
	}
	if v := p.Get("reply_parameters"); v != "" {
		var rp struct {
			MessageID int `json:"message_id"`
		}
		if err := json.Unmarshal([]byte(v), &rp); err != nil {
			writeError(w, http.StatusBadRequest, "Bad Request: can't parse reply parameters JSON object")
			return
		}
		replyTo = rp.MessageID
	}

	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextMessageID
	s.nextMessageID++

	msg := map[string]any{
		"message_id": id,
		"from":       s.bot,
		"date":       now.Unix(),
		"text":       text,
	}
	if c, ok := s.chats[chatID]; ok {
		msg["chat"] = c
	} else {
		msg["chat"] = ChatFor(chatID, User{FirstName: "User"})
	}
	if ents := CommandEntities(text); ents != nil {
		msg["entities"] = ents
	}
	if replyTo != 0 {
		if m, ok := s.messages[[2]int64{chatID, int64(replyTo)}]; ok {
			msg["reply_to_message"] = m
		}
	}
	if v := p.Get("reply_markup"); v != "" {
		var markup InlineKeyboardMarkup
		if err := json.Unmarshal([]byte(v), &markup); err != nil {
			writeError(w, http.StatusBadRequest, "Bad Request: can't parse reply keyboard markup JSON object")
			return
		}
		for _, row := range markup.InlineKeyboard {
			for _, b := range row {
				if len(b.CallbackData) > 64 {
					writeError(w, http.StatusBadRequest, "Bad Request: BUTTON_DATA_INVALID")
					return
				}
			}
		}
		if len(markup.InlineKeyboard) > 0 {
			msg["reply_markup"] = markup
		}
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Internal Server Error: "+err.Error())
		return
	}
	s.messages[[2]int64{chatID, int64(id)}] = raw
	params := make(url.Values, len(p))
	for k, v := range p {
		params[k] = append([]string(nil), v...)
	}
	s.sent = append(s.sent, SentMessage{
		MessageID: id, ChatID: chatID, Text: p.Get("text"), ReplyTo: replyTo,
		Params: params, At: now,
	})
	s.notifyLocked()
	writeRawResult(w, raw)
}

// shownText is the text parameter as the chat shows it: with parse_mode HTML, its tags taken out
// and its entities decoded, or Telegram's 400 for markup it cannot parse (answered on w, false).
func shownText(w http.ResponseWriter, p url.Values) (string, bool) {
	text := p.Get("text")
	if !strings.EqualFold(p.Get("parse_mode"), "HTML") {
		return text, true
	}
	shown, err := parseHTML(text)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return "", false
	}
	return shown, true
}

// Reaction is a reaction the bot set with setMessageReaction.
type Reaction struct {
	ChatID    int64
	MessageID int
	// Emoji is the reaction's emoji; empty when the bot removed its reaction.
	Emoji string
}

// Reactions returns the reactions set so far, oldest first.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions...)
}

// setReaction answers setMessageReaction: the chat and message must be numbers, the reaction a
// JSON list of at most one {"type":"emoji","emoji":E} (what a bot may set).
func (s *Server) setReaction(w http.ResponseWriter, p url.Values) {
	chatID, err := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	if err != nil || chatID == 0 {
		writeError(w, http.StatusBadRequest, "Bad Request: chat not found")
		return
	}
	msgID, err := strconv.Atoi(p.Get("message_id"))
	if err != nil || msgID <= 0 {
		writeError(w, http.StatusBadRequest, "Bad Request: message to react not found")
		return
	}
	var list []struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
	if raw := p.Get("reaction"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &list); err != nil || len(list) > 1 {
			writeError(w, http.StatusBadRequest, "Bad Request: REACTIONS_TOO_MANY")
			return
		}
	}
	r := Reaction{ChatID: chatID, MessageID: msgID}
	if len(list) == 1 {
		if list[0].Type != "emoji" || list[0].Emoji == "" {
			writeError(w, http.StatusBadRequest, "Bad Request: REACTION_INVALID")
			return
		}
		r.Emoji = list[0].Emoji
	}
	s.mu.Lock()
	s.reactions = append(s.reactions, r)
	s.mu.Unlock()
	writeResult(w, true)
}

// ---- inline keyboards, callback queries and edits ----

// InlineKeyboardButton is a button under a message; a press sends CallbackData back.
type InlineKeyboardButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
}

// InlineKeyboardMarkup is a message's inline keyboard (reply_markup).
type InlineKeyboardMarkup struct {
	InlineKeyboard [][]InlineKeyboardButton `json:"inline_keyboard"`
}

// Buttons returns the inline buttons a sent message carries now (none once an edit took them
// away), label to data.
func (s *Server) Buttons(chatID int64, messageID int) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m struct {
		ReplyMarkup *InlineKeyboardMarkup `json:"reply_markup"`
	}
	_ = json.Unmarshal(s.messages[[2]int64{chatID, int64(messageID)}], &m)
	out := map[string]string{}
	if m.ReplyMarkup != nil {
		for _, row := range m.ReplyMarkup.InlineKeyboard {
			for _, b := range row {
				out[b.Text] = b.CallbackData
			}
		}
	}
	return out
}

// Message returns a message the bot sent as it is now (edits applied), as the Bot API
// serialises it; nil when there is none. Tests put it in reply_to_message.
func (s *Server) Message(chatID int64, messageID int) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(json.RawMessage(nil), s.messages[[2]int64{chatID, int64(messageID)}]...)
}

// CallbackQuery is a press of an inline button, as the Bot API sends it.
type CallbackQuery struct {
	ID           string          `json:"id"`
	From         User            `json:"from"`
	Message      json.RawMessage `json:"message,omitempty"`
	ChatInstance string          `json:"chat_instance"`
	Data         string          `json:"data,omitempty"`
}

// CallbackQueryUpdate is a "callback_query" update.
type CallbackQueryUpdate struct {
	UpdateID      int           `json:"update_id"`
	CallbackQuery CallbackQuery `json:"callback_query"`
}

// Press enqueues a press by user fromID of the button with label on the bot's message
// messageID in chatID, as Telegram sends it (the message as it is now); it returns the
// callback query's id, or "" when the message carries no such button.
func (s *Server) Press(chatID, fromID int64, messageID int, label string) string {
	data, ok := s.Buttons(chatID, messageID)[label]
	if !ok {
		return ""
	}
	return s.PressData(chatID, fromID, messageID, data)
}

// PressData enqueues a press carrying data (any, a forged one too) on message messageID.
func (s *Server) PressData(chatID, fromID int64, messageID int, data string) string {
	s.mu.Lock()
	s.nextCallback++
	id := fmt.Sprintf("%d%06d", chatID&0xffff, s.nextCallback)
	s.mu.Unlock()
	s.AddUpdate(CallbackQueryUpdate{CallbackQuery: CallbackQuery{ID: id, From: NewUser(fromID), Message: s.Message(chatID, messageID),
		ChatInstance: fmt.Sprint(chatID), Data: data}})
	return id
}

// CallbackAnswer is the bot's answerCallbackQuery.
type CallbackAnswer struct {
	ID   string
	Text string
}

// CallbackAnswers returns the answers to presses so far, oldest first.
func (s *Server) CallbackAnswers() []CallbackAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CallbackAnswer(nil), s.callbacks...)
}

// answerCallback answers answerCallbackQuery: the id must be one Press gave, answered once at
// most (Telegram refuses an old or repeated one), the text at most 200 characters.
func (s *Server) answerCallback(w http.ResponseWriter, p url.Values) {
	id := p.Get("callback_query_id")
	text := p.Get("text")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.callbacks {
		if c.ID == id {
			writeError(w, http.StatusBadRequest, "Bad Request: query is too old and response timeout expired or query ID is invalid")
			return
		}
	}
	if id == "" || utf8.RuneCountInString(text) > 200 {
		writeError(w, http.StatusBadRequest, "Bad Request: query ID is invalid or text too long")
		return
	}
	s.callbacks = append(s.callbacks, CallbackAnswer{ID: id, Text: text})
	s.notifyLocked()
	writeResult(w, true)
}

// Edit is an editMessageText the bot made.
type Edit struct {
	ChatID    int64
	MessageID int
	Text      string
	// Buttons: the edit kept (or set) an inline keyboard.
	Buttons bool
	At      time.Time
}

// Edits returns the edits so far, oldest first.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Edit(nil), s.edits...)
}

// editMessageText answers editMessageText for a message the bot sent: its text changes, and its
// inline keyboard is what reply_markup says (none without it), as on Telegram; an edit that
// changes nothing is refused with Telegram's "message is not modified".
func (s *Server) editMessageText(w http.ResponseWriter, p url.Values) {
	chatID, _ := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	msgID, _ := strconv.Atoi(p.Get("message_id"))
	text, ok := shownText(w, p)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, ok := s.messages[[2]int64{chatID, int64(msgID)}]
	if !ok {
		writeError(w, http.StatusBadRequest, "Bad Request: message to edit not found")
		return
	}
	if strings.TrimSpace(text) == "" {
		writeError(w, http.StatusBadRequest, "Bad Request: message text is empty")
		return
	}
	var msg map[string]any
	_ = json.Unmarshal(raw, &msg)
	_, hadMarkup := msg["reply_markup"]
	markup := p.Get("reply_markup")
	if msg["text"] == text && !hadMarkup && markup == "" {
		writeError(w, http.StatusBadRequest, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
		return
	}
	msg["text"] = text
	msg["edit_date"] = time.Now().Unix()
	delete(msg, "reply_markup")
	if markup != "" {
		var m InlineKeyboardMarkup
		if json.Unmarshal([]byte(markup), &m) == nil && len(m.InlineKeyboard) > 0 {
			msg["reply_markup"] = m
		}
	}
	edited, _ := json.Marshal(msg)
	s.messages[[2]int64{chatID, int64(msgID)}] = edited
	_, buttons := msg["reply_markup"]
	s.edits = append(s.edits, Edit{ChatID: chatID, MessageID: msgID, Text: p.Get("text"), Buttons: buttons, At: time.Now()})
	s.notifyLocked()
	writeRawResult(w, edited)
}
