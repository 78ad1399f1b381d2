package service

// Approvals from the phone (issue 36): a press of a card's button, or /allow and /deny sent as
// a reply to the card, decides the approval the card belongs to (workflows.UpdateDecide). The
// card's data names only its approval's random token; the approval is found among the sessions'
// approvals with that token, this chat's sessions first.

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

// answerCard answers /allow (/allow session) and /deny sent as a reply to a card: the card's
// own button of that choice is pressed.
func (c control) answerCard(ctx context.Context, chat string, cmd telegram.Command) string {
	choice := workflows.ChoiceDeny
	if cmd.Name == "allow" {
		choice = workflows.ChoiceAllow
		if strings.EqualFold(cmd.Args, "session") {
			choice = workflows.ChoiceAllowSession
		}
	}
	data, ok := cmd.ReplyButtons[workflows.ButtonLabel(choice)]
	m := pressDataRE.FindStringSubmatch(data)
	switch {
	case len(cmd.ReplyButtons) == 0:
		return "Reply /" + cmd.Name + " to the approval card you answer."
	case !ok || m == nil:
		return "That card does not offer " + strings.ToLower(workflows.ButtonLabel(choice)) + "."
	}
	return c.decide(ctx, chat, m[1], workflows.ApprovalAnswer{Data: data, UserID: cmd.UserID, User: cmd.User, Chat: chat, Via: "typed"})
}

// decide gives the approval with token the answer, and says what came of it.
func (c control) decide(ctx context.Context, chat, token string, a workflows.ApprovalAnswer) string {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, session := range c.sessionsOf(chat) {
		id := workflows.ApprovalWorkflowID(session, token)
		desc, err := c.client.DescribeWorkflowExecution(ctx, id, "")
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			continue
		case err != nil:
			c.log.Warn("approval: describe", zap.String("approval", id), zap.Error(err))
			return "Could not reach intentq right now; answer at the terminal, or press again in a minute."
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
				return "Already answered: " + res.Words() + "."
			case err == nil:
				c.log.Info("approval answered from the phone", zap.String("approval", id), zap.String("choice", res.Choice),
					zap.Int64("user", a.UserID), zap.String("via", a.Via))
				return res.Words() + "."
			case errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeUnknownAnswer:
				return "Not taken: " + appErr.Message() + "."
			case !errors.As(err, &notFound):
				c.log.Warn("approval: decide", zap.String("approval", id), zap.Error(err))
				return "Could not reach intentq right now; answer at the terminal, or press again in a minute."
			}
		}
		var res workflows.ApprovalResult
		if err := c.client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
			return "This approval has ended; nothing changed."
		}
		return "Already answered: " + res.Words() + "."
	}
	return "This card is not one of intentq's approvals here; nothing changed."
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
