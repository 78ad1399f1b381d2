package mcp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// stubBackend records what the tools did: replies, sends, reactions, changes, inbox reads.
type stubBackend struct {
	mu sync.Mutex
	// oldest, when set, is the one pending intent of the chat (open, when set, lists them all,
	// oldest first).
	oldest  string
	open    []string
	replied []string
	// sentKeys are the answers an intent sent, by intent and key (an intent sends an answer
	// once); failAfterSend makes the next reply send and then fail (a slow Telegram).
	sentKeys      map[string]bool
	failAfterSend bool
	unlinked      int
	reacted       []string
	changed       []string
	read          []string
	pending       []string
	// sessions are the intents' recorded sessions; an intent not listed is secretary's,
	// "intent/42/404" does not exist.
	sessions map[string]string
}

func (s *stubBackend) Reply(_ context.Context, id string, r workflows.ReplyRequest) (workflows.ReplyRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sentKeys == nil {
		s.sentKeys = map[string]bool{}
	}
	if s.sentKeys[id+" "+r.Key] {
		return workflows.ReplyRecord{Key: r.Key, MessageIDs: []int{1}, Repeated: true}, nil
	}
	s.sentKeys[id+" "+r.Key] = true
	s.replied = append(s.replied, id+" "+r.Key)
	if s.oldest == id {
		s.oldest = ""
	}
	s.open = slices.DeleteFunc(s.open, func(o string) bool { return o == id })
	if s.failAfterSend {
		s.failAfterSend = false
		return workflows.ReplyRecord{}, errors.New("reply to " + id + ": context deadline exceeded")
	}
	return workflows.ReplyRecord{Key: r.Key, MessageIDs: []int{1}}, nil
}

func (s *stubBackend) PendingInChat(_ context.Context, chat string) ([]intent.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.open
	if s.oldest != "" {
		ids = []string{s.oldest}
	}
	var out []intent.Summary
	for _, id := range ids {
		c, m, _ := workflows.ParseIntentID(id)
		if c == chat {
			out = append(out, intent.Summary{ID: id, ChatID: c, MessageID: m, Snippet: "text of " + m})
		}
	}
	return out, nil
}

func (s *stubBackend) SendUnlinked(context.Context, string, string, string, string) ([]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unlinked++
	return []int{2}, nil
}

func (s *stubBackend) React(_ context.Context, chat, msg, emoji string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reacted = append(s.reacted, chat+"/"+msg+" "+emoji)
	return nil
}

func (s *stubBackend) Pending(_ context.Context, session string) ([]PendingIntent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, session)
	return nil, nil
}

func (s *stubBackend) Change(_ context.Context, id, update string, _ any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changed = append(s.changed, update+" "+id)
	return nil
}

func (s *stubBackend) InboxRead(_ context.Context, agent string) ([]workflows.InboxMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read = append(s.read, agent)
	return nil, nil
}

func (s *stubBackend) InboxSend(context.Context, string, workflows.InboxSend) error { return nil }

func (s *stubBackend) IntentSession(_ context.Context, id string) (string, error) {
	if id == "intent/42/404" {
		return "", intent.ErrNotFound
	}
	if session, ok := s.sessions[id]; ok {
		return session, nil
	}
	return "secretary", nil
}

// scoped is a config of two sessions: secretary (the default: every allowed chat that no
// session lists, here 42 and -100777) and ops (chat 77); chats 42, -100777 and 77 are allowed.
func scoped() *config.Config {
	return &config.Config{
		Telegram: config.Telegram{AllowedChatIDs: []int64{42, -100777, 77}},
		Sessions: map[string]config.Session{
			"secretary": {Default: true},
			"ops":       {Chats: []int64{77}},
		},
	}
}

func secretary() Settings {
	return Settings{Session: "secretary", Agent: "secretary", Config: scoped()}
}

