package workflows

// Approvals (issue 36): when an agent asks for a permission, its CLI's PermissionRequest hook
// starts an approval, a workflow `approval/<session>/<token>` that shows the person a card in
// the session's chat (what the agent will do, buttons to answer) and waits for the first answer:
// a press or a typed answer from the phone (the decide update), the terminal (the session passes
// on the agent's next hook, the hook tells of its own end), or the hook's wait running out. The
// hook waits for the workflow's result and hands the decision to the CLI in its own format;
// nothing is ever typed into a dialog. The card is edited to say how it ended, so no button on
// the phone is left that does nothing.
//
// The card and the record name the answer the CLI acted on. Claude Code's terminal can
// answer while the hook waits, and then ignores what the hook prints, so a phone's answer counts
// only once the hook has handed it over (confirmedAnswers): the hook takes it (UpdateTakeAnswer),
// checks the prompt is still open and it was not ended, and confirms (UpdateHandedOver) before
// it prints; an end of the hook, a closed prompt or the terminal's next hook first make it the
// terminal's answer.

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/hookapi"
	"github.com/intentq/intentq/internal/redact"
)

// Names of the approval protocol.
const (
	// ApprovalWorkflowName is the approval workflow's registered name.
	ApprovalWorkflowName = "Approval"
	// ApprovalIDPrefix starts every approval's workflow ID.
	ApprovalIDPrefix = "approval/"
	// UpdateDecide answers an approval from the phone (ApprovalAnswer, ApprovalResult).
	UpdateDecide = "decide"
	// SignalFollowed tells an approval what happened at the terminal (ApprovalFollow).
	SignalFollowed = "followed"
	// UpdateTakeAnswer is how the permission hook waits for the phone's answer (an
	// ApprovalResult with Pending) or the approval's end.
	UpdateTakeAnswer = "take-answer"
	// UpdateHandedOver is the hook's word that it hands the phone's answer to a CLI still
	// waiting; it returns the approval's result: the hook prints the answer only if that is it.
	UpdateHandedOver = "handed-over"
	// EventPermissionRequest is the hook event of a permission the agent asks for; its Detail
	// is the approval's workflow ID.
	EventPermissionRequest = hookapi.EventPermissionRequest
	// EventHookEnded: the permission hook was ended by its CLI (Claude Code ends it when the
	// person answers No at the terminal).
	EventHookEnded = "hook-ended"
	// EventPromptClosed: the CLI's prompt had closed when the phone's answer reached the hook
	// (Claude Code's session registry no longer showed it waiting): the terminal answered.
	EventPromptClosed = "prompt-closed"
)

// handOverWait is how long a phone's answer waits for the hook to hand it over; then it counts
// for nothing and the terminal decides. It is under the door's 15 s for a press's answer.
const handOverWait = 10 * time.Second

// confirmedAnswersChange versions the confirmed hand-over (running approvals keep the first word).
const confirmedAnswersChange = "confirmed-answers"

// The person's choices.
const (
	ChoiceAllow        = "allow"
	ChoiceAllowSession = "allow-session"
	ChoiceDeny         = "deny"
)

// How an approval ended.
const (
	// OutcomeDecided: the person answered from the phone.
	OutcomeDecided = "decided"
	// OutcomeTerminal: the terminal answered first.
	OutcomeTerminal = "terminal"
	// OutcomeExpired: the hook stopped waiting; the terminal asks now.
	OutcomeExpired = "expired"
)

// ApprovalWorkflowID is `approval/<session>/<token>`: the session asking, and the token of its
// card (random, unguessable: what the card's buttons send back).
func ApprovalWorkflowID(session, token string) string {
	return ApprovalIDPrefix + session + "/" + token
}

// ApprovalMemo is what an approval's memo (MemoKey) says of it, for `starter approvals` and
// the Web UI's list: the session, the tool and a snippet of the action.
type ApprovalMemo struct {
	Session string    `json:"session"`
	Chat    string    `json:"chat,omitempty"`
	Tool    string    `json:"tool"`
	Action  string    `json:"action"`
	AskedAt time.Time `json:"asked_at"`
}

// ApprovalButton is one answer the card offers and the opaque data its button sends.
type ApprovalButton struct {
	Choice string `json:"choice"`
	Data   string `json:"data"`
}

