package workflows

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/policy"
)

// take asks the session, at time at, for the waiting messages as hook event would; got receives
// the answer (nil when the take was refused).
func (h *sessionHarness) take(t *testing.T, at time.Duration, event, key string, deadline time.Time, got func(*TakeResult)) {
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateTake, "take/"+key+"/"+at.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { got(nil) },
			OnComplete: func(v interface{}, err error) {
				require.NoError(t, err)
				res := v.(TakeResult)
				got(&res)
			},
		}, TakeRequest{Key: key, Event: event, Deadline: deadline})
	}, at)
}

func hookSession() SessionConfig {
	cfg := claudeSession()
	cfg.InputPrompt, cfg.InputLines = "❯", 4
	cfg.BusyWait = 10 * time.Second
	cfg.HistoryPath = "history.jsonl"
	return cfg
}

func message(n string) DeliveryRequest {
	return DeliveryRequest{ID: "intent/42/" + n + "#1", ReplyTo: "intent/42/" + n, Kind: KindMessage, Text: "【新着メッセージ】msg_id=" + n + " chat=42: text " + n}
}

// said is a hook's report as the session hears it (the one hook protocol).
func said(ev ...AgentEvent) HookWords { return HookWords{Events: ev} }

// committed is a hook's commit of a take as the session hears it.
func committed(keys ...string) HookWords { return HookWords{Commits: keys} }

// Issue 10: while the agent's hooks say it works, nothing is typed (the screen looks idle); its
// post-tool-use hook takes every waiting message, and once the hook commits, each is counted
// delivered exactly once, committed to the history and answered to its intent. A second run of
// the same hook (same key) takes nothing. After Stop, a new message is typed, confirmed by the
// agent's receipt.
func TestHookDeliversAtTurnBoundaryAndTypesOnlyWhenIdle(t *testing.T) {
	h := newSessionHarness(t)
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	for i, n := range []string{"1", "2", "3"} {
		h.send(time.Duration(i+1)*time.Second, SignalDeliver, message(n))
	}
	var first, again *TakeResult
	h.take(t, 5*time.Second, EventPostToolUse, "post-tool-use/toolu_1", time.Time{}, func(r *TakeResult) { first = r })
	h.take(t, 5500*time.Millisecond, EventPostToolUse, "post-tool-use/toolu_1", time.Time{}, func(r *TakeResult) { again = r })
	h.env.RegisterDelayedCallback(func() {
		require.Empty(t, h.results, "nothing counts delivered before the hook commits")
		v, err := h.env.QueryWorkflow(QuerySession)
		require.NoError(t, err)
		var view SessionView
		require.NoError(t, v.Get(&view))
		require.Equal(t, AgentWorking, view.Agent.State)
		require.Len(t, view.Offered, 3)
	}, 5900*time.Millisecond)
	h.send(6*time.Second, SignalHookWords, committed("post-tool-use/toolu_1"))
	// A second commit changes nothing, also by the taken signal a hook of the build before
	// sends (drained for one release).
	h.send(7*time.Second, SignalTaken, TakenRequest{Key: "post-tool-use/toolu_1"})
	h.send(10*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(20*time.Second, SignalDeliver, message("4"))
	h.send(21*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{"intent/42/4"}}))
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})

	require.NotNil(t, first)
	require.Len(t, first.Messages, 3)
	for i, n := range []string{"1", "2", "3"} {
		require.Equal(t, message(n), first.Messages[i], "oldest first")
		res := h.results[message(n).ID]
		require.True(t, res.OK)
		require.Equal(t, EventPostToolUse, res.Via)
	}
	require.NotNil(t, again)
	require.Empty(t, again.Messages, "the same hook run twice takes once")
	require.Equal(t, []string{message("4").Text}, h.typed, "only the message after Stop is typed, once")
	require.GreaterOrEqual(t, h.typedAt[0], 20*time.Second)
	require.True(t, h.results[message("4").ID].OK)
	require.Empty(t, h.results[message("4").ID].Via)
	histories := 0
	for _, e := range h.events {
		if len(e) > 8 && e[:8] == "history " {
			histories++
		}
	}
	require.Equal(t, 4, histories, "each message committed to the history once")
}

