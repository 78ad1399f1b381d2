package service_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/doors/hooks/hooktemporal"
	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/inbox"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/internal/platform/archive"
	"github.com/intentq/intentq/internal/platform/doctor"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/platform/plugin"
	"github.com/intentq/intentq/internal/policy"
	"github.com/intentq/intentq/internal/redact"
	"github.com/intentq/intentq/internal/service"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/internal/testkit/peers"
	"github.com/intentq/intentq/internal/testkit/runlog"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

const (
	botToken    = "123456:test-token"
	allowedChat = int64(1001)
	allowedUser = int64(2002)
	stranger    = int64(6666)
)

// startService runs the whole service on the embedded server with the given config changes and
// returns it with an observer of its logs.
func startService(t *testing.T, cfg *config.Config) (*service.Service, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	return testenv.StartService(t, cfg, zap.New(core)), logs
}

// telegramService starts a service whose Telegram door polls a Bot API stand-in (botToken) and
// records what allowedChat sends, with no reminders during the test.
func telegramService(t *testing.T) (*service.Service, *observer.ObservedLogs, *fakebot.Server, *config.Config) {
	t.Helper()
	bot, cfg := telegramConfig(t)
	svc, logs := startService(t, cfg)
	return svc, logs, bot, cfg
}

// telegramConfig is telegramService's Bot API stand-in and config, for a test that changes the
// config before the service starts.
func telegramConfig(t *testing.T) (*fakebot.Server, *config.Config) {
	t.Helper()
	bot := fakebot.New(botToken)
	t.Cleanup(bot.Close)
	cfg := testenv.Config(t)
	cfg.Telegram.Token = botToken
	cfg.Telegram.APIEndpoint = bot.Endpoint()
	cfg.Telegram.AllowedChatIDs = []int64{allowedChat}
	cfg.Reminders.FirstAfter = time.Hour
	return bot, cfg
}

func waitUntil(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func listAll(t *testing.T, svc *service.Service) []intent.Summary {
	t.Helper()
	list, err := intent.List(context.Background(), svc.Client(), intent.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// I1, I4: a burst through the Bot API door, one message served twice and one from a stranger,
// yields exactly the allowed messages as intents; then a burst of 500 yields 500 more.
func TestI1TelegramBurst(t *testing.T) {
	svc, logs, bot, _ := telegramService(t)

	var last int
	for i := 1; i <= 4; i++ {
		last = bot.AddMessage(allowedChat, allowedUser, i, fmt.Sprintf("burst message %d", i))
	}
	dup := bot.Duplicate(last - 1) // message 3 delivered twice, under a new update_id
	strangerUpdate := bot.AddMessage(stranger, stranger, 99, "let me in")
	bot.Redeliver(last) // and message 4 served again with its own update_id

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := bot.WaitConfirmed(ctx, max(dup, strangerUpdate)); err != nil {
		t.Fatalf("poller did not confirm the burst: %v", err)
	}
	waitUntil(t, "4 intents", 10*time.Second, func() bool { return len(listAll(t, svc)) >= 4 })
	list := listAll(t, svc)
	if len(list) != 4 {
		t.Fatalf("got %d intents, want 4: %+v", len(list), list)
	}
	for i, s := range list {
		want := workflows.IntentID(fmt.Sprint(allowedChat), fmt.Sprint(i+1))
		if s.ID != want || s.Status != workflows.StatusPending || s.Session != config.DefaultSessionName {
			t.Errorf("intent %d = %+v, want %s pending in secretary", i, s, want)
		}
	}
	rejected := logs.FilterMessageSnippet("not on the allowlist").All()
	if len(rejected) != 1 {
		t.Fatalf("rejections logged: %d, want 1", len(rejected))
	}
	if fields := rejected[0].ContextMap(); fields["chat"] != stranger || fields["user"] != stranger {
		t.Errorf("rejection fields = %v, want the stranger's IDs", fields)
	}
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.Message, e.ContextMap()), "let me in") || strings.Contains(fmt.Sprint(e.ContextMap()), "burst message") {
			t.Errorf("message text in logs: %s %v", e.Message, e.ContextMap())
		}
	}

	for i := 1; i <= 500; i++ {
		last = bot.AddMessage(allowedChat, allowedUser, 1000+i, fmt.Sprintf("second burst %d", i))
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel2()
	if err := bot.WaitConfirmed(ctx2, last); err != nil {
		t.Fatalf("poller did not confirm the 500 burst: %v", err)
	}
	waitUntil(t, "504 intents", 30*time.Second, func() bool { return len(listAll(t, svc)) >= 504 })
	if n := len(listAll(t, svc)); n != 504 {
		t.Errorf("got %d intents after the 500 burst, want 504", n)
	}
}

// I4: the HTTP ingest door: token, status codes, dedupe, limits, invalid UTF-8 repaired.
func TestI4IngestDoor(t *testing.T) {
	cfg := testenv.Config(t)
	cfg.Ingest.Token = "ingest-secret"
	cfg.Ingest.MaxTextBytes = 8192
	cfg.Reminders.FirstAfter = time.Hour
	svc, _ := startService(t, cfg)
	url := "http://" + cfg.Ingest.Listen + "/v1/intents"

	post := func(token, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}

	body := `{"chat_id":"5","message_id":17,"text":"hello from the plugin","user":"kento","ts":1763700000}`
	if code, out := post("ingest-secret", body); code != http.StatusCreated || out["id"] != "intent/5/17" {
		t.Fatalf("first POST = %d %v, want 201 intent/5/17", code, out)
	}
	if code, out := post("ingest-secret", body); code != http.StatusOK || out["created"] != false {
		t.Fatalf("second POST = %d %v, want 200 already recorded", code, out)
	}
	if code, _ := post("", body); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := post("wrong", body); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", code)
	}
	for _, bad := range []string{`{`, `[]`, `{"chat_id":"5","text":"x"}`, `{"chat_id":"a/b","message_id":1,"text":"x"}`,
		`{"chat_id":"5","message_id":1}`, `{"chat_id":"5","message_id":1,"text":""}`, `{"chat_id":true,"message_id":1,"text":"x"}`} {
		code, out := post("ingest-secret", bad)
		if code != http.StatusBadRequest || out["error"] == "" {
			t.Errorf("POST %s = %d %v, want 400 with a reason", bad, code, out)
		}
	}
	big := fmt.Sprintf(`{"chat_id":"5","message_id":18,"text":%q}`, strings.Repeat("あ", 4000))
	if code, _ := post("ingest-secret", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("12 KB text with an 8 KB cap: %d, want 413", code)
	}
	huge := fmt.Sprintf(`{"chat_id":"5","message_id":19,"text":%q}`, strings.Repeat("a", 64<<10))
	if code, _ := post("ingest-secret", huge); code != http.StatusRequestEntityTooLarge {
		t.Errorf("64 KB body: %d, want 413", code)
	}
	if code, _ := post("ingest-secret", "{\"chat_id\":\"5\",\"message_id\":20,\"text\":\"bad \xff byte\"}"); code != http.StatusCreated {
		t.Fatalf("invalid UTF-8: %d, want 201 (repaired)", code)
	}
	v, err := intent.Show(context.Background(), svc.Client(), "5/20")
	if err != nil {
		t.Fatal(err)
	}
	if v.Text != "bad \uFFFD byte" {
		t.Errorf("repaired text = %q", v.Text)
	}
	// Visibility trails the starts by a moment.
	waitUntil(t, "2 intents listed", 20*time.Second, func() bool { return len(listAll(t, svc)) >= 2 })
	if n := len(listAll(t, svc)); n != 2 {
		t.Errorf("%d intents, want 2 (17 and 20)", n)
	}
}

// tmuxReader starts a private tmux server whose session "secretary" appends what its pane
// receives to a file. Call it after testenv.Config, which points tmux elsewhere.
func tmuxReader(t *testing.T) (out string) {
	t.Helper()
	peers.Tmux(t)
	dir, err := os.MkdirTemp("", "iq")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMUX_TMPDIR", dir)
	t.Setenv("TMUX", "")
	out = filepath.Join(dir, "pane.out")
	cmd := exec.Command("tmux", "new-session", "-d", "-s", "secretary", "-x", "200", "-y", "50", "trap '' INT; stty -echo; exec cat > "+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, b)
	}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	return out
}