// ApprovalInput is what the hook saw: the permission asked for, and where to ask the person.
type ApprovalInput struct {
	Session string `json:"session"`
	// CLI is the agent's kind (claude, codex, ...).
	CLI string `json:"cli"`
	// Chat is the Telegram chat the card goes to; empty: none (the push only).
	Chat string `json:"chat,omitempty"`
	Tool string `json:"tool"`
	// Action is what the tool will do as the agent gave it (the command, the path), for the
	// push and the memo; Said is the agent's own description of it, shown as such (a prompt
	// injection writes it too).
	Action string `json:"action"`
	Said   string `json:"said,omitempty"`
	// Fields are every field of the tool call but its description, the main one first, for the
	// card (card.go); MoreFields counts those the hook could not carry (the card then takes no
	// answer). An approval asked before issue 61 has none: its card shows Action.
	Fields     []ApprovalField `json:"fields,omitempty"`
	MoreFields int             `json:"more_fields,omitempty"`
	// Grants are what "Allow for this session" gives, one line each as the CLI gets it;
	// Withheld what the CLI offered beside them that the phone does not give, each with why.
	Grants   []string `json:"grants,omitempty"`
	Withheld []string `json:"withheld,omitempty"`
	// Buttons are the answers the phone may give; none: the card says to answer at the terminal.
	Buttons []ApprovalButton `json:"buttons,omitempty"`
	// Wait is how long the hook waits for an answer; AskedAt when it asked.
	Wait    time.Duration `json:"wait"`
	AskedAt time.Time     `json:"asked_at"`
	// Push: the session pushes to the phone (ntfy), at once and every RemindEvery while the
	// approval waits.
	Push        bool          `json:"push,omitempty"`
	RemindEvery time.Duration `json:"remind_every,omitempty"`
	// Confirms: the hook takes the phone's answer (UpdateTakeAnswer) and confirms handing it
	// over (UpdateHandedOver); a hook before it waits for the end alone.
	Confirms bool `json:"confirms,omitempty"`
}

// ApprovalAnswer is an answer from the phone: a press (Data, a button's data) or a typed answer
// (Choice, and Card: the message it replies to, which must be this approval's card), with who
// gave it and where.
type ApprovalAnswer struct {
	Data   string `json:"data,omitempty"`
	Choice string `json:"choice,omitempty"`
	Card   int    `json:"card,omitempty"`
	UserID int64  `json:"user_id"`
	User   string `json:"user,omitempty"`
	Chat   string `json:"chat"`
	// Via is how: "button" or "typed".
	Via string `json:"via"`
}

// ApprovalFollow is what happened at the terminal while the approval waited: the agent's next
// hook (its event and tool), or the permission hook's own end.
type ApprovalFollow struct {
	Event string    `json:"event"`
	Tool  string    `json:"tool,omitempty"`
	At    time.Time `json:"at"`
}

// ApprovalResult is how an approval ended, and the decision the hook hands the CLI.
type ApprovalResult struct {
	Outcome string `json:"outcome"`
	// Choice is the phone's answer (OutcomeDecided).
	Choice string `json:"choice,omitempty"`
	// By, UserID, Chat and Via say who answered and from where; At when.
	By     string    `json:"by,omitempty"`
	UserID int64     `json:"user_id,omitempty"`
	Chat   string    `json:"chat,omitempty"`
	Via    string    `json:"via,omitempty"`
	At     time.Time `json:"at"`
	// Detail says it in words ("allowed at the terminal").
	Detail string `json:"detail"`
	// Already: this answer came after the approval had ended; Detail says how it had.
	Already bool `json:"already,omitempty"`
	// Pending: the phone's answer, not yet handed over (UpdateTakeAnswer).
	Pending bool `json:"pending,omitempty"`
}

// Words is the result as the person reads it on the card and in the answer to a press.
func (r ApprovalResult) Words() string {
	switch r.Outcome {
	case OutcomeDecided:
		return choiceWords[r.Choice] + " from the phone by " + r.By
	case OutcomeTerminal:
		return r.Detail
	}
	return "no answer from the phone in time: " + r.Detail
}

var choiceWords = map[string]string{
	ChoiceAllow:        "Allowed once",
	ChoiceAllowSession: "Allowed for this session",
	ChoiceDeny:         "Denied",
}

// ButtonLabel is a choice's label on the card.
func ButtonLabel(choice string) string {
	switch choice {
	case ChoiceAllow:
		return "Allow once"
	case ChoiceAllowSession:
		return "Allow for this session"
	}
	return "Deny"
}

// ErrTypeUnknownAnswer marks an answer that is none of the card's.
const ErrTypeUnknownAnswer = "UnknownAnswer"

// approvalActivityOptions send and edit the card, and push.
var approvalCardOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 10,
		NonRetryableErrorTypes: []string{activities.ErrTypeTelegramRejected}},
}