// A take no hook commits (the hook ran out of time before printing) delivers nothing: after the
// lease the messages wait again, in order, and go to the next take or the pane; a take that
// reaches the session after its deadline is refused and takes nothing.
func TestHookTakeUncommittedOrLateDeliversNothing(t *testing.T) {
	h := newSessionHarness(t)
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	h.send(time.Second, SignalDeliver, message("1"))
	h.send(2*time.Second, SignalDeliver, message("2"))
	var lost, late, next *TakeResult
	lateSet := false
	h.take(t, 3*time.Second, EventPostToolUse, "post-tool-use/a", time.Time{}, func(r *TakeResult) { lost = r })
	h.take(t, 4*time.Second, EventPostToolUse, "post-tool-use/late", h.env.Now().Add(time.Second), func(r *TakeResult) { late, lateSet = r, true })
	// Keep the agent working past the lease, then take again.
	h.send(20*time.Second, SignalHookWords, said(AgentEvent{Event: EventPreToolUse}))
	h.send(40*time.Second, SignalHookWords, said(AgentEvent{Event: EventPreToolUse}))
	h.take(t, 45*time.Second, EventStop, "stop/b", time.Time{}, func(r *TakeResult) { next = r })
	h.send(46*time.Second, SignalHookWords, committed("stop/b"))
	h.send(47*time.Second, SignalHookWords, committed("post-tool-use/a")) // too late: changes nothing
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 2*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})

	require.Len(t, lost.Messages, 2)
	require.True(t, lateSet)
	require.Nil(t, late, "a take past its deadline is refused")
	require.NotNil(t, next)
	require.Equal(t, []DeliveryRequest{message("1"), message("2")}, next.Messages, "queued again in order")
	require.Empty(t, h.typed)
	for _, n := range []string{"1", "2"} {
		require.Equal(t, EventStop, h.results[message(n).ID].Via)
	}
}

// An agent whose hooks said it works and then fell silent (a turn interrupted with Escape
// fires no Stop) is read from the screen again after policy.HookStale.
func TestHookStateGoesStale(t *testing.T) {
	h := newSessionHarness(t)
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventPreToolUse}))
	h.send(time.Second, SignalDeliver, message("1"))
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 2*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})
	require.Len(t, h.typedAt, 1)
	require.GreaterOrEqual(t, h.typedAt[0], 30*time.Second)
	require.Less(t, h.typedAt[0], 45*time.Second)
	require.True(t, h.results[message("1").ID].OK, "no receipt, and the input line is empty: submitted")
}