// The intent a reply answers: named, or chat and reply_to, or the chat's oldest pending one;
// with nothing pending the answer is a follow-up, sent as it is. The key is the answer's.
func TestReplyTarget(t *testing.T) {
	freshLedgers()
	b := &stubBackend{oldest: "intent/42/5"}
	ctx := context.Background()
	for _, a := range []ReplyArgs{
		{Intent: "42/7", Text: "a"},
		{ChatID: "42", ReplyTo: "8", Text: "b"},
		{ChatID: "42", Text: "c"},
	} {
		if _, err := reply(ctx, b, secretary(), a); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"intent/42/7 " + workflows.ReplyKey("a"), "intent/42/8 " + workflows.ReplyKey("b"), "intent/42/5 " + workflows.ReplyKey("c")}
	for i := range want {
		if b.replied[i] != want[i] {
			t.Errorf("reply %d went to %q, want %q", i, b.replied[i], want[i])
		}
	}
	b.oldest = ""
	if res, err := reply(ctx, b, secretary(), ReplyArgs{ChatID: "42", Text: "follow-up"}); err != nil || b.unlinked != 1 || res.Closed {
		t.Errorf("follow-up: %+v %v", res, err)
	}
	for _, a := range []ReplyArgs{{ChatID: "42"}, {Text: "x"}, {ChatID: "4/2", ReplyTo: "1", Text: "x"}, {Intent: "nope", Text: "x"}} {
		if _, err := reply(ctx, b, secretary(), a); err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
	if _, err := reply(ctx, b, secretary(), ReplyArgs{ChatID: "42", ReplyTo: "9", Text: "   "}); err == nil {
		t.Error("a blank answer was accepted")
	}
}

// Issue 23: a session's server reaches only the chats the session serves within the
// allowlist: the default session the allowed chats no session lists, another session its own.
func TestServesChat(t *testing.T) {
	for _, c := range []struct {
		session string
		cfg     func(*config.Config)
		chat    string
		ok      bool
	}{
		{"secretary", nil, "42", true},
		{"secretary", nil, "-100777", true},
		{"secretary", nil, "999", false},   // not allowed
		{"secretary", nil, "77", false},    // ops's chat
		{"ops", nil, "77", true},           // its own
		{"ops", nil, "42", false},          // the default session's
		{"secretary", nil, "042", false},   // not the chat's own spelling
		{"secretary", nil, "+42", false},   // idem
		{"secretary", nil, "@chan", false}, // a channel name the Bot API would take
		{"secretary", nil, "", false},
		// Without a chat allowlist the default session serves every chat no session lists.
		{"secretary", func(c *config.Config) { c.Telegram.AllowedChatIDs = nil }, "999", true},
		{"secretary", func(c *config.Config) { c.Telegram.AllowedChatIDs = nil }, "77", false},
		{"ops", func(c *config.Config) { c.Telegram.AllowedChatIDs = nil }, "999", false},
		// Listed by the session but not allowed: refused all the same.
		{"ops", func(c *config.Config) { c.Telegram.AllowedChatIDs = []int64{42} }, "77", false},
		// No default session: a chat no session lists is nobody's.
		{"secretary", func(c *config.Config) { c.Sessions["secretary"] = config.Session{} }, "42", false},
	} {
		cfg := scoped()
		if c.cfg != nil {
			c.cfg(cfg)
		}
		err := Settings{Session: c.session, Config: cfg}.servesChat(c.chat)
		if (err == nil) != c.ok {
			t.Errorf("session %s, chat %q: %v, want ok=%v", c.session, c.chat, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "refused") {
			t.Errorf("session %s, chat %q: the error %q does not say it was refused", c.session, c.chat, err)
		}
	}
	for _, s := range []Settings{{Config: scoped()}, {Session: "secretary"}} {
		if err := s.servesChat("42"); err == nil {
			t.Errorf("%+v: a server with no session or no config served chat 42", s)
		}
	}
}

// connect runs the server for s on b and returns a client session to it.
func connect(t *testing.T, b Backend, s Settings) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	if _, err := NewServer(b, s, "test").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (bool, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return res.IsError, strings.Join(parts, " ")
}

// Issue 23: every tool acts only for the calling session: a reply or reaction to a chat it does
// not serve, a change to another session's intent, another agent's inbox are tool errors that
// say so, and nothing reaches the backend; its own chats, intents and inbox work as before.
func TestToolsActOnlyForTheirSession(t *testing.T) {
	freshLedgers()
	b := &stubBackend{oldest: "intent/42/5", sessions: map[string]string{"intent/42/3": "ops", "intent/77/1": "ops"}}
	cs := connect(t, b, secretary())
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"reply", map[string]any{"chat_id": "999", "text": "leaked context"}, "allowed_chat_ids"},
		{"reply", map[string]any{"chat_id": "999", "reply_to": "1", "text": "leaked context"}, "allowed_chat_ids"},
		{"reply", map[string]any{"chat_id": "77", "text": "x"}, "not served by session secretary"},
		{"reply", map[string]any{"chat_id": "77", "reply_to": "1", "text": "x"}, "not served by session secretary"},
		{"reply", map[string]any{"chat_id": "42", "intent": "intent/999/1", "text": "x"}, "allowed_chat_ids"}, // the intent's chat counts
		{"reply", map[string]any{"chat_id": "42", "intent": "42/3", "text": "x"}, "another session"},
		{"reply", map[string]any{"chat_id": "42", "reply_to": "404", "text": "x"}, "no such intent"},
		{"react", map[string]any{"chat_id": "999", "message_id": "1", "emoji": "👍"}, "allowed_chat_ids"},
		{"react", map[string]any{"chat_id": "77", "message_id": "1", "emoji": "👍"}, "not served"},
		{"close", map[string]any{"intent": "42/3"}, "another session"},
		{"link", map[string]any{"intent": "intent/77/1", "job": "j"}, "another session"},
		{"ignore", map[string]any{"intent": "42/3", "reason": "spam"}, "another session"},
		{"inbox_read", map[string]any{"agent": "ops"}, "own inbox"},
	} {
		isErr, text := call(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: error=%v %q, want a tool error with %q", c.tool, c.args, isErr, text, c.want)
		}
	}
	if len(b.replied) != 0 || b.unlinked != 0 || len(b.reacted) != 0 || len(b.changed) != 0 || len(b.read) != 0 {
		t.Fatalf("a refused call reached the backend: replied %v, unlinked %d, reacted %v, changed %v, read %v", b.replied, b.unlinked, b.reacted, b.changed, b.read)
	}

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"reply", map[string]any{"chat_id": "42", "reply_to": "7", "text": "answer"}},
		{"reply", map[string]any{"chat_id": "", "intent": "-100777/2", "text": "answer"}},
		{"reply", map[string]any{"chat_id": "42", "text": "to the oldest"}},
		{"react", map[string]any{"chat_id": "42", "message_id": "7", "emoji": "👍"}},
		{"close", map[string]any{"intent": "42/7"}},
		{"link", map[string]any{"intent": "42/8", "job": "j"}},
		{"ignore", map[string]any{"intent": "intent/42/9", "reason": "spam"}},
		{"inbox_read", map[string]any{}},
		{"inbox_read", map[string]any{"agent": "secretary"}},
		{"pending", map[string]any{}},
	} {
		if isErr, text := call(t, cs, c.tool, c.args); isErr {
			t.Errorf("%s %v: %s", c.tool, c.args, text)
		}
	}
	if len(b.replied) != 3 || len(b.reacted) != 1 || len(b.read) != 2 || b.read[0] != "secretary" || len(b.pending) != 1 || b.pending[0] != "secretary" {
		t.Errorf("replied %v, reacted %v, read %v, pending %v", b.replied, b.reacted, b.read, b.pending)
	}
	if want := "close intent/42/7,link intent/42/8,ignore intent/42/9"; strings.Join(b.changed, ",") != want {
		t.Errorf("changed %v, want %s", b.changed, want)
	}

	// The ops session's server: its chat and intents, not the default session's.
	ops := &stubBackend{sessions: map[string]string{"intent/77/1": "ops"}}
	cs = connect(t, ops, Settings{Session: "ops", Agent: "ops", Config: scoped()})
	if isErr, text := call(t, cs, "reply", map[string]any{"chat_id": "77", "reply_to": "1", "text": "ok"}); isErr {
		t.Errorf("ops replying in its own chat: %s", text)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"reply", map[string]any{"chat_id": "42", "text": "x"}},
		{"close", map[string]any{"intent": "42/7"}},
		{"inbox_read", map[string]any{"agent": "secretary"}},
	} {
		if isErr, _ := call(t, cs, c.tool, c.args); !isErr {
			t.Errorf("ops: %s %v accepted", c.tool, c.args)
		}
	}
	if len(ops.replied) != 1 || len(ops.changed) != 0 || len(ops.read) != 0 {
		t.Errorf("ops: replied %v, changed %v, read %v", ops.replied, ops.changed, ops.read)
	}

	// A server that could not tell its session (and no default exists) acts on nothing.
	none := &stubBackend{}
	cs = connect(t, none, Settings{Config: scoped()})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"reply", map[string]any{"chat_id": "42", "reply_to": "7", "text": "x"}},
		{"reply", map[string]any{"chat_id": "42", "text": "x"}},
		{"react", map[string]any{"chat_id": "42", "message_id": "7", "emoji": "👍"}},
		{"close", map[string]any{"intent": "42/7"}},
		{"pending", map[string]any{}},
		{"inbox_read", map[string]any{}},
	} {
		if isErr, _ := call(t, cs, c.tool, c.args); !isErr {
			t.Errorf("no session: %s %v accepted", c.tool, c.args)
		}
	}
	if len(none.replied) != 0 || none.unlinked != 0 || len(none.reacted) != 0 || len(none.changed) != 0 || len(none.pending) != 0 || len(none.read) != 0 {
		t.Errorf("no session: the backend was used: %+v", none)
	}
}