// I6, I7 end to end: a pending intent is reminded in the real tmux pane and through ntfy (masked
// snippet only); while ntfy fails, last_reminded_at stays put and the reminder is retried soon;
// close stops it.
func TestI6RemindersEndToEnd(t *testing.T) {
	ntfy := fakentfy.New()
	defer ntfy.Close()
	cfg := testenv.Config(t)
	pane := tmuxReader(t)
	cfg.Ingest.Token = "tok"
	cfg.Ntfy.URL = ntfy.URL()
	cfg.Ntfy.Topic = "phone"
	cfg.Reminders.FirstAfter = time.Second
	cfg.Reminders.RepeatEvery = 4 * time.Second
	cfg.Reminders.RetryAfter = time.Second
	svc, _ := startService(t, cfg)
	ctx := context.Background()

	text := "deploy; C-c $(rm -rf ~) 'q' \"dq\" 🙂\nsecond line that is long enough to be cut off here"
	req, _ := http.NewRequest(http.MethodPost, "http://"+cfg.Ingest.Listen+"/v1/intents",
		strings.NewReader(fmt.Sprintf(`{"chat_id":"7","message_id":"70","text":%q}`, text)))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("record: %v %v", err, resp)
	}
	resp.Body.Close()

	snippet := redact.Snippet(text, 40)
	if redact.Chars(snippet) != 41 || !strings.HasSuffix(snippet, "…") || strings.Contains(snippet, "\n") {
		t.Fatalf("snippet %q is not 40 characters plus the ellipsis, on one line", snippet)
	}
	wantLine := "【未対応メッセージ】msg_id=70 chat=7: " + snippet + "\n"
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(pane)
		if strings.Contains(string(b), wantLine) {
			break
		}
		if time.Now().After(deadline) {
			v, err := intent.Show(ctx, svc.Client(), "intent/7/70")
			t.Fatalf("no reminder in the pane; it has %q; intent: %+v %v", b, v.IntentState, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitUntil(t, "the ntfy push", 10*time.Second, func() bool { return len(ntfy.Messages()) > 0 })
	push := ntfy.Messages()[0]
	if push.Topic != "phone" || push.Message != "msg_id=70 chat=7: "+snippet || push.Title != "intentq: 1 message waiting for "+config.DefaultSessionName {
		t.Errorf("push = %+v", push)
	}

	show := func() workflows.IntentView {
		v, err := intent.Show(ctx, svc.Client(), "intent/7/70")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	waitUntil(t, "the first reminder recorded", 10*time.Second, func() bool { return show().Reminders >= 1 })

	// ntfy fails: the push is tried again every RetryAfter on its own; the pane reminder keeps
	// its 4-second schedule (never retyped because ntfy failed); pushes do not count.
	ntfy.FailAlways(http.StatusInternalServerError)
	before := show()
	paneBefore := countReminders(pane)
	requests := ntfy.Requests()
	waitUntil(t, "push retries while ntfy fails", 30*time.Second, func() bool { return ntfy.Requests() >= requests+6 })
	during := show()
	if during.Pushes != before.Pushes || !during.LastPushedAt.Equal(*before.LastPushedAt) {
		t.Errorf("last_pushed_at moved while ntfy failed: %v -> %v", before.LastPushedAt, during.LastPushedAt)
	}
	if during.PushFailures == 0 || !strings.Contains(during.LastError, "ntfy") {
		t.Errorf("push failure not recorded: %+v", during.IntentState)
	}
	// Six push attempts a second apart took at least 5 s: at most 2 pane reminders (4 s apart)
	// in that time, where a retyped reminder would have made 6.
	if typed := countReminders(pane) - paneBefore; typed > 3 || during.Reminders > before.Reminders+3 {
		t.Errorf("the pane reminder was retyped with the failing push: %d typed, reminders %d -> %d", typed, before.Reminders, during.Reminders)
	}
	ntfy.Recover()
	waitUntil(t, "a push after ntfy recovered", 20*time.Second, func() bool { return show().Pushes > before.Pushes })

	// ntfy down altogether: the same.
	ntfy.Down()
	waitUntil(t, "a failed push with ntfy down", 20*time.Second, func() bool {
		v := show()
		return v.PushFailures > 0 && strings.Contains(v.LastError, "ntfy")
	})
	down := show()
	waitUntil(t, "another failed push", 20*time.Second, func() bool { return show().PushFailures > down.PushFailures })
	if after := show(); after.Pushes != down.Pushes || !after.LastPushedAt.Equal(*down.LastPushedAt) {
		t.Errorf("last_pushed_at moved while ntfy was down: %v -> %v", down.LastPushedAt, after.LastPushedAt)
	}

	if _, err := intent.Update(ctx, svc.Client(), "7/70", workflows.UpdateClose, workflows.CloseRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := intent.Update(ctx, svc.Client(), "7/70", workflows.UpdateClose, workflows.CloseRequest{}); err == nil ||
		!strings.Contains(err.Error(), "already closed") {
		t.Errorf("second close: %v, want 'already closed'", err)
	}
	if _, err := intent.Update(ctx, svc.Client(), "7/71", workflows.UpdateClose, workflows.CloseRequest{}); err == nil {
		t.Error("closing an unknown intent succeeded")
	}
	// Visibility is eventually consistent: the closed intent leaves the pending list shortly.
	waitUntil(t, "no pending intent after the close", 20*time.Second, func() bool {
		pending, err := intent.List(ctx, svc.Client(), intent.Filter{Status: workflows.StatusPending})
		return err == nil && len(pending) == 0
	})
	for _, m := range ntfy.Messages() {
		if strings.Contains(m.Message, "second line") {
			t.Errorf("text beyond the snippet left the machine: %q", m.Message)
		}
	}
	if os.Getenv("WRITE_REPLAY_HISTORY") != "" {
		// Reminders, digest pushes (failed, retried, sent) and a close: see package workflows.
		writeHistory(t, svc, workflows.IntentID("7", "70"), "../../workflows/testdata/intent_reminded.json")
		writeHistory(t, svc, workflows.SessionWorkflowID(config.DefaultSessionName), "../../workflows/testdata/session_reminders.json")
	}
}

// telegramToPane runs the service with the Telegram door (allowed user allowedUser) into the
// default session, whose pane is a line reader (its file returned); reminders are an hour away.
func telegramToPane(t *testing.T) (*fakebot.Server, *config.Config, string, *service.Service) {
	t.Helper()
	bot := fakebot.New(botToken)
	t.Cleanup(bot.Close)
	cfg := testenv.Config(t)
	pane := tmuxReader(t)
	cfg.Telegram.Token = botToken
	cfg.Telegram.APIEndpoint = bot.Endpoint()
	cfg.Telegram.AllowedUserIDs = []int64{allowedUser}
	cfg.Reminders.FirstAfter = time.Hour
	svc, _ := startService(t, cfg)
	return bot, cfg, pane, svc
}

// countReminders counts the reminders a reader pane has received.
func countReminders(pane string) int {
	b, _ := os.ReadFile(pane)
	return strings.Count(string(b), "【未対応メッセージ】")
}

// I2: messages through the Telegram door are typed into the session's pane in full (further
// lines indented), in order, and each closes when the agent answers it (here: by chat, oldest
// first, as the hook does).
func TestI2TelegramDeliveredAndClosed(t *testing.T) {
	bot, cfg, pane, svc := telegramToPane(t)
	ctx := context.Background()

	texts := []string{"first; C-c", "second $(echo no)\nwith a second line", "third 🙂"}
	for i, text := range texts {
		bot.AddMessage(allowedChat, allowedUser, 10+i, text)
	}
	var want strings.Builder
	for i, text := range texts {
		fmt.Fprintf(&want, "【新着メッセージ】msg_id=%d chat=%d from=%d @user%d (answer with mcp__intentq__reply chat_id=%d reply_to=%d): %s\n",
			10+i, allowedChat, allowedUser, allowedUser, allowedChat, 10+i, workflows.TypedForm(text))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(pane)
		if string(b) == want.String() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pane has %q, want %q", b, want.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	chat := fmt.Sprint(allowedChat)
	for i := range texts {
		id := workflows.IntentID(chat, fmt.Sprint(10+i))
		waitUntil(t, id+" to learn it was delivered", 10*time.Second, func() bool {
			v, err := intent.Show(ctx, svc.Client(), id)
			return err == nil && v.Delivered != nil
		})
	}
	// The agent's hooks (issue 10): a turn starts, a fourth message waits for it, the
	// post-tool-use hook takes it and commits it: delivered once, never typed.
	// The hooks' own way: the worker's desk (issue 26), Temporal when it does not answer.
	backend := hooks.ThroughDesk(cfg.DataDir, svc.Token(), hooktemporal.Temporal{Client: svc.Client(), Config: cfg})
	if err := backend.Report(ctx, config.DefaultSessionName, workflows.AgentEvent{Event: workflows.EventUserPromptSubmit, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	bot.AddMessage(allowedChat, allowedUser, 13, "fourth, while the agent works")
	texts = append(texts, "fourth")
	var key string
	waitUntil(t, "the fourth message handed to the hook", 20*time.Second, func() bool {
		res, err := backend.Take(ctx, config.DefaultSessionName, workflows.TakeRequest{Key: fmt.Sprintf("post-tool-use/toolu_%d", time.Now().UnixNano()),
			Event: workflows.EventPostToolUse, Deadline: time.Now().Add(5 * time.Second)})
		key = res.Key // the offer's: its commit names it
		return err == nil && len(res.Messages) == 1 && res.Messages[0].ReplyTo == workflows.IntentID(chat, "13")
	})
	if err := backend.Taken(ctx, config.DefaultSessionName, key); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the fourth message to count delivered", 10*time.Second, func() bool {
		v, err := intent.Show(ctx, svc.Client(), workflows.IntentID(chat, "13"))
		return err == nil && v.Delivered != nil
	})
	if err := backend.Report(ctx, config.DefaultSessionName, workflows.AgentEvent{Event: workflows.EventStop, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(pane); string(b) != want.String() {
		t.Errorf("the pane got %q, want only the three typed messages", b)
	}
	for i := range texts {
		id, _, err := intent.CloseOldestPending(ctx, svc.Client(), chat, workflows.CloseRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if want := workflows.IntentID(chat, fmt.Sprint(10+i)); id != want {
			t.Fatalf("closed %s, want the oldest pending %s", id, want)
		}
		v, err := intent.Show(ctx, svc.Client(), id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != workflows.StatusClosed || v.Delivered == nil {
			t.Errorf("%s: status %s delivered %v", id, v.Status, v.Delivered)
		}
	}
	waitUntil(t, "visibility to show no pending intent", 10*time.Second, func() bool {
		_, err := intent.OldestPending(ctx, svc.Client(), chat)
		return err != nil
	})
	if os.Getenv("WRITE_REPLAY_HISTORY") != "" {
		writeHistory(t, svc, workflows.IntentID(chat, "11"), "../../workflows/testdata/intent_delivered_closed.json")
		writeHistory(t, svc, workflows.SessionWorkflowID(config.DefaultSessionName), "../../workflows/testdata/session.json")
	}
}

// writeHistory saves a workflow's history for the replay tests in package workflows
// (WRITE_REPLAY_HISTORY=1 go test ./internal/service/ regenerates them after a workflow change).
func writeHistory(t *testing.T, svc *service.Service, id, path string) {
	t.Helper()
	hist := historypb.History{Events: historyEvents(t, svc.Client(), id)}
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// historyEvents is the current run's history of workflow id; the test fails when it cannot be
// read.
func historyEvents(t *testing.T, c client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	return runHistoryEvents(t, c, id, "")
}

// runHistoryEvents is the history of one run of a workflow (runID empty: the current run).
func runHistoryEvents(t *testing.T, c client.Client, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	iter := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	return events
}

// N2 with real tmux: a pane whose agent is busy for a while gets no keystrokes until it idles,
// then the waiting reminders arrive whole, one after the other; the human's pane gets nothing.
func TestN2BusyPaneRealTmux(t *testing.T) {
	cfg := testenv.Config(t)
	dir := t.TempDir()
	busyOut, idleOut, bossOut := filepath.Join(dir, "busy.out"), filepath.Join(dir, "idle.out"), filepath.Join(dir, "boss.out")
	tmuxReader(t) // private server; its "secretary" session is replaced below
	agent := fmt.Sprintf(`stty -echo; printf '✻ Working… (esc to interrupt)\n'; timeout 5 cat > %s; printf '\033[2J\033[H> '; exec cat > %s`, busyOut, idleOut)
	// The new sessions first: killing the server's last session would end the server, and a
	// new-session racing its exit fails ("server exited unexpectedly").
	for _, args := range [][]string{
		{"new-session", "-d", "-s", "agent", "-x", "120", "-y", "30", agent},
		{"new-session", "-d", "-s", "boss", "-x", "120", "-y", "30", "stty -echo; exec cat > " + bossOut},
		{"kill-session", "-t", "=secretary"},
	} {
		if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
	}
	cfg.Ingest.Token = "tok"
	cfg.Sessions = map[string]config.Session{
		"agent": {TmuxTarget: "agent:0", CLI: "claude", Mode: config.ModeTmux, Default: true},
		"boss":  {TmuxTarget: "boss:0", CLI: "claude", Mode: config.ModeTmux, Chats: []int64{8}, Human: true},
	}
	cfg.Reminders.FirstAfter = time.Second
	cfg.Reminders.RepeatEvery = time.Hour
	cfg.Delivery.BusyWait = time.Second
	svc, _ := startService(t, cfg)

	for _, body := range []string{`{"chat_id":"7","message_id":1,"text":"one"}`, `{"chat_id":"7","message_id":2,"text":"two"}`, `{"chat_id":"8","message_id":3,"text":"boss"}`} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+cfg.Ingest.Listen+"/v1/intents", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("record %s: %v %v", body, err, resp)
		}
		resp.Body.Close()
	}
	waitUntil(t, "both reminders in the idle agent", 30*time.Second, func() bool {
		b, _ := os.ReadFile(idleOut)
		return strings.Count(string(b), "【未対応メッセージ】") == 2
	})
	got, _ := os.ReadFile(idleOut)
	for _, line := range []string{"【未対応メッセージ】msg_id=1 chat=7: one\n", "【未対応メッセージ】msg_id=2 chat=7: two\n"} {
		if strings.Count(string(got), line) != 1 {
			t.Errorf("idle agent got %q, want %q once", got, line)
		}
	}
	if b, _ := os.ReadFile(busyOut); len(b) != 0 {
		t.Errorf("keystrokes reached the busy agent: %q", b)
	}
	waitUntil(t, "the boss intent's refusal", 10*time.Second, func() bool {
		v, err := intent.Show(context.Background(), svc.Client(), "8/3")
		return err == nil && strings.Contains(v.LastError, "human")
	})
	if b, _ := os.ReadFile(bossOut); len(b) != 0 {
		t.Errorf("the human's pane got %q", b)
	}
}

// S3: 200 concurrent senders (50 in flight at once) lose nothing; N5: reading marks read and the inbox keeps the newest
// 30 read; an agent with a session is nudged in its pane with the notification wrapper.
func TestS3InboxConcurrentSendsAndNudge(t *testing.T) {
	cfg := testenv.Config(t)
	pane := tmuxReader(t)
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	c := svc.Client()

	// 200 senders, 50 of them in flight at once: the server's limit of in-flight updates per
	// workflow is 100, and on a machine busy with the other packages' tests 200 at once waited
	// past the SDK's minute for an update's outcome.
	const n = 200
	errs := make(chan error, n)
	inFlight := make(chan struct{}, 50)
	for i := 0; i < n; i++ {
		go func() {
			inFlight <- struct{}{}
			defer func() { <-inFlight }()
			_, err := inbox.Send(ctx, c, cfg.Temporal.TaskQueue, inbox.InputFor(cfg, "loner"),
				workflows.InboxSend{From: fmt.Sprintf("w%d", i), Type: "task", Content: fmt.Sprintf("job %d", i)})
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := inbox.Messages(ctx, c, "loner")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		if m.Read || m.Type != "task" || m.Timestamp.IsZero() || m.ID == "" || seen[m.Content] {
			t.Errorf("message %+v (duplicate %v)", m, seen[m.Content])
		}
		seen[m.Content] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages kept, want all %d unread", len(seen), n)
	}
	read, err := inbox.Read(ctx, c, "loner")
	if err != nil || len(read) != n {
		t.Fatalf("read %d (%v), want %d", len(read), err, n)
	}
	msgs, _ = inbox.Messages(ctx, c, "loner")
	if len(msgs) != workflows.KeepRead || !msgs[0].Read {
		t.Errorf("after reading: %d messages kept, want the newest %d read", len(msgs), workflows.KeepRead)
	}

	if _, err := inbox.Send(ctx, c, cfg.Temporal.TaskQueue, inbox.InputFor(cfg, config.DefaultSessionName),
		workflows.InboxSend{From: "boss", Type: "task", Content: "please review"}); err != nil {
		t.Fatal(err)
	}
	want := workflows.NotificationText(config.DefaultSessionName, 1, "boss") + "\n"
	waitUntil(t, "the inbox nudge in the pane", 20*time.Second, func() bool {
		b, _ := os.ReadFile(pane)
		return strings.Contains(string(b), want)
	})
}

// S1, issue 38: the agent's Stop hook names its unread inbox messages as its session told the
// desk (the inbox tells the session after every change; the hook reads no server), and names
// none once they are read.
func TestS1StopHookNamesUnreadInboxAsTheDeskKnows(t *testing.T) {
	cfg := testenv.Config(t)
	_ = tmuxReader(t)
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	agent := config.DefaultSessionName
	// What the desk keeps, read from its journal (read only: the worker's desk owns it).
	known := func(want int) func() bool {
		return func() bool {
			// One journal per line, the last whole one counts.
			data, err := os.ReadFile(filepath.Join(desksocket.Dir(cfg.DataDir), hex.EncodeToString([]byte(agent))+".jsonl"))
			lines := strings.Split(string(data), "\n")
			var j struct {
				Inbox *workflows.DeskInboxRequest `json:"inbox"`
			}
			return err == nil && len(lines) > 1 && json.Unmarshal([]byte(lines[len(lines)-2]), &j) == nil && j.Inbox != nil && j.Inbox.Unread.Count == want
		}
	}
	waitUntil(t, "the desk told the agent has no inbox", 30*time.Second, known(0))
	core, logs := observer.New(zapcore.WarnLevel)
	s := hooks.Settings{Session: agent, Agent: agent, RemindEvery: time.Hour, Logger: zap.New(core)}
	stop := func() string {
		// Temporal as the hook would dial it, but unable to read an inbox: the desk answers.
		dial := func(context.Context) (hooks.Backend, func(), error) {
			return hooks.ThroughDesk(cfg.DataDir, svc.Token(), noInbox{hooktemporal.Temporal{Client: svc.Client(), Config: cfg}}), func() {}, nil
		}
		var out strings.Builder
		if err := hooks.Run(ctx, hooks.EventStop, strings.NewReader(`{"session_id":"c1","stop_hook_active":false,"last_assistant_message":"ok"}`), &out, s, dial, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	require.Empty(t, stop(), "nothing unread, nothing else waits")
	for i := 1; i <= 7; i++ {
		if _, err := inbox.Send(ctx, svc.Client(), cfg.Temporal.TaskQueue, inbox.InputFor(cfg, agent),
			workflows.InboxSend{From: "boss", Type: "task", Content: fmt.Sprintf("please review %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the desk told of 7 unread", 30*time.Second, known(7))
	out := stop()
	require.Contains(t, out, `"decision":"block"`)
	require.Contains(t, out, "7 unread inbox message(s) for "+agent)
	require.Contains(t, out, "please review 1")
	require.Contains(t, out, "please review 5")
	require.NotContains(t, out, "please review 6", "five named")
	require.Contains(t, out, "and more: `starter inbox list "+agent+"`")
	if _, err := inbox.Read(ctx, svc.Client(), agent); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the desk told all is read", 30*time.Second, known(0))
	require.Empty(t, stop())
	require.Empty(t, logs.All(), "the hook said nothing went wrong")

	// An inbox run from before inboxes told sessions continues as new to tell, once asked.
	run, err := svc.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.InboxID("old"), TaskQueue: cfg.Temporal.TaskQueue},
		workflows.InboxWorkflowName, workflows.InboxInput{Agent: "old", RepeatEvery: time.Hour})
	require.NoError(t, err)
	_, err = inbox.Send(ctx, svc.Client(), cfg.Temporal.TaskQueue, inbox.InputFor(cfg, "old"), workflows.InboxSend{From: "boss", Type: "task", Content: "from before"})
	require.NoError(t, err)
	require.NoError(t, svc.Client().SignalWorkflow(ctx, workflows.InboxID("old"), "", workflows.SignalInboxAnnounce, nil))
	waitUntil(t, "the old inbox continued as new", 30*time.Second, func() bool {
		d, err := svc.Client().DescribeWorkflowExecution(ctx, workflows.InboxID("old"), run.GetRunID())
		return err == nil && d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
	})
	msgs, err := inbox.Messages(ctx, svc.Client(), "old")
	require.NoError(t, err)
	require.Len(t, msgs, 1, "its message carried")
	if os.Getenv("WRITE_REPLAY_HISTORY") != "" {
		// An inbox that tells its session, the session that follows it (asked, told, the desk
		// told), and an inbox from before that continued as new when asked: see package workflows.
		writeHistory(t, svc, workflows.InboxID(agent), "../../workflows/testdata/inbox.json")
		writeHistory(t, svc, workflows.SessionWorkflowID(agent), "../../workflows/testdata/session_inbox.json")
		hist := historypb.History{Events: runHistoryEvents(t, svc.Client(), workflows.InboxID("old"), run.GetRunID())}
		data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&hist)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile("../../workflows/testdata/inbox_upgrade.json", data, 0o644))
	}
}

// noInbox is a hook's Temporal that cannot read an inbox.
type noInbox struct{ hooktemporal.Temporal }

func (noInbox) Unread(context.Context, string) (workflows.InboxUnread, error) {
	return workflows.InboxUnread{}, errors.New("the test's hook reads no inbox from the server")
}

// I2, I3 end to end as the patched plugin and Claude Code would drive it: 4 messages through the
// ingest endpoint, reminders in the real pane, session-start lists all 4 with their text, and
// 4 post-tool-use reply events close all 4. With Temporal down, a hook still answers (allows).
func TestHooksEndToEnd(t *testing.T) {
	cfg := testenv.Config(t)
	pane := tmuxReader(t)
	cfg.Ingest.Token = "tok"
	cfg.Reminders.FirstAfter = time.Second
	cfg.Reminders.RepeatEvery = time.Hour
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		req, _ := http.NewRequest(http.MethodPost, "http://"+cfg.Ingest.Listen+"/v1/intents",
			strings.NewReader(fmt.Sprintf(`{"chat_id":"42","message_id":%d,"text":"question %d","user":"kento","ts":%d}`, 100+i, i, time.Now().Unix())))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("ingest %d: %v %v", i, err, resp)
		}
		resp.Body.Close()
	}
	waitUntil(t, "4 reminders in the pane", 30*time.Second, func() bool {
		b, _ := os.ReadFile(pane)
		return strings.Count(string(b), "【未対応メッセージ】msg_id=10") == 4
	})

	s := hooks.Settings{Session: config.DefaultSessionName, ReplyTools: cfg.Hooks.ReplyTools}
	dial := func(context.Context) (hooks.Backend, func(), error) {
		// As a hook does: through the worker's desk (the session-start block reaches the
		// history through it), Temporal for the rest.
		return hooks.ThroughDesk(cfg.DataDir, svc.Token(), hooktemporal.Temporal{Client: svc.Client(), Config: cfg}), func() {}, nil
	}
	hook := func(event, input string) string {
		var out strings.Builder
		if err := hooks.Run(ctx, event, strings.NewReader(input), &out, s, dial, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	start := hook(hooks.EventSessionStart, `{"session_id":"abc","transcript_path":"/tmp/t.jsonl","cwd":"/w","hook_event_name":"SessionStart","source":"resume"}`)
	for i := 1; i <= 4; i++ {
		if !strings.Contains(start, fmt.Sprintf("question %d", i)) {
			t.Fatalf("session-start output lacks question %d: %s", i, start)
		}
	}
	for i := 1; i <= 4; i++ {
		input := fmt.Sprintf(`{"session_id":"abc","hook_event_name":"PostToolUse","tool_name":"mcp__plugin_telegram_telegram__reply","tool_input":{"chat_id":"42","text":"answer","reply_to":"%d"},"tool_response":{}}`, 100+i)
		hook(hooks.EventPostToolUse, input)
	}
	for i := 1; i <= 4; i++ {
		v, err := intent.Show(ctx, svc.Client(), fmt.Sprintf("42/%d", 100+i))
		if err != nil || v.Status != workflows.StatusClosed {
			t.Errorf("intent 42/%d: %s %v", 100+i, v.Status, err)
		}
	}
	waitUntil(t, "the session-start block in the history", 10*time.Second, func() bool {
		b, _ := os.ReadFile(cfg.HistoryPath(config.DefaultSessionName))
		return strings.Contains(string(b), `"kind":"context"`) && strings.Contains(string(b), "question 4")
	})

	down := *cfg
	down.Temporal.Address = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	down.Temporal.Encryption.Mode = config.EncryptionOff // the cluster is down, not the keyring missing
	deadDial := func(ctx context.Context) (hooks.Backend, func(), error) {
		c, err := tclient.Dial(ctx, &down, zap.NewNop())
		if err != nil {
			return nil, nil, err
		}
		return hooktemporal.Temporal{Client: c, Config: &down}, c.Close, nil
	}
	var out strings.Builder
	if err := hooks.Run(ctx, hooks.EventStop, strings.NewReader(`{"session_id":"abc"}`), &out, hooks.Settings{Agent: "secretary"}, deadDial, 2*time.Second); err != nil || out.Len() != 0 {
		t.Errorf("stop hook with Temporal down: %q %v, want allow", out.String(), err)
	}
}

// I8: with claude.patch_plugin, the worker patches the real plugin at start; after a plugin
// upgrade (server.ts replaced) the watchdog finds the patch gone, re-applies it and says so; the
// doctor reports the state.
func TestI8PluginPatchedAtStartAndRepatched(t *testing.T) {
	cfg := testenv.Config(t)
	bun := peers.Bun(t)
	home := filepath.Join(cfg.Claude.Home, "plugins", "marketplaces", "claude-plugins-official")
	fixture := "../platform/plugin/testdata/claude-plugins-official"
	for _, f := range []string{".claude-plugin/marketplace.json", "external_plugins/telegram/server.ts", "external_plugins/telegram/package.json"} {
		data, err := os.ReadFile(filepath.Join(fixture, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Claude.Settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Claude.Settings, []byte(`{"enabledPlugins":{"telegram@claude-plugins-official":true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The copy Claude Code installed and runs: the newest version in the plugin cache.
	cached := filepath.Join(cfg.Claude.Home, "plugins", "cache", "claude-plugins-official", "telegram", "0.0.6", "server.ts")
	src, _ := os.ReadFile(filepath.Join(fixture, "external_plugins/telegram/server.ts"))
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Claude.PatchPlugin, cfg.Claude.Bun, cfg.Ingest.Token = true, bun, "i8-ingest-secret-4f2a"
	ntfy := fakentfy.New()
	defer ntfy.Close()
	cfg.Ntfy.URL, cfg.Ntfy.Topic = ntfy.URL(), "ops"
	svc, _ := startService(t, cfg)

	serverTS := filepath.Join(home, "external_plugins/telegram/server.ts")
	patched, _ := os.ReadFile(serverTS)
	if !strings.Contains(string(patched), plugin.BeginMarker) || !strings.Contains(string(patched), plugin.CanaryBegin) {
		t.Fatal("the worker did not patch the plugin at start")
	}
	if c, _ := os.ReadFile(cached); !strings.Contains(string(c), plugin.BeginMarker) || !strings.Contains(string(c), plugin.CanaryBegin) {
		t.Error("the cache copy, which Claude Code runs, was not patched")
	}
	// No token in server.ts: the block reads it from a private file.
	if strings.Contains(string(patched), cfg.Ingest.Token.Reveal()) {
		t.Error("the ingest token is in server.ts")
	}
	if info, err := os.Stat(cfg.PluginTokenFile()); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v, want 0600", info, err)
	}
	if res := doctor.PluginCanary(cfg); res.Level() != doctor.StatusWarn {
		t.Errorf("canary before the plugin ever ran: %+v", res)
	}
	if res := doctor.PluginPatch(cfg); !res.OK {
		t.Errorf("doctor: %+v", res)
	}

	original, _ := os.ReadFile(filepath.Join(fixture, "external_plugins/telegram/server.ts"))
	if err := os.WriteFile(serverTS, original, 0o644); err != nil { // a plugin upgrade
		t.Fatal(err)
	}
	if res := doctor.PluginPatch(cfg); res.OK {
		t.Errorf("doctor after the upgrade: %+v", res)
	}
	svc.Watchdog().RunOnce(context.Background())
	again, _ := os.ReadFile(serverTS)
	if string(again) != string(patched) {
		t.Error("the watchdog did not re-apply the patch")
	}
	msgs := ntfy.Messages()
	if len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].Message, "re-applied") {
		t.Errorf("alerts = %+v, want one saying the patch was re-applied", msgs)
	}
}

// P1-P3, P7 against the real server and a fake claude: prompts run FIFO, the same key once,
// each audited with its cost, and the CLI's latest session is resumed.
func TestP1HeadlessSessionEndToEnd(t *testing.T) {
	cfg := testenv.Config(t)
	fake, _ := filepath.Abs("../../activities/testdata/fakeclaude.sh")
	cfg.CLIs["fake"] = config.CLI{Command: fake, HeadlessArgs: []string{"-p", "--output-format", "json"}}
	cfg.Sessions["batch"] = config.Session{CLI: "fake", Mode: config.ModeHeadless}
	cfg.Ingest.Token = "tok"
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	token := "ghp_" + strings.Repeat("A1b2", 9)
	for _, p := range []workflows.PromptRequest{{Key: "a", Text: "ok first"}, {Key: "b", Text: "ok second " + token}, {Key: "a", Text: "ok first"}, {Key: "c", Text: "deny this"}} {
		if _, err := headless.Submit(ctx, svc.Client(), cfg, "batch", p, true); err != nil {
			t.Fatal(err)
		}
	}
	// The HTTP door: 401 without the token, 404 for a session that is not headless, 202 queued.
	for _, tc := range []struct {
		path, token string
		want        int
	}{{"/v1/sessions/batch/prompts", "", 401}, {"/v1/sessions/secretary/prompts", "tok", 404}, {"/v1/sessions/batch/prompts", "tok", 202}} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+cfg.Ingest.Listen+tc.path, strings.NewReader(`{"text":"ok via http","key":"h"}`))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != tc.want {
			t.Fatalf("POST %s: %v %v, want %d", tc.path, err, resp, tc.want)
		}
		resp.Body.Close()
	}
	var st workflows.HeadlessState
	waitUntil(t, "all prompts to finish", 60*time.Second, func() bool {
		var err error
		st, err = headless.Audit(ctx, svc.Client(), "batch")
		return err == nil && st.Succeeded+st.Failed == 4
	})
	if len(st.Prompts) != 4 || st.Prompts[0].Result != "done: ok first" || !strings.HasPrefix(st.Prompts[1].Result, "done: ok second") {
		t.Fatalf("prompts = %+v", st.Prompts)
	}
	if strings.Contains(st.Prompts[1].Text, token) || strings.Contains(st.Prompts[1].Result, token) || !strings.Contains(st.Prompts[1].Text, "masked") {
		t.Errorf("P8: the token was stored: text %q result %q", st.Prompts[1].Text, st.Prompts[1].Result)
	}
	if p := st.Prompts[2]; p.Status != workflows.PromptFailed || len(p.Invocations) != 1 || !strings.Contains(p.Error, "Write") {
		t.Errorf("denied prompt = %+v", p)
	}
	if st.ResumeID != "sess-42" || st.CostUSD < 0.0368 || st.CostUSD > 0.0370 {
		t.Errorf("resume %q cost %v", st.ResumeID, st.CostUSD)
	}

	// P10: the worker's Prometheus endpoint carries the SDK's metrics and intentq's counters.
	var lastBody string
	defer func() {
		if t.Failed() {
			for _, l := range strings.Split(lastBody, "\n") {
				if strings.Contains(l, "intentq") {
					t.Log(l)
				}
			}
		}
	}()
	waitUntil(t, "run metrics", 10*time.Second, func() bool {
		resp, err := http.Get(svc.MetricsURL())
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		lastBody = string(body)
		succeeded := regexp.MustCompile(`(?m)^intentq_runs\{[^}]*outcome="succeeded"[^}]*session="batch"[^}]*\} 3$`)
		return succeeded.MatchString(lastBody) && strings.Contains(lastBody, "intentq_run_cost_micro_usd{") &&
			strings.Contains(lastBody, "temporal_activity_execution_latency")
	})
}

// P11: a Telegram message for a chat mapped to a headless session runs as a prompt; the CLI's
// answer goes back to the chat as a reply, split at 4096 characters, and the intent closes.
func TestP11TelegramHeadlessAnswer(t *testing.T) {
	bot := fakebot.New(botToken)
	defer bot.Close()
	cfg := testenv.Config(t)
	fake, _ := filepath.Abs("../../activities/testdata/fakeclaude.sh")
	cfg.CLIs["fake"] = config.CLI{Command: fake, HeadlessArgs: []string{"-p", "--output-format", "json"}}
	cfg.Sessions["batch"] = config.Session{CLI: "fake", Mode: config.ModeHeadless, Chats: []int64{allowedChat}}
	cfg.Telegram.Token, cfg.Telegram.APIEndpoint, cfg.Telegram.AllowedChatIDs = botToken, bot.Endpoint(), []int64{allowedChat}
	svc, _ := startService(t, cfg)

	bot.AddMessage(allowedChat, allowedUser, 77, "ok what is the status")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sent, err := bot.WaitSent(ctx, 1)
	if err != nil {
		t.Fatalf("no answer sent: %v", err)
	}
	if sent[0].Text != "done: ok what is the status" || fmt.Sprint(sent[0].ChatID) != fmt.Sprint(allowedChat) || fmt.Sprint(sent[0].ReplyTo) != "77" {
		t.Errorf("sent = %+v", sent[0])
	}
	id := workflows.IntentID(fmt.Sprint(allowedChat), "77")
	waitUntil(t, "the intent to close", 10*time.Second, func() bool {
		v, err := intent.Show(context.Background(), svc.Client(), id)
		return err == nil && v.Status == workflows.StatusClosed
	})
	if parts := activities.SplitMessage(strings.Repeat("あいう ", 2000), activities.TelegramMaxChars); len(parts) != 2 || len([]rune(parts[0])) > 4096 {
		t.Errorf("split into %d parts", len(parts))
	}
}

// P5: the tool policy of the prompt's channel reaches the CLI as its flags: telegram is
// read-only by default (Write and git push denied).
func TestP5PolicyFlagsReachCLI(t *testing.T) {
	cfg := testenv.Config(t)
	fake, _ := filepath.Abs("../../activities/testdata/fakeclaude.sh")
	cfg.CLIs["fake"] = config.CLI{Command: fake, HeadlessArgs: []string{"-p", "--output-format", "json"}}
	cfg.Sessions["batch"] = config.Session{CLI: "fake", Mode: config.ModeHeadless}
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	if _, err := headless.Submit(ctx, svc.Client(), cfg, "batch", workflows.PromptRequest{Key: "p", Channel: "telegram", Text: "args"}, false); err != nil {
		t.Fatal(err)
	}
	var st workflows.HeadlessState
	waitUntil(t, "the run", 30*time.Second, func() bool {
		var err error
		st, err = headless.Audit(ctx, svc.Client(), "batch")
		return err == nil && st.Succeeded == 1
	})
	got := st.Prompts[0].Result
	for _, want := range []string{"--allowedTools", "Read", "--disallowedTools", "Write", "Bash(git push:*)"} {
		if !strings.Contains(got, want) {
			t.Errorf("CLI arguments %q lack %q", got, want)
		}
	}
}

// P9: records of a session labelled audit are exported once each, so they outlive retention.
func TestP9ArchiveLabelledSessions(t *testing.T) {
	cfg := testenv.Config(t)
	fake, _ := filepath.Abs("../../activities/testdata/fakeclaude.sh")
	cfg.CLIs["fake"] = config.CLI{Command: fake, HeadlessArgs: []string{"-p", "--output-format", "json"}}
	cfg.Sessions["batch"] = config.Session{CLI: "fake", Mode: config.ModeHeadless, Labels: []string{"audit"}}
	cfg.Sessions["plain"] = config.Session{CLI: "fake", Mode: config.ModeHeadless}
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	for _, s := range []string{"batch", "plain"} {
		if _, err := headless.Submit(ctx, svc.Client(), cfg, s, workflows.PromptRequest{Key: "k", Text: "ok archive me"}, true); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "both runs", 30*time.Second, func() bool {
		a, _ := headless.Audit(ctx, svc.Client(), "batch")
		b, _ := headless.Audit(ctx, svc.Client(), "plain")
		return a.Succeeded == 1 && b.Succeeded == 1
	})
	for i := 0; i < 2; i++ {
		if _, err := archive.Export(ctx, svc.Client(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(cfg.DataDir, "archive", "batch.jsonl"))
	if err != nil || strings.Count(string(data), "\n") != 1 || !strings.Contains(string(data), `"kind":"prompt"`) {
		t.Errorf("archive = %q (%v), want the one prompt once", data, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "archive", "plain.jsonl")); err == nil {
		t.Error("an unlabelled session was archived")
	}
}

// P1, P2: two workers against one server, 10 headless sessions x 5 prompts, limit 2: never more
// than 2 runs at once (as the fake CLI records them), each session's prompts in order, all 50
// succeed.
func TestP2TwoWorkersGlobalLimit(t *testing.T) {
	cfg := testenv.Config(t)
	logPath := filepath.Join(t.TempDir(), "runs.log")
	t.Setenv("FAKE_LOG", logPath)
	cfg.Policies.Global.Env = []string{"FAKE_LOG"} // runs see only the variables the config names
	fake, _ := filepath.Abs("../../activities/testdata/fakeclaude.sh")
	cfg.CLIs["fake"] = config.CLI{Command: fake, HeadlessArgs: []string{"-p", "--output-format", "json"}}
	cfg.Scheduler.MaxConcurrentSessions = 2
	// The runs write one shared log outside their work folders: unconfined (the sandbox is
	// tested in internal/headless and worker's TestSecurityAttacks).
	cfg.Scheduler.Sandbox = headless.SandboxOff
	for i := 0; i < 10; i++ {
		cfg.Sessions[fmt.Sprintf("s%d", i)] = config.Session{CLI: "fake", Mode: config.ModeHeadless}
	}
	first, _ := startService(t, cfg)
	second := *cfg
	second.Temporal.Address = cfg.TemporalAddress()
	second.Temporal.APIKey = config.Secret(first.Token()) // the first worker's access token
	// Both workers of one deployment agree on encryption: the first, on the embedded server, has
	// it off.
	second.Temporal.Encryption.Mode = config.EncryptionOff
	second.Ingest.Listen = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	second.DataDir = t.TempDir() // one worker per data_dir (issue 38)
	startService(t, &second)

	ctx := context.Background()
	for n := 1; n <= 5; n++ {
		for i := 0; i < 10; i++ {
			p := workflows.PromptRequest{Key: fmt.Sprintf("%d", n), Text: fmt.Sprintf("conc s%d %d", i, n)}
			if _, err := headless.Submit(ctx, first.Client(), cfg, fmt.Sprintf("s%d", i), p, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitUntil(t, "all 50 runs", 120*time.Second, func() bool {
		total := int64(0)
		for i := 0; i < 10; i++ {
			st, err := headless.Audit(ctx, first.Client(), fmt.Sprintf("s%d", i))
			if err != nil {
				return false
			}
			total += st.Succeeded
			if st.Failed > 0 {
				t.Fatalf("s%d: a run failed: %+v", i, st.Prompts)
			}
		}
		return total == 50
	})

	runs := runlog.Summarize(runlog.Read(t, logPath))
	maxRunning, order := runs.MostAtOnce, runs.Order
	if maxRunning > 2 {
		t.Errorf("%d runs at once, limit 2", maxRunning)
	}
	for s, ns := range order {
		if strings.Join(ns, ",") != "1,2,3,4,5" {
			t.Errorf("session %s ran its prompts in the order %v", s, ns)
		}
	}
	if len(order) != 10 {
		t.Errorf("%d sessions ran, want 10", len(order))
	}
}

// Hardening, SPEC S4: with the server up but no worker for the intents, session-start still
// presents every pending intent with its full text in time (read from the start event, not a
// query), and post-tool-use still closes: the close is kept as a signal and applied as soon as
// a worker runs the intent.
func TestHooksWithoutWorker(t *testing.T) {
	cfg := testenv.Config(t)
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	orphanCfg := *cfg
	orphanCfg.Temporal.TaskQueue = "no-worker-yet"
	rec := intent.New(svc.Client(), &orphanCfg)
	for i := 1; i <= 6; i++ {
		if _, err := rec.Record(ctx, intent.Message{ChatID: "77", MessageID: fmt.Sprint(i), Text: fmt.Sprintf("full text %d\nsecond line", i), Source: workflows.SourceIngest}); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "6 pending in visibility", 20*time.Second, func() bool {
		list, err := intent.List(ctx, svc.Client(), intent.Filter{Status: workflows.StatusPending, ChatID: "77"})
		return err == nil && len(list) == 6
	})

	s := hooks.Settings{Session: config.DefaultSessionName, ReplyTools: cfg.Hooks.ReplyTools}
	dial := func(context.Context) (hooks.Backend, func(), error) {
		return hooktemporal.Temporal{Client: svc.Client(), Config: cfg}, func() {}, nil
	}
	hook := func(event, input string) string {
		var out strings.Builder
		if err := hooks.Run(ctx, event, strings.NewReader(input), &out, s, dial, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	start := hook(hooks.EventSessionStart, `{"session_id":"nw","hook_event_name":"SessionStart","source":"startup"}`)
	for i := 1; i <= 6; i++ {
		// Further lines of a message are indented (none can pass for another message's header).
		if !strings.Contains(start, fmt.Sprintf(`full text %d\n  second line`, i)) {
			t.Fatalf("session-start output lacks the full text of 77/%d: %s", i, start)
		}
	}
	hook(hooks.EventPostToolUse, `{"session_id":"nw","hook_event_name":"PostToolUse","tool_name":"mcp__plugin_telegram_telegram__reply","tool_input":{"chat_id":"77","text":"done","reply_to":"3"}}`)
	signalled := false
	for _, ev := range historyEvents(t, svc.Client(), workflows.IntentID("77", "3")) {
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == workflows.SignalClose {
			signalled = true
		}
	}
	if !signalled {
		t.Fatal("post-tool-use left no close signal on intent 77/3")
	}

	w := worker.New(svc.Client(), orphanCfg.Temporal.TaskQueue, worker.Options{})
	service.Register(w, service.Deps{Identity: "late-worker", Tmux: &activities.Tmux{}, Ntfy: &activities.Ntfy{}, Telegram: &activities.Telegram{},
		Signals: &activities.Signals{Client: svc.Client(), Namespace: orphanCfg.Temporal.Namespace}})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitUntil(t, "intent 77/3 closed once a worker runs it", 30*time.Second, func() bool {
		st, err := intent.Status(ctx, svc.Client(), workflows.IntentID("77", "3"))
		return err == nil && st == workflows.StatusClosed
	})
}

// Hardening: an ID that cannot be an intent ID is a 400 (a retrying client must not loop on a
// 503), and every ID that is accepted can be listed, whatever ASCII it holds.
func TestIDsAcceptedAreListable(t *testing.T) {
	cfg := testenv.Config(t)
	cfg.Ingest.Token = "tok"
	svc, _ := startService(t, cfg)
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+cfg.Ingest.Listen+"/v1/intents", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, body := range []string{
		`{"chat_id":"チャット","message_id":"1","text":"x"}`,
		`{"chat_id":"5","message_id":"é1","text":"x"}`,
		"{\"chat_id\":\"a\xffb\",\"message_id\":\"1\",\"text\":\"x\"}",
		`{"chat_id":"back\\slash","message_id":"1","text":"x"}`,
		`{"chat_id":"\"quoted\"","message_id":"1","text":"x"}`,
	} {
		if code := post(body); code != http.StatusBadRequest {
			t.Errorf("%q: HTTP %d, want 400", body, code)
		}
	}
	chats := []string{`it's`, `a''b'c`, `<>&|;$%*?`}
	for i, chat := range chats {
		b, _ := json.Marshal(map[string]string{"chat_id": chat, "message_id": fmt.Sprint(i + 1), "text": "x"})
		if code := post(string(b)); code != http.StatusCreated {
			t.Fatalf("chat %q: HTTP %d, want 201", chat, code)
		}
	}
	for i, chat := range chats {
		waitUntil(t, "chat "+chat+" listed", 20*time.Second, func() bool {
			list, err := intent.List(context.Background(), svc.Client(), intent.Filter{ChatID: chat, Status: workflows.StatusPending})
			return err == nil && len(list) == 1 && list[0].MessageID == fmt.Sprint(i+1)
		})
	}
}

// Hardening: a crash between starting a batch's intents and queueing their deliveries leaves
// intents the session never heard of; at worker start they are queued again, in arrival order,
// and reach the pane at once instead of minutes later when their own wait runs out.
func TestRecoverUnqueuedDeliveries(t *testing.T) {
	cfg := testenv.Config(t)
	pane := tmuxReader(t)
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	rec := intent.New(svc.Client(), cfg)
	base := time.Now()
	for i := 1; i <= 5; i++ {
		// Start only: the door died before QueueDelivery.
		if _, err := rec.Start(ctx, intent.Message{ChatID: "9", MessageID: fmt.Sprint(i), Text: fmt.Sprintf("lost message %d", i),
			Source: workflows.SourceTelegram, ReceivedAt: base.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "5 pending in visibility", 20*time.Second, func() bool {
		list, err := intent.List(ctx, svc.Client(), intent.Filter{Status: workflows.StatusPending, ChatID: "9"})
		return err == nil && len(list) == 5
	})
	n, err := rec.Recover(ctx)
	if err != nil || n != 5 {
		t.Fatalf("Recover = %d, %v; want 5", n, err)
	}
	waitUntil(t, "the 5 messages in the pane", 30*time.Second, func() bool {
		b, _ := os.ReadFile(pane)
		return strings.Count(string(b), "lost message") == 5
	})
	b, _ := os.ReadFile(pane)
	last := -1
	for i := 1; i <= 5; i++ {
		at := strings.Index(string(b), fmt.Sprintf("lost message %d", i))
		if at < last {
			t.Fatalf("message %d out of order in the pane:\n%s", i, b)
		}
		last = at
	}
	// Delivered now (the memo says so): a second recovery queues nothing.
	waitUntil(t, "the deliveries in the memo", 20*time.Second, func() bool {
		list, err := intent.List(ctx, svc.Client(), intent.Filter{Status: workflows.StatusPending, ChatID: "9"})
		if err != nil || len(list) != 5 {
			return false
		}
		for _, s := range list {
			if s.Delivered == nil {
				return false
			}
		}
		return true
	})
	if n, err := rec.Recover(ctx); err != nil || n != 0 {
		t.Errorf("second Recover = %d, %v; want 0", n, err)
	}
}

// The plugin door loses nothing while the worker is down: the real block, run by bun, spools
// the message before it posts (here to an ingest nobody answers); the worker records it from the
// spool at start. A block that fails (a name renamed upstream) is pushed once and shown by
// doctor with the message's IDs.
func TestPluginSpoolWhileWorkerDown(t *testing.T) {
	bun := peers.Bun(t)
	cfg := testenv.Config(t)
	cfg.Ingest.Token = "tok"
	ntfy := fakentfy.New()
	defer ntfy.Close()
	cfg.Ntfy.URL, cfg.Ntfy.Topic = ntfy.URL(), "ops"
	url, err := plugin.IngestURL(cfg.Ingest.Listen)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := plugin.Block(url, plugin.Files{TokenFile: cfg.PluginTokenFile(), SpoolDir: cfg.SpoolDir()})
	if err != nil {
		t.Fatal(err)
	}
	runBlock := func(chatLine, msgID, text string) {
		t.Helper()
		// The canary first: it runs when the plugin starts, before any message.
		script := blocks.Canary + "const ctx = { message: { date: 1767225600 } }\nasync function handleInbound() {\n" +
			"  const from = { username: 'kento', id: 42 }\n  " + chatLine + "\n  const msgId: number | undefined = " + msgID + "\n" +
			"  const text = " + text + "\n" + blocks.Ingest + "}\nawait handleInbound()\n"
		file := filepath.Join(t.TempDir(), "server.ts")
		if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bun, "run", file).CombinedOutput(); err != nil {
			t.Fatalf("bun run: %v\n%s", err, out)
		}
	}
	// The worker is down: the post fails, the spool keeps the messages.
	runBlock("const chat_id = String(55)", "1", "'sent while the worker was down'")
	runBlock("const chat_id = String(55)", "2", "'this one too'")
	runBlock("const chatId = String(55)", "3", "'lost to a renamed name'")

	svc, _ := startService(t, cfg)
	ctx := context.Background()
	waitUntil(t, "the spooled messages recorded", 20*time.Second, func() bool {
		list, err := intent.List(ctx, svc.Client(), intent.Filter{ChatID: "55"})
		return err == nil && len(list) == 2
	})
	v, err := intent.Show(ctx, svc.Client(), "55/1")
	if err != nil || v.Text != "sent while the worker was down" {
		t.Fatalf("intent 55/1 = %q, %v", v.Text, err)
	}
	waitUntil(t, "one alert for the failed block", 10*time.Second, func() bool {
		for _, m := range ntfy.Messages() {
			if m.Title == "intentq: plugin block failed" && strings.Contains(m.Message, "message=\"3\"") {
				return true
			}
		}
		return false
	})
	if res := doctor.PluginCanary(cfg); res.OK || !strings.Contains(res.Detail, "chat_id") {
		t.Errorf("doctor after the failure: %+v", res)
	}
	// While the worker runs, a new spool line is drained at once (fsnotify), and removed.
	runBlock("const chat_id = String(55)", "4", "'while running'")
	waitUntil(t, "the new message recorded", 20*time.Second, func() bool {
		list, err := intent.List(ctx, svc.Client(), intent.Filter{ChatID: "55"})
		return err == nil && len(list) == 3
	})
	waitUntil(t, "the spool emptied", 10*time.Second, func() bool {
		left, _ := filepath.Glob(filepath.Join(cfg.SpoolDir(), "spool-*"))
		return len(left) == 0
	})
	n := 0
	for _, m := range ntfy.Messages() {
		if m.Title == "intentq: plugin block failed" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d alerts for one failed block, want 1", n)
	}
}

// Issue 15: a burst of 200 Telegram messages (some delivered twice by Telegram) reaches an idle
// line-reader pane within 60 s as a handful of prompts, each message typed once, in order, and
// each intent counted delivered on its own; the session's history has one entry per message.
func TestN15BurstTypedTogether(t *testing.T) {
	const n = 200
	bot, cfg, pane, svc := telegramToPane(t)
	ctx := context.Background()

	for m := 1; m <= n; m++ {
		upd := bot.AddMessage(allowedChat, allowedUser, m, fmt.Sprintf("burst %d", m))
		if m%25 == 0 {
			bot.Duplicate(upd)
		}
	}
	header := regexp.MustCompile(`(?m)^【新着メッセージ】msg_id=(\d+) `)
	waitUntil(t, "all 200 messages in the pane", 60*time.Second, func() bool {
		b, _ := os.ReadFile(pane)
		return len(header.FindAllString(string(b), -1)) >= n
	})
	b, _ := os.ReadFile(pane)
	for i, m := range header.FindAllStringSubmatch(string(b), -1) {
		if m[1] != fmt.Sprint(i+1) {
			t.Fatalf("line %d of the pane is message %s: not in arrival order, or typed twice", i+1, m[1])
		}
	}
	typed, err := os.ReadDir(filepath.Join(cfg.DataDir, "typed"))
	if err != nil {
		t.Fatal(err)
	}
	if len(typed) == 0 || len(typed) > n/policy.MaxBatch+5 {
		t.Errorf("%d prompts typed for %d messages, want a handful (at most %d a prompt)", len(typed), n, policy.MaxBatch)
	}
	// A typed block's results may be held while more waits (policy.ResultsHold, a minute), and a
	// loaded machine runs the 200 intents' workflow tasks late: the deadline covers both.
	waitUntil(t, "every intent to learn it was delivered", policy.ResultsHold+90*time.Second, func() bool {
		for m := 1; m <= n; m++ {
			v, err := intent.Show(ctx, svc.Client(), workflows.IntentID(fmt.Sprint(allowedChat), fmt.Sprint(m)))
			if err != nil || v.Delivered == nil {
				return false
			}
		}
		return true
	})
	f, err := os.Open(filepath.Join(cfg.DataDir, "history", config.DefaultSessionName+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, _, err := activities.ReadHistory(f)
	if err != nil || len(entries) != n {
		t.Fatalf("history has %d entries (%v), want %d", len(entries), err, n)
	}
}

// Issue 15, reads after writes: a list taken before a close (as visibility may still show it a
// moment after) is confirmed against each workflow: the closed intent is left out.
func TestConfirmLeavesOutWhatChanged(t *testing.T) {
	cfg := testenv.Config(t)
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	rec := intent.New(svc.Client(), cfg)
	for i := 1; i <= 2; i++ {
		if _, err := rec.Record(ctx, intent.Message{ChatID: "31", MessageID: fmt.Sprint(i), Text: "t", Source: workflows.SourceIngest}); err != nil {
			t.Fatal(err)
		}
	}
	var before []intent.Summary
	waitUntil(t, "both listed", 20*time.Second, func() bool {
		var err error
		before, err = intent.List(ctx, svc.Client(), intent.Filter{Status: workflows.StatusPending, ChatID: "31"})
		return err == nil && len(before) == 2
	})
	if err := intent.Close(ctx, svc.Client(), "intent/31/1", workflows.CloseRequest{}); err != nil {
		t.Fatal(err)
	}
	got := intent.Confirm(ctx, svc.Client(), before, workflows.StatusPending)
	if len(got) != 1 || got[0].ID != "intent/31/2" {
		t.Errorf("confirmed %+v, want only intent/31/2", got)
	}
}

// Issue 15: a hook's page is one list call: the most recent intents of a filter, oldest first,
// and whether there are more (not counted); with an age, only those received before it, found
// among the most recent rows (ages checked by the client, not by a range visibility scans),
// looking further back once when younger ones fill the first rows.
func TestListPageOneCallWithAges(t *testing.T) {
	cfg := testenv.Config(t)
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	rec := intent.New(svc.Client(), cfg)
	base := time.Now().Add(-time.Hour)
	for i := 1; i <= 6; i++ {
		// 1-3 an hour old, 4-6 just now.
		at := base.Add(time.Duration(i) * time.Second)
		if i > 3 {
			at = time.Now()
		}
		if _, err := rec.Record(ctx, intent.Message{ChatID: "33", MessageID: fmt.Sprint(i), Text: "t", Source: workflows.SourceIngest, ReceivedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	f := intent.Filter{Status: workflows.StatusPending, ChatID: "33"}
	waitUntil(t, "all six listed", 20*time.Second, func() bool {
		list, err := intent.List(ctx, svc.Client(), f)
		return err == nil && len(list) == 6
	})
	ids := func(p intent.Page) []string {
		var out []string
		for _, s := range p.Intents {
			out = append(out, s.MessageID)
		}
		return out
	}
	page, err := intent.ListPage(ctx, svc.Client(), f, 4)
	if err != nil || !page.More || fmt.Sprint(ids(page)) != "[3 4 5 6]" {
		t.Errorf("page of 4: %v more=%v (%v), want [3 4 5 6], more", ids(page), page.More, err)
	}
	page, err = intent.ListPage(ctx, svc.Client(), f, 6)
	if err != nil || page.More || len(page.Intents) != 6 {
		t.Errorf("page of 6: %v more=%v (%v), want all six, no more", ids(page), page.More, err)
	}
	old := f
	old.ReceivedBefore = time.Now().Add(-30 * time.Minute)
	page, err = intent.ListPage(ctx, svc.Client(), old, 2)
	if err != nil || !page.More || fmt.Sprint(ids(page)) != "[2 3]" {
		t.Errorf("old page of 2: %v more=%v (%v), want [2 3], more", ids(page), page.More, err)
	}
	page, err = intent.ListPage(ctx, svc.Client(), old, 10)
	if err != nil || page.More || fmt.Sprint(ids(page)) != "[1 2 3]" {
		t.Errorf("old page of 10: %v more=%v (%v), want [1 2 3], no more", ids(page), page.More, err)
	}
}

// Issue 15: an intent the door started with its search attributes and memo writes them again
// only when something changes (two visibility writes fewer per intent of a burst).
func TestIntentPublishesOnlyChanges(t *testing.T) {
	cfg := testenv.Config(t)
	svc, _ := startService(t, cfg)
	ctx := context.Background()
	if _, err := intent.New(svc.Client(), cfg).Record(ctx, intent.Message{ChatID: "32", MessageID: "1", Text: "t", Source: workflows.SourceIngest}); err != nil {
		t.Fatal(err)
	}
	id := "intent/32/1"
	count := func() (tasks, upserts, memos int) {
		for _, e := range historyEvents(t, svc.Client(), id) {
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				tasks++
			case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
				upserts++
			case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
				memos++
			}
		}
		return
	}
	waitUntil(t, "the intent's first task", 20*time.Second, func() bool { tasks, _, _ := count(); return tasks > 0 })
	if _, upserts, memos := count(); upserts+memos != 0 {
		t.Errorf("first task wrote %d search attribute and %d memo upserts, want none", upserts, memos)
	}
	if err := intent.Close(ctx, svc.Client(), id, workflows.CloseRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, upserts, memos := count(); upserts != 1 || memos != 1 {
		t.Errorf("after the close: %d upserts, %d memo changes, want 1 each", upserts, memos)
	}
}