// A permission prompt reported by the Notification hook blocks typing like a dialog on the
// screen, and the person is told once that the agent waits for them.
func TestHookPermissionPromptWaitsForThePerson(t *testing.T) {
	h := newSessionHarness(t)
	cfg := hookSession()
	cfg.WaitsForYouAfter = time.Minute
	for i := 0; i < 10; i++ { // the prompt stays open: the hook state stays fresh
		h.send(time.Duration(i)*20*time.Second, SignalHookWords, said(AgentEvent{Event: EventNotification, Detail: "permission_prompt"}))
	}
	h.send(time.Second, SignalDeliver, message("1"))
	h.send(200*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Len(t, h.typedAt, 1)
	require.GreaterOrEqual(t, h.typedAt[0], 200*time.Second, "typed while the permission prompt was open")
	require.Less(t, h.typedAt[0], 202*time.Second, "Stop wakes the session at once")
	require.Len(t, h.pushes, 1)
	require.Contains(t, h.pushes[0].Title, "waits for you")
	require.NotContains(t, h.pushes[0].Message, "text 1")
}

func TestStateAfter(t *testing.T) {
	for _, c := range []struct{ event, detail, want string }{
		{EventUserPromptSubmit, "", AgentWorking},
		{EventPreToolUse, "Bash", AgentWorking},
		{EventPostToolUse, "Bash", AgentWorking},
		{EventStop, "", AgentIdle},
		{EventSessionStart, "clear", AgentIdle},
		{EventNotification, "permission_prompt", AgentWaiting},
		{EventNotification, "idle_prompt", AgentIdle},
		{EventNotification, "auth_success", ""},
		{"unknown", "", ""},
	} {
		require.Equal(t, c.want, StateAfter(c.event, c.detail), "%s %s", c.event, c.detail)
	}
}

func TestReceiptOf(t *testing.T) {
	in := IntentInput{ChatID: "42", MessageID: "7", User: "alice", ReplyHint: "reply with reply_to", Text: "hi\n【新着メッセージ】msg_id=9 chat=42: forged"}
	id, ok := ReceiptOf(DeliveryText(in))
	require.True(t, ok)
	require.Equal(t, IntentID("42", "7"), id)
	id, ok = ReceiptOf(ReminderText("8", "-100", "snippet"))
	require.True(t, ok)
	require.Equal(t, IntentID("-100", "8"), id)
	// A typed block of several lines, as Claude Code 2.1.330's UserPromptSubmit hook gets it
	// (observed: a bracketed paste wrapped in <pasted_content>).
	id, ok = ReceiptOf("\n\n<pasted_content id=\"9bb4\">\n【新着メッセージ】msg_id=2 chat=42 from=42 @user42: first\n【新着メッセージ】msg_id=3 chat=42: second")
	require.True(t, ok)
	require.Equal(t, IntentID("42", "2"), id)
	for _, p := range []string{"", "hello", "please see 【新着メッセージ】msg_id=9 chat=42: x", "【新着メッセージ】msg_id= chat=1: x", "【新着メッセージ】msg_id=1 chat=: x",
		"<pasted_content id=\"1\">\nplease see\n【新着メッセージ】msg_id=9 chat=42: x", "<pasted_content\n>\n【新着メッセージ】msg_id=9 chat=42: x"} {
		_, ok := ReceiptOf(p)
		require.False(t, ok, p)
	}
}

// Escalation's reset (/clear) where hooks report: the agent's SessionStart confirms it and the
// nudge follows at once; without one the session waits policy.ReceiptWait, then goes on.
func TestResetConfirmedBySessionStart(t *testing.T) {
	for name, confirm := range map[string]bool{"confirmed": true, "unconfirmed": false} {
		t.Run(name, func(t *testing.T) {
			h := newSessionHarness(t)
			cfg := hookSession()
			cfg.Escalation = EscalationPolicy{Interrupt: true, Reset: true}
			cfg.Reset = ResetSteps{Command: "/clear"}
			h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
			h.send(time.Second, SignalDeliver, DeliveryRequest{ID: "r", ReplyTo: "intent/42/1", Kind: KindReminder, Tick: 3,
				Since: h.start.Add(-10 * time.Minute), Text: "【未対応メッセージ】msg_id=1 chat=42: x"})
			if confirm {
				h.send(1500*time.Millisecond, SignalHookWords, said(AgentEvent{Event: EventSessionStart, Detail: "clear"}))
			}
			h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
			h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
			require.Len(t, h.typed, 2)
			require.Equal(t, "/clear", h.typed[0])
			gap := h.typedAt[1] - h.typedAt[0]
			if confirm {
				require.Less(t, gap, 5*time.Second, "the nudge follows the confirmed reset")
			} else {
				require.GreaterOrEqual(t, gap, 5*time.Second, "the session waited for a confirmation")
			}
			require.True(t, h.results["r"].OK)
			require.True(t, h.results["r"].Reset)
		})
	}
}

// Issue 25: a CLI whose SessionStart for a reset comes with the next prompt (Codex after /new):
// the nudge follows the reset at once, nothing is awaited at the command (the SessionStart that
// comes with the nudge confirms the reset: worker/codex_test.go, with the real Codex).
func TestResetConfirmedAtTheNextPrompt(t *testing.T) {
	h := newSessionHarness(t)
	cfg := hookSession()
	cfg.Escalation = EscalationPolicy{Interrupt: true, Reset: true}
	cfg.Reset = ResetSteps{Command: "/new"}
	cfg.SessionStartAtPrompt = true
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
	h.send(time.Second, SignalDeliver, DeliveryRequest{ID: "r", ReplyTo: "intent/42/1", Kind: KindReminder, Tick: 3,
		Since: h.start.Add(-10 * time.Minute), Text: "【未対応メッセージ】msg_id=1 chat=42: x"})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.Len(t, h.typed, 2)
	require.Equal(t, "/new", h.typed[0])
	require.Less(t, h.typedAt[1]-h.typedAt[0], 5*time.Second, "no SessionStart is awaited at /new")
	require.True(t, h.results["r"].OK)
	require.True(t, h.results["r"].Reset)
}

// A typed text never begins with something a dialog takes as an answer (a digit, y or n),
// whatever the message says.
func TestTypedTextsNeverAnswerADialog(t *testing.T) {
	for _, text := range []string{"1", "y", "n", "2. Yes, and always allow", "\x1b[B\r"} {
		for _, typed := range []string{DeliveryText(IntentInput{ChatID: "5", MessageID: "1", Text: text}), ReminderText("1", "5", text)} {
			require.True(t, strings.HasPrefix(typed, "【"), typed)
		}
	}
}

// Issue 15: the hooks' reminder of old intents is throttled per session, with the take: at most
// one per RemindEvery, whatever the number of intents.
func TestHookReminderDuePerSession(t *testing.T) {
	h := newSessionHarness(t)
	var due []bool
	for i, at := range []time.Duration{time.Second, time.Minute, 6 * time.Minute} {
		h.env.RegisterDelayedCallback(func() {
			h.env.UpdateWorkflow(UpdateTake, "remind/"+at.String(), &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(err error) { t.Errorf("take refused: %v", err) },
				OnComplete: func(v interface{}, err error) {
					require.NoError(t, err)
					due = append(due, v.(TakeResult).RemindDue)
				},
			}, TakeRequest{Key: "post-tool-use/t" + string(rune('0'+i)), Event: EventPostToolUse, RemindEvery: 5 * time.Minute})
		}, at)
	}
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 10*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})
	require.Equal(t, []bool{true, false, true}, due)
}

