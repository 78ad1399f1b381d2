package service

// Approvals from the phone (issue 36): a press of a card's button, or /allow and /deny sent as
// a reply to the card, decides the approval the card belongs to (workflows.UpdateDecide). A
// button's data names only its approval's random token; the approval is found among the
// sessions' approvals with that token, this chat's sessions first. A typed answer names the
// message it replies to: intentq's record of the cards it sent tells whose card it is, and
// nothing else does (issue 61).

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/doors/telegram"
	"github.com/intentq/intentq/workflows"
)

// pressDataRE is what a card's button data looks like: the approval's token and the button's
// code, both random.
var pressDataRE = regexp.MustCompile(`^([A-Za-z0-9_-]{16}):[A-Za-z0-9_-]{8}$`)

// Press implements telegram.Control: a card's button pressed.
func (c control) Press(ctx context.Context, p telegram.Press) string {
	m := pressDataRE.FindStringSubmatch(p.Data)
	if m == nil {
		return "That button is not one intentq knows."
	}
	chat := strconv.FormatInt(p.ChatID, 10)
	return c.decide(ctx, chat, m[1], workflows.ApprovalAnswer{Data: p.Data, UserID: p.UserID, User: p.User, Chat: chat, Via: "button"})
}

// answerCard answers /allow (/allow session) and /deny sent as a reply to a card. Only the ID of
// the message it replies to counts, and only when intentq sent that message as an approval's card
// (cardOf): a look-alike posted by someone else, whatever its text and buttons say, answers
// nothing (issue 61). The approval itself checks the message is its card.
func (c control) answerCard(ctx context.Context, chat string, cmd telegram.Command) string {
	choice := workflows.ChoiceDeny
	if cmd.Name == "allow" {
		choice = workflows.ChoiceAllow
		if strings.EqualFold(cmd.Args, "session") {
			choice = workflows.ChoiceAllowSession
		}
	}
	if cmd.ReplyTo == 0 {
		return "Reply /" + cmd.Name + " to the approval card you answer (or press its button)."
	}
	id := c.cardOf(chat, cmd.ReplyTo)
	if !strings.HasPrefix(id, workflows.ApprovalIDPrefix) {
		return "Nothing was answered: that message is not an approval card of intentq. Reply /" + cmd.Name + " to intentq's own card (🔐), or press its button."
	}
	return c.decideID(ctx, id, workflows.ApprovalAnswer{Choice: choice, Card: cmd.ReplyTo, UserID: cmd.UserID, User: cmd.User, Chat: chat, Via: "typed"})
}

// cardOf names the approval whose card intentq sent as message msg of chat, from the record the
// Telegram activities keep in data_dir; "" for any other message.
func (c control) cardOf(chat string, msg int) string {
	return (&activities.Telegram{SentDir: activities.SentDir(c.cfg.DataDir)}).CardOf(chat, msg)
}

// decide gives the approval with token the answer, and says what came of it.
func (c control) decide(ctx context.Context, chat, token string, a workflows.ApprovalAnswer) string {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, session := range c.sessionsOf(chat) {
		id := workflows.ApprovalWorkflowID(session, token)
		if text, found := c.decideIfFound(ctx, id, a); found {
			return text
		}
	}
	return "This card is not one of intentq's approvals here; nothing changed."
}

// decideID gives the approval id the answer, and says what came of it.
func (c control) decideID(ctx context.Context, id string, a workflows.ApprovalAnswer) string {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if text, found := c.decideIfFound(ctx, id, a); found {
		return text
	}
	return "This card's approval is gone; nothing changed. Answer at the terminal."
}

// decideIfFound gives the approval id the answer if there is one (found), and says what came
// of it.
func (c control) decideIfFound(ctx context.Context, id string, a workflows.ApprovalAnswer) (string, bool) {
	desc, err := c.client.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return "", false
	case err != nil:
		c.log.Warn("approval: describe", zap.String("approval", id), zap.Error(err))
		return "Could not reach intentq right now; answer at the terminal, or press again in a minute.", true
	}
	if desc.WorkflowExecutionInfo.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		h, err := c.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.UpdateDecide,
			Args: []any{a}, WaitForStage: client.WorkflowUpdateStageCompleted})
		var res workflows.ApprovalResult
		if err == nil {
			err = h.Get(ctx, &res)
		}
		var appErr *temporal.ApplicationError
		switch {
		case err == nil && res.Already:
			return "Already answered: " + res.Words() + ".", true
		case err == nil:
			c.log.Info("approval answered from the phone", zap.String("approval", id), zap.String("choice", res.Choice),
				zap.Int64("user", a.UserID), zap.String("via", a.Via))
			return res.Words() + ".", true
		case errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeUnknownAnswer:
			return "Not taken: " + appErr.Message() + ".", true
		case !errors.As(err, &notFound):
			c.log.Warn("approval: decide", zap.String("approval", id), zap.Error(err))
			return "Could not reach intentq right now; answer at the terminal, or press again in a minute.", true
		}
	}
	var res workflows.ApprovalResult
	if err := c.client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		return "This approval has ended; nothing changed.", true
	}
	return "Already answered: " + res.Words() + ".", true
}

// sessionsOf are the sessions whose approvals a card in chat may belong to: the chat's own
// first, then every other (a card outlives a change of the chat's mapping).
func (c control) sessionsOf(chat string) []string {
	var first, rest []string
	id, _ := strconv.ParseInt(chat, 10, 64)
	own, _ := c.cfg.SessionFor(chat)
	for _, name := range c.cfg.SessionNames() {
		s := c.cfg.Sessions[name]
		if name == own || slices.Contains(s.Chats, id) {
			first = append(first, name)
		} else {
			rest = append(rest, name)
		}
	}
	return append(first, rest...)
}
