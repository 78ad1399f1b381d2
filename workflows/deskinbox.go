package workflows

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// DeskInboxName is the activity that hands a session's hook desk what is unread in its agent's
// inbox (DeskInboxRequest): a Stop hook reads it there, without a round trip to the server.
const DeskInboxName = "DeskInbox"

// DeskInboxRequest hands the desk what is unread in the inbox of the agent of Session, as the
// session knew it at At (its workflow time): the desk keeps the latest, so an attempt that
// arrives after a later one changes nothing.
type DeskInboxRequest struct {
	Session string      `json:"session"`
	Unread  InboxUnread `json:"unread"`
	At      time.Time   `json:"at"`
}

// NoDeskInbox answers DeskInboxName on a worker without a desk.
func NoDeskInbox(context.Context, DeskInboxRequest) error { return errNoDesk }

// sessionInboxAtDesk (SessionVersion 8, change ID inbox-at-desk): the session follows what is
// unread in its agent's inbox (the inbox tells it after every change; a session that does not
// know asks) and hands it to its desk, so the agent's Stop hook names unread messages without
// asking the server: a Stop hook's query of the inbox waited behind a burst's writes.
const sessionInboxAtDesk = 8

// followInbox learns what is unread in the agent's inbox and hands it to the desk: once at the
// run's start (asking the inbox when the run before did not know), then after every change the
// inbox tells. The signals that arrive while the run continues as new are taken there
// (drainInbox) and carried.
func (s *session) followInbox(ctx workflow.Context) {
	asked := s.Inbox != nil
	told := workflow.GetSignalChannel(ctx, SignalInboxUnread)
	for {
		if !asked && s.Inbox == nil {
			asked = s.askInbox(ctx)
		}
		// A desk that could not be told is told again (it would name what it last knew), and an
		// inbox that could not be asked is asked again, unless the inbox tells something first.
		retry := !asked && s.Inbox == nil
		if s.Inbox != nil && !s.deskOff && !s.tellDesk(ctx) {
			retry = true
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(told, func(c workflow.ReceiveChannel, _ bool) {
			var u InboxUnread
			c.Receive(ctx, &u)
			s.Inbox = &u
			s.drainInbox(ctx) // only the latest counts
		})
		if retry {
			sel.AddFuture(workflow.NewTimer(ctx, deskInboxRetry), func(workflow.Future) {})
		}
		sel.Select(ctx)
		if ctx.Err() != nil {
			return
		}
	}
}

// askInbox asks the agent's inbox to tell what is unread (its answer arrives as a tell); no
// inbox: nothing is unread (the one a send starts tells the session). It reports whether the
// inbox was asked or found missing.
func (s *session) askInbox(ctx workflow.Context) bool {
	err := workflow.SignalExternalWorkflow(ctx, InboxID(s.Config.Name), "", SignalInboxAnnounce, nil).Get(ctx, nil)
	var notFound *temporal.UnknownExternalWorkflowExecutionError
	switch {
	case errors.As(err, &notFound):
		s.Inbox = &InboxUnread{}
	case err != nil:
		workflow.GetLogger(ctx).Warn("the agent's inbox was not asked what is unread; asking again", "session", s.Config.Name, "error", err)
		return false
	}
	return true
}

// deskInboxRetry is how soon a desk that could not be told what is unread is told again.
const deskInboxRetry = 10 * time.Second

// drainInbox takes the inbox's tells that arrived and are not taken yet, keeping the latest
// (followInbox after a tell; and before the run continues as new: its input is fixed then).
func (s *session) drainInbox(ctx workflow.Context) (took bool) {
	if !s.inboxAtDesk {
		return false
	}
	told := workflow.GetSignalChannel(ctx, SignalInboxUnread)
	for {
		var u InboxUnread
		if !told.ReceiveAsync(&u) {
			return took
		}
		s.Inbox, took = &u, true
	}
}

// tellDesk hands the desk what the session knows is unread; it reports whether the desk took
// it. A worker without a desk is not told again (no hook reads it there).
func (s *session) tellDesk(ctx workflow.Context) bool {
	req := DeskInboxRequest{Session: s.Config.Name, Unread: *s.Inbox, At: workflow.Now(ctx)}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, deskPublishOptions), DeskInboxName, req).Get(ctx, nil)
	if appErr, ok := asApplicationError(err); ok && appErr.Type() == ErrTypeNoDesk {
		s.deskOff = true
		return true
	}
	if err != nil {
		workflow.GetLogger(ctx).Warn("the desk was not told what is unread in the agent's inbox; telling it again", "session", s.Config.Name, "error", err)
		return false
	}
	return true
}