// ApprovalWorkflow shows the person the card and waits for the first answer (see the file's
// comment). It returns how the approval ended; the hook reads that as the decision.
func ApprovalWorkflow(ctx workflow.Context, in ApprovalInput) (ApprovalResult, error) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	log := workflow.GetLogger(ctx)
	var result *ApprovalResult
	// card is the message ID of the card once it is sent: a typed answer counts only as a reply
	// to it (issue 61). A card that cannot show everything takes no answer (answerable).
	card := 0
	_, answerable := in.card()
	// confirmed: the phone's answer counts once the hook hands it over; pending is
	// that answer meanwhile.
	confirmed := in.Confirms && workflow.GetVersion(ctx, confirmedAnswersChange, workflow.DefaultVersion, 1) == 1
	var pending *ApprovalResult
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecide, func(ctx workflow.Context, a ApprovalAnswer) (ApprovalResult, error) {
		if result != nil {
			r := *result
			r.Already = true
			return r, nil
		}
		choice := a.Choice
		for _, b := range in.Buttons {
			if a.Data != "" && b.Data == a.Data {
				choice = b.Choice
			}
		}
		answer := &ApprovalResult{Outcome: OutcomeDecided, Choice: choice, By: a.User, UserID: a.UserID, Chat: a.Chat, Via: a.Via, At: workflow.Now(ctx)}
		answer.Detail = answer.Words()
		if !confirmed {
			result = answer
			return *result, nil
		}
		// The first answer is the one the hook hands over; every press is told what counted.
		if pending == nil {
			pending = answer
		}
		if err := workflow.Await(ctx, func() bool { return result != nil }); err != nil {
			return ApprovalResult{}, err
		}
		r := *result
		r.Already = result != answer
		return r, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, a ApprovalAnswer) error {
		if len(in.Buttons) == 0 || !answerable {
			return temporal.NewApplicationError("this card has no answers: answer at the terminal", ErrTypeUnknownAnswer)
		}
		if a.Chat != in.Chat {
			return temporal.NewApplicationError("the card is in another chat", ErrTypeUnknownAnswer)
		}
		if a.Data == "" && (a.Card == 0 || a.Card != card) {
			return temporal.NewApplicationError("that message is not this approval's card: reply to the card itself", ErrTypeUnknownAnswer)
		}
		for _, b := range in.Buttons {
			if a.Data != "" && b.Data == a.Data || a.Data == "" && b.Choice == a.Choice {
				return nil
			}
		}
		return temporal.NewApplicationError("not an answer this card offers", ErrTypeUnknownAnswer)
	}}); err != nil {
		return ApprovalResult{}, err
	}
	if confirmed {
		if err := setHandOverHandlers(ctx, &result, &pending); err != nil {
			return ApprovalResult{}, err
		}
	}

	if in.Chat != "" {
		var sent []int
		req := activities.SendRequest{ChatID: in.Chat, Text: in.CardText(), HTML: true, Key: id + "/card", Session: in.Session, Card: id}
		for _, b := range in.Buttons {
			req.Buttons = append(req.Buttons, activities.Button{Text: ButtonLabel(b.Choice), Data: b.Data})
		}
		if !answerable {
			req.Buttons = nil
		}
		if err := workflow.ExecuteActivity(withTelegram(ctx, approvalCardOptions), activities.TelegramSendName, req).Get(ctx, &sent); err != nil {
			log.Warn("approval card not sent", "approval", id, "session", in.Session, "error", err)
		} else if len(sent) > 0 {
			card = sent[len(sent)-1]
		}
	}
	push := func(title string) {
		if !in.Push {
			return
		}
		p := activities.Push{Session: in.Session, Title: title, Priority: 4, Tags: []string{"lock"},
			Message: fmt.Sprintf("%s: %s. Answer on the card in Telegram, or at the terminal.", in.Tool, redact.Snippet(redact.Reveal(in.Action, 160), 200))}
		if err := workflow.ExecuteActivity(withNtfyOptions(ctx), activities.NtfyPublishName, p).Get(ctx, nil); err != nil {
			log.Warn("approval push not sent", "approval", id, "session", in.Session, "error", err)
		}
	}
	push("intentq: " + in.Session + " asks for your approval")

	followCh := workflow.GetSignalChannel(ctx, SignalFollowed)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var f ApprovalFollow
			followCh.Receive(ctx, &f)
			if result == nil {
				result = &ApprovalResult{Outcome: OutcomeTerminal, At: workflow.Now(ctx), Detail: followedWords(in, f)}
			}
		}
	})
	deadline := in.AskedAt.Add(in.Wait)
	for result == nil {
		now := workflow.Now(ctx)
		if pending != nil {
			if err := awaitHandOver(ctx, &result, pending); err != nil {
				return ApprovalResult{}, err
			}
			continue
		}
		if !now.Before(deadline) {
			result = &ApprovalResult{Outcome: OutcomeExpired, At: now,
				Detail: fmt.Sprintf("intentq stopped waiting after %s; answer at the terminal", in.Wait.Round(time.Second))}
			break
		}
		wait := deadline.Sub(now)
		if in.RemindEvery > 0 && in.RemindEvery < wait {
			wait = in.RemindEvery
		}
		answered, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return result != nil || pending != nil })
		if err != nil {
			return ApprovalResult{}, err
		}
		if !answered && workflow.Now(ctx).Before(deadline) {
			push("intentq: " + in.Session + " still waits for your approval")
		}
	}
	log.Info("approval ended", "approval", id, "session", in.Session, "outcome", result.Outcome, "choice", result.Choice, "via", result.Via)
	if card != 0 {
		err := workflow.ExecuteActivity(withTelegram(ctx, approvalCardOptions), activities.TelegramEditName,
			activities.EditRequest{ChatID: in.Chat, MessageID: card, Text: in.endedCardText(*result), HTML: true}).Get(ctx, nil)
		if err != nil && !errors.Is(err, workflow.ErrCanceled) {
			log.Warn("approval card not edited", "approval", id, "session", in.Session, "error", err)
		}
	}
	if confirmed {
		// Every press and the hook are answered before the approval ends.
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return ApprovalResult{}, err
		}
	}
	return *result, nil
}