// Issue 32 (holes 1 and 2): without reply_to, a call is reserved against its message before it
// is sent. Two messages answered with the same text both get it; a call retried after an error
// (the answer went out, the wait did not last) goes to the same message and sends nothing more,
// never to the next one; a follow-up with nothing pending is sent each time; several pending
// messages make the agent say which one it answers. The ledger survives a restart of the MCP
// server (it lives in data_dir).
func TestReplyWithoutReplyTo(t *testing.T) {
	s := secretary()
	s.Config.DataDir = t.TempDir()
	b := &stubBackend{oldest: "intent/42/1"}
	ctx := context.Background()
	if res, err := reply(ctx, b, s, ReplyArgs{ChatID: "42", Text: "OK"}); err != nil || res.Intent != "intent/42/1" {
		t.Fatalf("M1: %+v %v", res, err)
	}
	b.oldest = "intent/42/2"
	if res, err := reply(ctx, b, s, ReplyArgs{ChatID: "42", Text: "OK"}); err != nil || res.Intent != "intent/42/2" || res.Repeated {
		t.Fatalf("M2 answered with the same text: %+v %v", res, err)
	}
	if len(b.replied) != 2 {
		t.Fatalf("replies %v, want one to each message", b.replied)
	}

	// A slow Telegram: the answer to 3 goes out, the call ends in an error; 4 arrives.
	b.oldest, b.failAfterSend = "intent/42/3", true
	if _, err := reply(ctx, b, s, ReplyArgs{ChatID: "42", Text: "done"}); err == nil {
		t.Fatal("the failed call reported success")
	}
	b.oldest = "intent/42/4"
	freshLedgers() // a new process (empty memory) reads the ledger from data_dir
	res, err := reply(ctx, b, s, ReplyArgs{ChatID: "42", Text: "done"})
	if err != nil || res.Intent != "intent/42/3" || !res.Repeated || len(b.replied) != 3 {
		t.Fatalf("the retried call: %+v %v, replies %v; want it answered from message 3, nothing sent", res, err, b.replied)
	}
	if b.oldest != "intent/42/4" {
		t.Fatal("message 4 was closed by an answer to 3")
	}

	// Nothing pending: a follow-up, each time it is asked for.
	b.oldest = ""
	for range 2 {
		if res, err := reply(ctx, b, s, ReplyArgs{ChatID: "42", Text: "follow-up"}); err != nil || res.Closed {
			t.Fatalf("follow-up: %+v %v", res, err)
		}
	}
	if b.unlinked != 2 {
		t.Fatalf("follow-ups sent %d times, want 2", b.unlinked)
	}

	// Several pending: refused, with the list; nothing sent.
	b.open = []string{"intent/42/5", "intent/42/6"}
	_, err = reply(ctx, b, s, ReplyArgs{ChatID: "42", Text: "which?"})
	if err == nil || !strings.Contains(err.Error(), "reply_to=5") || !strings.Contains(err.Error(), "reply_to=6") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("several pending: %v", err)
	}
	if len(b.replied) != 3 || b.unlinked != 2 {
		t.Fatalf("something was sent: %v, %d", b.replied, b.unlinked)
	}
	// A list that still shows a message this tool answered (visibility is late) does not make
	// it pending again.
	b.open = []string{"intent/42/2", "intent/42/6"}
	if res, err := reply(ctx, b, s, ReplyArgs{ChatID: "42", Text: "six"}); err != nil || res.Intent != "intent/42/6" {
		t.Fatalf("late list: %+v %v", res, err)
	}
	if info, err := os.Stat(filepath.Join(s.Config.DataDir, "replies", "secretary.json")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("ledger file: %v %v", info, err)
	}
}

