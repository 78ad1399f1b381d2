package workflows

// Reminders of a pending intent go out on two channels, each on its own schedule (SPEC I6): the
// agent's pane (through the session) and the person's phone (ntfy). A channel that fails is
// tried again after RetryAfter on its own, without repeating the other: an ntfy outage never
// retypes the pane reminder, and a missing pane never repeats a push.

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/redact"
)

// pushes reports whether this intent's reminders go to ntfy too.
func (w *intent) pushes() bool { return w.in.Policy.Push || w.in.Policy.NtfyTopic != "" }

// nextPushAt is the push schedule: FirstAfter after receipt, then RepeatEvery after the last
// push that reached ntfy; RetryAfter after a failed one.
func (w *intent) nextPushAt() time.Time {
	return w.nextAt(w.st.PushFailures, w.st.LastPushAttemptAt, w.st.LastPushedAt)
}

// remindChannels sends the parts of a reminder that are due: the pane reminder (through the
// session) and the push, in parallel. Reminders and LastRemindedAt count reminders that reached
// the agent; Pushes and LastPushedAt those that reached the phone.
func (w *intent) remindChannels(ctx workflow.Context, now time.Time, pane, push, asked bool) {
	snippet := redact.Snippet(w.in.Text, w.in.Policy.SnippetChars)
	var pushed workflow.Future
	switch {
	case push:
		pushed = w.pushBySession(ctx, snippet)
	}
	var paneErr error
	if pane {
		// Late by more than RetryAfter and not asked for: intentq was down or behind, so this
		// reminder is a backlog and must not escalate.
		backlog := !asked && now.Sub(w.nextReminderAt()) > w.in.Policy.RetryAfter
		paneErr = w.askSession(ctx, KindReminder, ReminderText(w.in.MessageID, w.in.ChatID, snippet), false, backlog)
	}
	var pushErr error
	if pushed != nil {
		pushErr = pushed.Get(ctx, nil)
	}
	done := workflow.Now(ctx)
	if pane {
		w.st.LastAttemptAt = &done
		if paneErr != nil {
			count(ctx, metricRemindersFailed, map[string]string{"session": w.in.Session}, 1)
			w.st.FailedAttempts++
			w.failed(ctx, w.st.FailedAttempts, "remind", wrapErr("tmux", paneErr))
		} else {
			count(ctx, metricRemindersSent, map[string]string{"session": w.in.Session}, 1)
			w.st.Reminders++
			w.st.LastRemindedAt = &done
			w.st.FailedAttempts = 0
			if w.st.SeenAt == nil {
				w.st.SeenAt = &done
			}
		}
	}
	if push {
		w.st.LastPushAttemptAt = &done
		if pushErr != nil {
			w.st.PushFailures++
			w.failed(ctx, w.st.PushFailures, "push", wrapErr("ntfy", pushErr))
		} else {
			w.st.Pushes++
			w.st.LastPushedAt = &done
			w.st.PushFailures = 0
		}
	}
	if w.st.FailedAttempts == 0 && w.st.PushFailures == 0 {
		w.st.LastError = ""
	}
	if err := w.publishMemo(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("publish memo", "intent", w.id, "error", err)
	}
}

// reminderPush is the push of a reminder: IDs and the masked snippet (SPEC I7).
func (w *intent) reminderPush(snippet string) activities.Push {
	return DigestPush(w.in.Session, w.in.Policy.NtfyTopic, []PushRequest{w.pushRequest(snippet)})
}

// escalationSince is when the agent got the message, from which a reminder escalates: when
// Claude Code received it itself (plugin door, at receipt), else when it was typed or its first
// reminder reached the pane; zero while the agent has not seen it.
func (w *intent) escalationSince() time.Time {
	switch {
	case !w.in.Deliver:
		return w.in.ReceivedAt
	case w.st.SeenAt != nil:
		return *w.st.SeenAt
	default:
		return time.Time{}
	}
}

// alertBySession hands a failure alert to the session, which pushes at most one alert per
// tick and keeps what ntfy did not take for a summary once it answers again. It reports
// whether the session took it.
func (w *intent) alertBySession(ctx workflow.Context, a Alert) bool {
	err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(w.in.Session), "", SignalAlert, a).Get(ctx, nil)
	return err == nil
}

// react puts emoji on the person's Telegram message (nothing when emoji is empty); the future
// may be left alone: a reaction never holds up the intent.
func (w *intent) react(ctx workflow.Context, emoji string) workflow.Future {
	if emoji == "" {
		f, set := workflow.NewFuture(ctx)
		set.Set(nil, nil)
		return f
	}
	return workflow.ExecuteActivity(withTelegram(ctx, telegramReactOptions), activities.TelegramReactName,
		activities.ReactRequest{ChatID: w.in.ChatID, MessageID: w.in.MessageID, Emoji: emoji})
}

// stage moves the reaction on the person's message to the stage emoji says (issue 36), fire and
// forget; the reaction of the intent's end waits for it, so it lands last.
func (w *intent) stage(ctx workflow.Context, emoji string) {
	if emoji == "" {
		return
	}
	prev := w.staged
	f, set := workflow.NewFuture(ctx)
	w.staged = f
	workflow.Go(ctx, func(ctx workflow.Context) {
		if prev != nil {
			_ = prev.Get(ctx, nil)
		}
		set.Set(nil, w.react(ctx, emoji).Get(ctx, nil))
	})
}