// setHandOverHandlers sets the hook's two updates: it takes the phone's answer once
// there is one (or the approval's end), and it confirms handing it over; *result is then that
// answer, unless the terminal's came first, which the hook is told instead.
func setHandOverHandlers(ctx workflow.Context, result, pending **ApprovalResult) error {
	err := workflow.SetUpdateHandler(ctx, UpdateTakeAnswer, func(ctx workflow.Context) (ApprovalResult, error) {
		if err := workflow.Await(ctx, func() bool { return *result != nil || *pending != nil }); err != nil {
			return ApprovalResult{}, err
		}
		if *result != nil {
			return **result, nil
		}
		r := **pending
		r.Pending = true
		return r, nil
	})
	if err != nil {
		return err
	}
	return workflow.SetUpdateHandler(ctx, UpdateHandedOver, func(ctx workflow.Context) (ApprovalResult, error) {
		if *result == nil && *pending == nil {
			return ApprovalResult{}, temporal.NewApplicationError("no answer from the phone to hand over", ErrTypeUnknownAnswer)
		}
		if *result == nil {
			*result = *pending
		}
		return **result, nil
	})
}

// awaitHandOver waits for the hook to hand the phone's answer over (or the terminal to answer)
// for handOverWait from the press; after that the answer reached no one and counts for nothing.
func awaitHandOver(ctx workflow.Context, result **ApprovalResult, pending *ApprovalResult) error {
	left := pending.At.Add(handOverWait).Sub(workflow.Now(ctx))
	if left > 0 {
		ended, err := workflow.AwaitWithTimeout(ctx, left, func() bool { return *result != nil })
		if err != nil || ended {
			return err
		}
	}
	*result = &ApprovalResult{Outcome: OutcomeTerminal, At: workflow.Now(ctx),
		Detail: "the phone's answer did not reach the agent; answer at the terminal"}
	return nil
}

// cardMark heads the card's last line.
func cardMark(r ApprovalResult) string {
	switch {
	case r.Outcome == OutcomeDecided && r.Choice == ChoiceDeny:
		return "❌"
	case r.Outcome == OutcomeDecided:
		return "✅"
	}
	return "⌨️"
}

// followedWords says what the terminal did, from what followed the permission request: the
// tool used (allowed there), the permission hook ended by its CLI (answered No, or the turn
// interrupted), or the agent going on otherwise.
func followedWords(in ApprovalInput, f ApprovalFollow) string {
	switch {
	case f.Event == EventPostToolUse && f.Tool == in.Tool:
		return "allowed at the terminal"
	case f.Event == EventHookEnded:
		return "answered at the terminal (denied, or the turn was interrupted)"
	case f.Event == EventPromptClosed:
		return "answered at the terminal before the phone"
	case f.Event == EventSessionEnd:
		return "the agent ended before an answer"
	}
	return "answered at the terminal"
}