// freshLedgers forgets the process's reply ledgers (as a new MCP server starts).
func freshLedgers() {
	ledgersMu.Lock()
	ledgers = map[string]*replyLedger{}
	ledgersMu.Unlock()
}

// Issue 37: the MCP server of an agent started by hand names no session when it starts; once the
// agent's hooks bind it, each call acts for that session, and only for it.
func TestToolsActForTheSessionTheAgentWasBoundTo(t *testing.T) {
	freshLedgers()
	b := &stubBackend{oldest: "intent/42/5", sessions: map[string]string{"intent/77/1": "ops"}}
	bound := ""
	s := secretary()
	s.Session, s.Bound = "", func() (string, error) {
		if bound == "" {
			return "", errors.New("no agent in tmux pane %9 is bound to a session yet")
		}
		return bound, nil
	}
	cs := connect(t, b, s)
	if isErr, text := call(t, cs, "react", map[string]any{"chat_id": "42", "message_id": "7", "emoji": "👍"}); !isErr || !strings.Contains(text, "cannot tell which intentq session") || !strings.Contains(text, "pane %9") {
		t.Fatalf("before the binding: error=%v %q", isErr, text)
	}
	bound = "secretary"
	if isErr, text := call(t, cs, "react", map[string]any{"chat_id": "42", "message_id": "7", "emoji": "👍"}); isErr {
		t.Fatalf("bound to secretary, its own chat: %q", text)
	}
	if isErr, text := call(t, cs, "close", map[string]any{"intent": "intent/77/1"}); !isErr || !strings.Contains(text, "another session") {
		t.Fatalf("bound to secretary, ops's intent: error=%v %q", isErr, text)
	}
}

