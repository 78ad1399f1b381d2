package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
)

// answerHeadless runs the message as a prompt on the headless session and sends the answer to
// the chat as a reply; delivered, the intent closes (SPEC P11). A failed run leaves the intent
// pending with the error recorded.
func (w *intent) answerHeadless(ctx workflow.Context) {
	req := PromptRequest{Channel: SourceTelegram, Text: w.in.Text}
	if w.in.Prompt != nil {
		req = *w.in.Prompt
	}
	req.Key, req.ReplyTo = w.id, w.id
	if err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(w.in.Session), "", SignalPrompt, req).Get(ctx, nil); err != nil {
		w.st.LastError = fmt.Sprintf("headless session %s is not running: %v", w.in.Session, err)
		return
	}
	var done PromptRecord
	wait := w.in.Policy.OrphanAfter
	if wait <= 0 {
		wait = 24 * time.Hour
	}
	for done.FinishedAt == nil {
		var rec PromptRecord
		ok, _ := workflow.GetSignalChannel(ctx, SignalPromptDone).ReceiveWithTimeout(ctx, wait, &rec)
		if !ok {
			w.st.LastError = "no answer from the headless session in time"
			return
		}
		if rec.Key == w.id {
			done = rec
		}
	}
	if done.Status != PromptSucceeded {
		w.failed(ctx, 1, "run", errors.New(done.Error))
		return
	}
	actx := withTelegram(ctx, telegramSendOptions)
	if err := workflow.ExecuteActivity(actx, activities.TelegramSendName, activities.SendRequest{ChatID: w.in.ChatID, ReplyTo: w.in.MessageID, Text: done.Result, Key: w.id + "/headless-result"}).Get(ctx, nil); err != nil {
		w.failed(ctx, 1, "answer", err)
		return
	}
	w.transition(ctx, StatusClosed, "answered by "+done.ID)
}