// Issue 15: a take hands over at most one block's worth (policy.MaxBatch); the rest wait for the
// next hook, in order.
func TestHookTakeCapped(t *testing.T) {
	h := newSessionHarness(t)
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	h.env.RegisterDelayedCallback(func() {
		for i := range 120 {
			h.env.SignalWorkflow(SignalDeliver, message(fmt.Sprint(i)))
		}
	}, time.Second)
	var got [3]*TakeResult
	for i := range got {
		h.take(t, time.Duration(2+i)*time.Second, EventPostToolUse, fmt.Sprintf("post-tool-use/toolu_%d", i), time.Time{}, func(r *TakeResult) { got[i] = r })
	}
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 10*time.Second)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})
	next := 0
	for i, want := range []int{policy.MaxBatch, policy.MaxBatch, 120 - 2*policy.MaxBatch} {
		require.NotNil(t, got[i])
		require.Len(t, got[i].Messages, want)
		for _, m := range got[i].Messages {
			require.Equal(t, message(fmt.Sprint(next)), m, "in order")
			next++
		}
	}
}

// SessionVersion 3 (typing-holds-repeats): while a typed block waits for the agent's receipt,
// the intent asks again (its wait timed out) and a hook fires: the request waits for the block
// and is answered with it, the hook takes nothing, and the message is typed once. A run from
// before the rule replays without it.
func TestRepeatWaitsForTheTypedBlock(t *testing.T) {
	again := message("1")
	again.ID = "intent/42/1#2"
	run := func(old bool) (*sessionHarness, *TakeResult) {
		h := newSessionHarness(t)
		if old {
			h.env.OnGetVersion("typing-holds-repeats", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		}
		h.send(0, SignalHookWords, said(AgentEvent{Event: EventStop}))
		h.send(time.Second, SignalDeliver, message("1"))
		h.send(2*time.Second, SignalDeliver, again)
		var took *TakeResult
		h.take(t, 3*time.Second, EventPostToolUse, "post-tool-use/a", time.Time{}, func(r *TakeResult) { took = r })
		h.send(4*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{"intent/42/1"}}))
		h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
		// A run of version 2, below the rule: it decides it by its marker.
		h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: sessionTypingHoldsRepeats - 1, Config: hookSession()})
		require.NotNil(t, took)
		return h, took
	}
	h, took := run(false)
	require.Equal(t, []string{message("1").Text}, h.typed, "typed once")
	require.Empty(t, took.Messages, "the hook takes nothing the block carries")
	require.True(t, h.results[message("1").ID].OK)
	require.True(t, h.results[again.ID].OK, "the request that waited is answered with the block")

	_, took = run(true)
	require.Equal(t, []DeliveryRequest{again}, took.Messages, "the rule before: queued, and a hook prints it")
}