// Issue 61: a server that cannot tell its session (no --session, no agent naming one, no
// binding) acts for none, the default session neither: every session tool is a tool error that
// says why and what to do, and nothing is read, sent or closed.
func TestToolsRefuseWhenTheSessionIsUnknown(t *testing.T) {
	freshLedgers()
	why := errors.New("it runs outside tmux, with no --session and no INTENTQ_AGENT_ID")
	for name, c := range map[string]struct {
		s   Settings
		why string
	}{
		"no session":            {Settings{Config: scoped()}, errNoSession.Error()},
		"bound to none":         {Settings{Config: scoped(), Bound: func() (string, error) { return "", why }}, why.Error()},
		"bound to none, no why": {Settings{Config: scoped(), Bound: func() (string, error) { return "", nil }}, errNoSession.Error()},
		"an agent, bound none":  {Settings{Config: scoped(), Agent: "helper", Bound: func() (string, error) { return "", why }}, why.Error()},
	} {
		b := &stubBackend{oldest: "intent/42/5"}
		cs := connect(t, b, c.s)
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"pending", map[string]any{}},
			{"reply", map[string]any{"chat_id": "42", "text": "x"}},
			{"reply", map[string]any{"chat_id": "42", "reply_to": "5", "text": "x"}},
			{"reply", map[string]any{"chat_id": "", "intent": "42/5", "text": "x"}},
			{"react", map[string]any{"chat_id": "42", "message_id": "5", "emoji": "👍"}},
			{"close", map[string]any{"intent": "42/5"}},
			{"link", map[string]any{"intent": "42/5", "job": "j"}},
			{"ignore", map[string]any{"intent": "42/5", "reason": "x"}},
		} {
			isErr, text := call(t, cs, tc.tool, tc.args)
			if !isErr || !strings.Contains(text, "cannot tell which intentq session") || !strings.Contains(text, c.why) ||
				!strings.Contains(text, "starter mcp --session SESSION") || !strings.Contains(text, "starter run-agent") {
				t.Errorf("%s: %s %v: error=%v %q, want a refusal that says why (%q) and what to do", name, tc.tool, tc.args, isErr, text, c.why)
			}
		}
		if len(b.pending) != 0 || len(b.replied) != 0 || b.unlinked != 0 || len(b.reacted) != 0 || len(b.changed) != 0 {
			t.Errorf("%s: a refused call reached the backend: pending %v, replied %v, unlinked %d, reacted %v, changed %v", name, b.pending, b.replied, b.unlinked, b.reacted, b.changed)
		}
	}
}
