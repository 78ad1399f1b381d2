package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/doors/hooks/hooktemporal"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/workflows"
)

// Issue 36 at the door, against a real server: the permission hook (hooktemporal.Approve) starts an
// approval and tells the session; the card comes with its buttons; forged, oversized and foreign
// presses are answered and change nothing; Allow for this session decides, the hook prints the
// decision in Claude Code's format with the suggested rule scoped to the session (never the mode
// change Claude Code suggests beside it); a second press is answered "already"; the agent's next
// hook reaches the ended approval through its session without harm. It records the approval's
// and the session's histories for the replay test (WRITE_REPLAY_HISTORY=1).
func TestApprovalAtTheDoor(t *testing.T) {
	svc, _, bot, cfg := telegramService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	session := config.DefaultSessionName
	input := `{"session_id":"s1","hook_event_name":"PermissionRequest","tool_name":"Bash",` +
		`"tool_input":{"command":"make deploy\u202e","description":"Deploy it"},` +
		`"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make deploy:*"}],"behavior":"allow","destination":"localSettings"},` +
		`{"type":"setMode","mode":"acceptEdits","destination":"session"}]}`
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		s := hooktemporal.ApprovalSettings{Session: session, CLI: "claude", Chat: cfg.ApprovalChat(session), Wait: time.Minute, Logger: zap.NewNop()}
		done <- hooktemporal.Approve(ctx, strings.NewReader(input), &out, s, func(context.Context) (hooktemporal.Approver, func(), error) {
			return hooktemporal.TemporalApprover{Client: svc.Client(), TaskQueue: cfg.Temporal.TaskQueue}, func() {}, nil
		})
	}()
	var card int
	waitUntil(t, "the card", 30*time.Second, func() bool {
		for _, m := range bot.Sent() {
			if strings.Contains(m.Text, "make deploy[U+202E]") && m.Params.Get("reply_markup") != "" {
				card = m.MessageID
				return true
			}
		}
		return false
	})
	buttons := bot.Buttons(allowedChat, card)
	if len(buttons) != 3 || buttons["Allow for this session"] == "" {
		t.Fatalf("buttons: %v", buttons)
	}
	answer := func(id string) string {
		t.Helper()
		var got string
		waitUntil(t, "the answer to press "+id, 30*time.Second, func() bool {
			for _, a := range bot.CallbackAnswers() {
				if a.ID == id {
					got = a.Text
					return true
				}
			}
			return false
		})
		return got
	}
	// /pending lists the approval that waits (visibility: asked again until it shows), /status
	// says the agent waits for it.
	msg := 100
	ask := func(command, want string) {
		t.Helper()
		waitUntil(t, command+" saying "+want, 30*time.Second, func() bool {
			msg++
			bot.AddMessage(allowedChat, allowedUser, msg, command)
			var got string
			waitUntil(t, "the answer to "+command, 30*time.Second, func() bool {
				for _, m := range bot.Sent() {
					if m.ReplyTo == msg {
						got = m.Text
						return true
					}
				}
				return false
			})
			return strings.Contains(got, want)
		})
	}
	ask("/pending", "Waiting for your approval, ")
	ask("/status", session+": waits for your approval")
	token, _, _ := strings.Cut(buttons["Deny"], ":")
	for data, want := range map[string]string{
		"forged":                    "not one intentq knows",
		token + ":AAAAAAAA":         "not an answer this card offers",
		strings.Repeat("x", 65):     "carries nothing",
		"AAAAAAAAAAAAAAAA:AAAAAAAA": "not one of intentq's approvals",
	} {
		if got := answer(bot.PressData(allowedChat, allowedUser, card, data)); !strings.Contains(got, want) {
			t.Errorf("press %.20q answered %q, want %q", data, got, want)
		}
	}
	if got := answer(bot.PressData(allowedChat+1, allowedUser, card, buttons["Deny"])); !strings.Contains(got, "Not allowed") {
		t.Errorf("a press in a chat not on the allowlist: %q", got)
	}
	if got := answer(bot.Press(allowedChat, allowedUser, card, "Allow for this session")); !strings.Contains(got, "Allowed for this session") {
		t.Errorf("the press: %q", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var printed hooktemporal.PermissionOutput
	if err := json.Unmarshal(out.Bytes(), &printed); err != nil {
		t.Fatalf("the hook printed %q: %v", out.String(), err)
	}
	d := printed.HookSpecificOutput.Decision
	if printed.HookSpecificOutput.HookEventName != "PermissionRequest" || d.Behavior != "allow" || len(d.UpdatedPermissions) != 1 ||
		d.UpdatedPermissions[0]["type"] != "addRules" || d.UpdatedPermissions[0]["destination"] != "session" {
		t.Errorf("the hook printed %s", out.String())
	}
	waitUntil(t, "the card edited, its buttons gone", 30*time.Second, func() bool { return len(bot.Buttons(allowedChat, card)) == 0 })
	if got := answer(bot.PressData(allowedChat, allowedUser, card, buttons["Deny"])); !strings.Contains(got, "Already answered: Allowed for this session") {
		t.Errorf("the second press: %q", got)
	}
	// The tool runs: its PostToolUse reaches the ended approval through the session, harmlessly.
	if err := (hooktemporal.Temporal{Client: svc.Client()}).Report(ctx, session, workflows.AgentEvent{Event: workflows.EventPostToolUse, Detail: "Bash", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	id := workflows.ApprovalWorkflowID(session, token)
	var res workflows.ApprovalResult
	if err := svc.Client().GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.UserID != allowedUser || res.Via != "button" {
		t.Errorf("the approval's record: %+v %v", res, err)
	}
	waitUntil(t, "the session past the agent's next hook", 30*time.Second, func() bool {
		v, err := svc.Client().QueryWorkflow(ctx, workflows.SessionWorkflowID(session), "", workflows.QuerySession)
		var view workflows.SessionView
		return err == nil && v.Get(&view) == nil && view.Agent != nil && view.Agent.State == workflows.AgentWorking
	})
	if os.Getenv("WRITE_REPLAY_HISTORY") != "" {
		writeHistory(t, svc, id, "../../workflows/testdata/approval.json")
		writeHistory(t, svc, workflows.SessionWorkflowID(session), "../../workflows/testdata/session_approval.json")
	}
}

// Issue 36: a person's reply to what a session sent (its card here; its answers the same way)
// goes to that session, whatever the chat's mapping says: chat 1001 maps to the default session,
// the card is the builder's.
func TestReplyToACardGoesToItsSession(t *testing.T) {
	bot, cfg := telegramConfig(t)
	cfg.Sessions["builder"] = config.Session{CLI: "claude", Mode: config.ModeTmux, TmuxTarget: "builder:0"}
	svc, _ := startService(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		s := hooktemporal.ApprovalSettings{Session: "builder", CLI: "claude", Chat: "1001", Wait: 30 * time.Second, Logger: zap.NewNop()}
		_ = hooktemporal.Approve(ctx, strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"make"}}`), &bytes.Buffer{}, s,
			func(context.Context) (hooktemporal.Approver, func(), error) {
				return hooktemporal.TemporalApprover{Client: svc.Client(), TaskQueue: cfg.Temporal.TaskQueue}, func() {}, nil
			})
	}()
	var card int
	waitUntil(t, "the card", 30*time.Second, func() bool {
		for _, m := range bot.Sent() {
			if strings.Contains(m.Text, "builder asks to use Bash") {
				card = m.MessageID
			}
		}
		return card != 0
	})
	var replied map[string]any
	_ = json.Unmarshal(bot.Message(allowedChat, card), &replied)
	bot.AddUpdate(map[string]any{"message": map[string]any{"message_id": 51, "date": time.Now().Unix(), "from": fakebot.NewUser(allowedUser),
		"chat": fakebot.ChatFor(allowedChat, fakebot.NewUser(allowedUser)), "text": "use the other target", "reply_to_message": replied}})
	bot.AddMessage(allowedChat, allowedUser, 52, "a new question")
	var list []intent.Summary
	waitUntil(t, "both recorded", 30*time.Second, func() bool {
		list, _ = intent.List(ctx, svc.Client(), intent.Filter{})
		return len(list) == 2
	})
	want := map[string]string{"51": "builder", "52": config.DefaultSessionName}
	for _, s := range list {
		if s.Session != want[s.MessageID] {
			t.Errorf("message %s went to %q, want %s", s.MessageID, s.Session, want[s.MessageID])
		}
	}
}