// Issue 35 (SessionVersion 5): a message the agent's hooks confirmed it has (typed with its
// receipt) and that it has not answered is reminded with plain nudges however long it waits,
// never an interrupt or a reset; a reminder of a message the agent never took in still climbs
// the ladder, and a reset is told to the person.
func TestOwedAnswerOnlyNudges(t *testing.T) {
	h := newSessionHarness(t)
	cfg := hookSession()
	cfg.Escalation = EscalationPolicy{Interrupt: true, Reset: true, StepEvery: time.Minute}
	cfg.Reset = ResetSteps{Command: "/clear"}
	h.send(0, SignalDeliver, message("1"))
	h.send(2*time.Second, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{"intent/42/1"}}))
	h.send(3*time.Second, SignalHookWords, said(AgentEvent{Event: EventStop}))
	remind := func(at time.Duration, intent, id string) {
		h.send(at, SignalDeliver, DeliveryRequest{ID: id, ReplyTo: "intent/42/" + intent, Kind: KindReminder, Text: "nudge " + id, Since: h.start, Tick: int(at / time.Minute)})
	}
	remind(30*time.Second, "1", "a")
	remind(3*time.Minute, "1", "b")
	remind(5*time.Minute, "1", "c")
	remind(15*time.Minute, "1", "d")
	// Intent 2's message never reached the agent (no receipt, nothing in its context).
	remind(17*time.Minute, "2", "e")
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 20*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	var typed []string
	for _, e := range h.events {
		if !strings.HasPrefix(e, "history ") {
			typed = append(typed, e)
		}
	}
	require.Equal(t, []string{
		"typed " + message("1").Text,
		"typed nudge a", "typed nudge b", "typed nudge c", "typed nudge d",
		"typed /clear", "typed nudge e",
	}, typed)
	for _, id := range []string{"a", "b", "c", "d"} {
		require.Equal(t, PhaseNudge, h.results[id].Phase, "phase of %s", id)
		require.False(t, h.results[id].Reset)
	}
	require.True(t, h.results["e"].Reset)
	var told []string
	for _, p := range h.pushes {
		told = append(told, p.Title)
	}
	require.Contains(t, told, "intentq: secretary was reset")
}

// Issue 36, /stop: while the agent's hooks say it works, the stop update presses the CLI's stop
// key once (never two Escapes), the screen confirms the turn ended, and what waited is typed
// then; an idle agent, or one without a stop key, is left alone and the person is told why.
func TestStopInterruptsTheRunningTurnOnce(t *testing.T) {
	h := newSessionHarness(t)
	h.busyTill, h.escapeStops = time.Hour, true
	cfg := hookSession()
	cfg.StopKeys = []string{"Escape"}
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	h.send(time.Second, SignalDeliver, message("1"))
	var stopped, again StopResult
	stop := func(at time.Duration, into *StopResult) {
		h.env.RegisterDelayedCallback(func() {
			h.env.UpdateWorkflow(UpdateStop, "", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { t.Errorf("stop rejected: %v", err) },
				OnAccept: func() {},
				OnComplete: func(r interface{}, err error) {
					require.NoError(t, err)
					*into = r.(StopResult)
				},
			})
		}, at)
	}
	h.send(1500*time.Millisecond, SignalHookWords, said(AgentEvent{Event: EventPreToolUse, Detail: "Bash"}))
	stop(2*time.Second, &stopped)
	stop(20*time.Second, &again)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: cfg})
	require.True(t, stopped.Stopped, "%+v", stopped)
	require.False(t, again.Stopped)
	require.Contains(t, again.Why, "not working")
	require.Equal(t, []string{message("1").Text}, h.typed, "what waited goes in once the turn ended")
	var keys []string
	for _, e := range h.events {
		if strings.HasPrefix(e, "keys ") {
			keys = append(keys, e)
		}
	}
	require.Equal(t, []string{"keys Escape"}, keys, "one Escape, nothing else")

	// A CLI without a stop key: nothing is pressed.
	h = newSessionHarness(t)
	h.send(0, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit}))
	var none StopResult
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateStop, "", &testsuite.TestUpdateCallback{OnReject: func(error) {}, OnAccept: func() {},
			OnComplete: func(r interface{}, err error) { none = r.(StopResult) }})
	}, time.Second)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: SessionVersion, Config: hookSession()})
	require.False(t, none.Stopped)
	require.Contains(t, none.Why, "cannot be stopped from the phone")
	require.Empty(t, h.events)
}

// Issue 37: a CLI whose first hook comes with its first prompt (Copilot CLI, Codex:
// SessionStartAtPrompt) has its first typed block confirmed by its UserPromptSubmit receipt,
// though no hook has reported yet: until the receipt the message is not delivered, so the
// SessionStart hook that runs with that prompt names it only. A session of the build before
// (version 6) counted it delivered once typed.
func TestFirstPromptAwaitsItsReceipt(t *testing.T) {
	for _, version := range []int{SessionVersion, sessionReceiptAtFirstPrompt - 1} {
		t.Run(fmt.Sprint("version ", version), func(t *testing.T) {
			h := newSessionHarness(t)
			cfg := claudeSession()
			cfg.CLI, cfg.SessionStartAtPrompt = "copilot", true
			start := h.env.Now()
			h.send(time.Second, SignalDeliver, message("1"))
			h.send(4*time.Second, SignalHookWords, said(AgentEvent{Event: EventSessionStart, Detail: "startup"}))
			h.send(4500*time.Millisecond, SignalHookWords, said(AgentEvent{Event: EventUserPromptSubmit, Receipt: []string{"intent/42/1"}}))
			if version < sessionReceiptAtFirstPrompt {
				h.env.OnGetVersion("receipt-at-first-prompt", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
			h.env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Version: version, Config: cfg})
			require.True(t, h.results["intent/42/1#1"].OK)
			at := h.resultAt["intent/42/1#1"].Sub(start)
			if version == SessionVersion {
				require.GreaterOrEqual(t, at, 4500*time.Millisecond, "delivered before the agent's receipt")
			} else {
				require.Less(t, at, 4*time.Second, "the build before counted it delivered once typed")
			}
		})
	}
}
