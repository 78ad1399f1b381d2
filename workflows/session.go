package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/policy"
)

// SessionWorkflowName is the registered name of SessionWorkflow.
const SessionWorkflowName = "Session"

// SessionConfig is what a session workflow needs to reach its agent, from the worker's config.
type SessionConfig struct {
	Name       string `json:"name"`
	TmuxTarget string `json:"tmux_target"`
	CLI        string `json:"cli"`
	Mode       string `json:"mode"`
	// Human marks the person's own (coordinator) pane: nothing is ever typed into it.
	Human bool `json:"human,omitempty"`
	// BusyPatterns are the CLI's busy markers (SPEC N2); Busy how the pane is watched for them.
	BusyPatterns []string `json:"busy_patterns,omitempty"`
	policy.Busy
	NewlineKey string `json:"newline_key,omitempty"`
	// Push says the session pushes reminders and alerts to ntfy. The topic itself is never in a
	// workflow's input (whoever knows it reads the pushes): the worker's ntfy activity looks it
	// up by the session's name. NtfyTopic is only read from sessions of older builds.
	Push      bool   `json:"push,omitempty"`
	NtfyTopic string `json:"ntfy_topic,omitempty"`
	// TmuxTarget and HistoryPath are shown (starter sessions, the Web UI); the activities act on
	// the pane and file the worker's own config names for the session, never on these.
	// HistoryPath empty: no history is kept.
	HistoryPath string `json:"history_path,omitempty"`
	// Escalation is the session's ladder (SPEC N1) and Reset how its CLI is reset (SPEC N4).
	Escalation EscalationPolicy `json:"escalation"`
	Reset      ResetSteps       `json:"reset"`
	// InputLines is how many bottom lines hold the CLI's input line; when set, a delivery is
	// confirmed after Enter and typed again (after ClearKeys) if it is still there.
	InputLines int      `json:"input_lines,omitempty"`
	ClearKeys  []string `json:"clear_keys,omitempty"`
	// DialogPatterns and InputPrompt guard typing (never into a dialog or a person's draft);
	// InterruptKeys are the CLI's phase-2 keys (default InterruptKeys).
	DialogPatterns []string `json:"dialog_patterns,omitempty"`
	InputPrompt    string   `json:"input_prompt,omitempty"`
	InterruptKeys  []string `json:"interrupt_keys,omitempty"`
	// StopKeys interrupt the agent's running turn (the phone's /stop); empty: not possible.
	StopKeys []string `json:"stop_keys,omitempty"`
	// InputPlaceholders are what the CLI shows on an empty input line: no draft.
	InputPlaceholders []string `json:"input_placeholders,omitempty"`
	// SessionStartAtPrompt: the CLI's SessionStart for a reset comes with the next prompt (Codex
	// after /new), not at the reset command.
	SessionStartAtPrompt bool `json:"session_start_at_prompt,omitempty"`
	// Host is the machine whose worker serves the session: its runs continue as new on that
	// host's task queue (SessionHostQueue). Empty from workers before hosts.
	Host string `json:"host,omitempty"`
}

// pushes reports whether the session pushes to ntfy.
func (c SessionConfig) pushes() bool { return c.Push || c.NtfyTopic != "" }

// SessionInput starts (or continues) a session workflow.
type SessionInput struct {
	// Version is the session workflow's behaviour this run was started with (SessionVersion
	// for runs started by this code): a current run follows every rule without a marker; an
	// older one (at SessionFloor or above) continues as new at its next quiet point.
	Version int           `json:"version,omitempty"`
	Config  SessionConfig `json:"config"`
	// Ledger is the exactly-once bookkeeping: the queue, what hooks hold, what the agent has.
	Ledger
	// Delivered and Failed count outcomes over the session's life.
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
	// MaxHistoryEvents triggers continue-as-new; 0 means the default.
	MaxHistoryEvents int `json:"max_history_events,omitempty"`
	// LastResetAt is when the CLI was last reset, for the cooldown; it survives restarts.
	LastResetAt *time.Time `json:"last_reset_at,omitempty"`
	// LastEscalationAt is when the session last interrupted or reset its CLI (one step per
	// Escalation.StepEvery).
	LastEscalationAt *time.Time `json:"last_escalation_at,omitempty"`
	// HeldAlerts wait for the next push (at most one per policy.AlertEvery, and ntfy may be
	// down); LastAlertAt is when the last push was tried.
	HeldAlerts  []Alert    `json:"held_alerts,omitempty"`
	LastAlertAt *time.Time `json:"last_alert_at,omitempty"`
	// Agent is what the agent's hooks last reported; nil while no hook has.
	Agent *AgentState `json:"agent,omitempty"`
	// LastHookRemindAt is when a hook last reminded the agent of old intents.
	LastHookRemindAt *time.Time `json:"last_hook_remind_at,omitempty"`
	// HeldPushes are reminder pushes intents handed over for the next digest.
	HeldPushes []PushRequest `json:"held_pushes,omitempty"`
	// Approval is the approval whose permission the agent asked for last, until its next hook
	// says the terminal went on (issue 36).
	Approval string `json:"approval,omitempty"`
	// ResetAskedAt is when the person was last asked to allow a reset the session's config does
	// not opt into; ResetAllowed: they allowed one (/reset), for the next reminder that calls
	// for it (issue 35).
	ResetAskedAt *time.Time `json:"reset_asked_at,omitempty"`
	ResetAllowed bool       `json:"reset_allowed,omitempty"`
	// Inbox is what is unread in the agent's inbox, as the inbox last told; nil while the
	// session does not know (sessionInboxAtDesk).
	Inbox *InboxUnread `json:"inbox,omitempty"`
}

// SessionView is the session query's answer.
type SessionView struct {
	Config    SessionConfig `json:"config"`
	Queued    []string      `json:"queued"`
	Delivered int64         `json:"delivered"`
	Failed    int64         `json:"failed"`
	// BusySince is set while the pane shows the CLI at work and deliveries wait; WaitsFor says
	// why ("no agent: ..." when no agent runs there).
	BusySince *time.Time `json:"busy_since,omitempty"`
	WaitsFor  string     `json:"waits_for,omitempty"`
	// Agent is the agent's state as its hooks report it; Offered the messages a hook took and
	// has not committed yet.
	Agent   *AgentState `json:"agent,omitempty"`
	Offered []string    `json:"offered,omitempty"`
}

// ErrTypeHumanPane refuses a delivery to a pane marked as the person's own.
const ErrTypeHumanPane = "HumanPane"

// ErrTypeNotSubmitted marks a delivery whose text stayed on the CLI's input line after Enter,
// every attempt: the CLI took Enter as a newline.
const ErrTypeNotSubmitted = "NotSubmitted"

// ErrTypeUnknownKind refuses a delivery of a kind this build does not know.
const ErrTypeUnknownKind = "UnknownKind"

// SessionVersion is the session workflow's current behaviour. Runs started with it record no
// version marker. A run started before (Version below it) continues as new at its next quiet
// point after a worker's configure signal, so every open session reaches the current version
// within one worker start (docs/design.md, "Changes to running workflows").
const SessionVersion = 13

// SessionFloor is the oldest session run this code replays: every rule of an older version has
// gone with its branch (docs/design.md). `starter doctor` names any open run below it.
const SessionFloor = 2

// sessionDropsEmptyOffers (SessionVersion 4, change ID drop-empty-expired-offers): an offer
// whose lease ended with nothing left to queue again (a late commit had emptied it) is dropped;
// before, it stayed open and its lease timer fired at once, again and again. Version 4 also
// moves every open run, at its continue-as-new at the next worker start, to its host's task
// queue (issue 38).
const sessionDropsEmptyOffers = 4

// sessionOwedNeverEscalates (SessionVersion 5, change ID owed-answers-nudge-only): a reminder of
// a message the agent's own hooks confirmed it has (typed with its receipt, or handed over by a
// hook) is only a nudge: an agent that has a message and has not answered is not stuck, and an
// interrupt or a reset (which wipes its context) is for deliveries the agent did not take in.
// A reset that does happen is told to the person. Before, every overdue reminder climbed the
// ladder by its age.
const sessionOwedNeverEscalates = 5

// sessionReminderNotBesideMessage (SessionVersion 5, change ID reminder-not-beside-message): a
// hook's take and the standing offer hand over a message without its own reminder beside it
// (the reminder is answered with the message), as a typed block already did; before, the agent
// read both together ("new" and "unanswered" for one message).
const sessionReminderNotBesideMessage = 5

// sessionReconcileKeepsOtherWaits (SessionVersion 5, change ID reconcile-keeps-other-waits): a
// late commit reconciling a request that another open offer took again answers only what waits
// for that request; before, it answered all that waited for the other offer, a message no hook
// had printed among them (Ledger.reconcile).
const sessionReconcileKeepsOtherWaits = 5

// sessionOfferSkipsLateCommits (SessionVersion 5, change ID offer-skips-late-commits): the
// standing offer leaves out what a late commit printed that a take has read and the main loop
// has not settled yet, as a take already did; before, the desk could hand it to a hook again.
const sessionOfferSkipsLateCommits = 5

// sessionEnqueueByTypedKey (SessionVersion 5, change ID enqueue-by-typed-key): a request joins
// the queue unless what it hands over (the message, or the reminder's tick) already waits;
// before, any request of the same intent and kind kept it out, and a later reminder tick held
// by the standing offer was lost from the queue and typed again later (Ledger.enqueue).
const sessionEnqueueByTypedKey = 5

// sessionWorkingPushesWait (SessionVersion 5, change ID working-pushes-wait): a reminder push of
// a message the agent has taken in and works on in a live turn waits in the digest until the
// turn ends or the message is policy.WorkingPushAfter old: the phone hears about what the agent
// is not doing, not one push per message of a busy turn. Its intent asks again meanwhile (a
// long queue, no failure); the held push is replaced, so it goes out once.
const sessionWorkingPushesWait = 5

// sessionNoAgentWaits (SessionVersion 5, change ID no-agent-waits): a pane that is gone (tmux
// closed it with the agent) waits like a shell in front instead of failing each delivery, and
// an agent whose SessionEnd hook says it ended is not typed into; the person is told at once,
// once, with the fix (starter run-agent), and the messages reach the agent once it is back.
// Before, each delivery failed against the missing pane and pushed its error.
const sessionNoAgentWaits = 5

// sessionFollowsApprovals (SessionVersion 6, change ID follows-approvals): a permission the
// agent asks for (its PermissionRequest hook, with the approval's ID) leaves the agent waiting
// for the person, and the agent's next hook is passed on to that approval, so the card learns
// that the terminal answered first (issue 36).
const sessionFollowsApprovals = 6

// sessionRelooksAfterStop (SessionVersion 6, change ID relook-after-stop): when the agent's hooks
// say its turn ended and its screen still shows it at work (the CLI draws its end a moment
// later), the pane is looked at again after policy.ScreenRelook, for policy.ScreenLag, instead
// of after the busy wait (issue 35).
const sessionRelooksAfterStop = 6

// sessionResetAsks (SessionVersion 6, change ID reset-asks-the-person): a reminder of a message
// the agent did not take in, old enough for the reset phase, in a session whose config does not
// opt into resets: the person is asked (a push: reply /reset), at most once per reset cooldown,
// and their yes allows one reset (issue 35). Before, the phase fell back to an interrupt.
const sessionResetAsks = 6

// sessionReceiptAtFirstPrompt (SessionVersion 7, change ID receipt-at-first-prompt): a CLI whose
// first hook comes with the first prompt (SessionStartAtPrompt: Codex, Copilot CLI) gets its
// typed block confirmed by its UserPromptSubmit receipt even before any of its hooks reported:
// until then the message is not delivered, so the SessionStart hook that runs with that prompt
// lists it by name only, never its text a second time (issue 37: Copilot CLI 1.0.102 showed the
// model a fresh TUI's first message twice). Before, the block counted as delivered once typed.
const sessionReceiptAtFirstPrompt = 7

// sessionRelooksUnconfirmed (SessionVersion 8, change ID relook-unconfirmed-submit): a typing no
// hook's receipt confirms (an agent whose hooks have not reported: started by hand and not bound
// yet, or a CLI without hooks) whose input line reads free of the text right after Enter is read
// once more a second later before it counts as submitted: a loaded Claude Code drew a paste after
// it had taken the Enter, and the message stayed on its input line, never sent, counted
// delivered.
const sessionRelooksUnconfirmed = 8

// sessionClearsUnsubmitted (SessionVersion 9, change ID clear-unsubmitted): a typing whose text
// stayed on the CLI's input line after every try (the CLI took Enter as a newline) clears the
// line before the delivery is reported failed, as it does between tries. Before, the text was
// left there: the next delivery read it as the person's draft and waited, and the person was
// told a draft held their messages back.
const sessionClearsUnsubmitted = 9

// sessionQuickStepsLocal (SessionVersion 10, change ID quick-steps-local): the history's append
// before a typing and the results to the intents after it run as local activities, in the
// workflow task that asks for them (the session's task runs on its host's worker, where the
// history file is). Before, each was an activity task, and the workflow task after it waited
// 1.1 s at p50 (3 s at worst) to start under a 50-session burst: the typing's 14-16 s were such
// steps (issue 38).
const sessionQuickStepsLocal = 10

// sessionResultsAfterBacklog (SessionVersion 11, change ID results-after-backlog): the results
// of a typed block wait while more waits in the queue to be typed, and go to their intents
// together once the queue is empty, another result is told, the session resets its agent's CLI
// or continues as new, or the first of them is policy.ResultsHold old. Under a
// 50-session burst each result costs an intent a signal and a workflow task while the door still
// records: the sessions type first and tell afterwards (issue 38). Before, each block's results
// were told at once.
const sessionResultsAfterBacklog = 11

// sessionStopHoldsTyping (SessionVersion 12, change ID stop-holds-typing): while the person's
// /stop looks at the screen, the session types nothing and offers nothing to its desk, and the
// stop key is pressed only if the turn the stop was asked for still runs: the agent's hooks say
// it works, in the same turn (its state and Since unchanged), and nothing was typed meanwhile. A
// second /stop while one is under way presses nothing. Before, the stop checked once at its
// start: on a loaded machine its look took seconds, the turn ended meanwhile, the session typed
// the next message, and the key interrupted the turn that message had just started.
const sessionStopHoldsTyping = 12

// sessionHandlersFinish (SessionVersion 12, change ID handlers-finish-before-continue-as-new):
// the session continues as new only once its running update handlers (a /stop pressing its key)
// have finished, and takes what arrived meanwhile into the next run's input. Before, an update in
// flight at continue-as-new was dropped, its caller never answered.
const sessionHandlersFinish = 12

// sessionTypingHoldsRepeats (SessionVersion 3, change ID typing-holds-repeats): a request for
// what the typed block in flight carries (its intent's wait timed out meanwhile) waits for the
// block and is answered by it; before, it was queued, and a hook could take and print it while
// the block was typed (found by the ledger checker).
const sessionTypingHoldsRepeats = 3

// follows reports whether a run started at version follows the rule added at since under
// changeID: a run at since or above always does and records nothing; an older one asks
// GetVersion (a run that recorded the rule's marker follows it, one that replays history from
// before the rule does not). The rules are asked in the same order on every run.
func follows(ctx workflow.Context, version, since int, changeID string) bool {
	return version >= since || workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, 1) == 1
}

// SessionWorkflow is the one place that types into a session's pane: it performs deliveries one
// at a time in arrival order, so two intents never interleave keystrokes, however many workers
// run. It never types into a busy pane: the delivery at the head of the queue waits, keeping its
// place, until the pane is idle. It lives as long as the session and continues as new to keep
// its history bounded.
func SessionWorkflow(ctx workflow.Context, in SessionInput) error {
	s := &session{SessionInput: in,
		deliverCh:   workflow.GetSignalChannel(ctx, SignalDeliver),
		deliverAll:  workflow.GetSignalChannel(ctx, SignalDeliverAll),
		configureCh: workflow.GetSignalChannel(ctx, SignalConfigure),
		takenCh:     workflow.GetSignalChannel(ctx, SignalTaken),
		wordsCh:     workflow.GetSignalChannel(ctx, SignalHookWords),
		withdrawCh:  workflow.GetSignalChannel(ctx, SignalWithdraw),
		replaceCh:   workflow.GetSignalChannel(ctx, SignalReplace),
		wakeCh:      workflow.NewBufferedChannel(ctx, 1),
	}
	if err := workflow.SetQueryHandler(ctx, QuerySession, s.view); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryHasMessage, s.hasMessage); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryHad, s.had); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateTake, s.take, workflow.UpdateHandlerOptions{Validator: s.validateTake}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateStop, s.stopTurn); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateAllowReset, s.allowReset); err != nil {
		return err
	}
	s.Ledger.queueWhileTyping = !follows(ctx, s.Version, sessionTypingHoldsRepeats, "typing-holds-repeats")
	s.Ledger.keepEmptyExpired = !follows(ctx, s.Version, sessionDropsEmptyOffers, "drop-empty-expired-offers")
	s.owedNudgeOnly = follows(ctx, s.Version, sessionOwedNeverEscalates, "owed-answers-nudge-only")
	s.workingPushesWait = follows(ctx, s.Version, sessionWorkingPushesWait, "working-pushes-wait")
	s.Ledger.reconcileTakesAllWaiting = !follows(ctx, s.Version, sessionReconcileKeepsOtherWaits, "reconcile-keeps-other-waits")
	s.Ledger.offerLateCommitted = !follows(ctx, s.Version, sessionOfferSkipsLateCommits, "offer-skips-late-commits")
	s.Ledger.sameByIntent = !follows(ctx, s.Version, sessionEnqueueByTypedKey, "enqueue-by-typed-key")
	s.Ledger.reminderBesideMessage = !follows(ctx, s.Version, sessionReminderNotBesideMessage, "reminder-not-beside-message")
	s.noAgentWaits = follows(ctx, s.Version, sessionNoAgentWaits, "no-agent-waits")
	s.followsApprovals = follows(ctx, s.Version, sessionFollowsApprovals, "follows-approvals")
	s.relooksAfterStop = follows(ctx, s.Version, sessionRelooksAfterStop, "relook-after-stop")
	s.resetAsks = follows(ctx, s.Version, sessionResetAsks, "reset-asks-the-person")
	s.inboxAtDesk = follows(ctx, s.Version, sessionInboxAtDesk, "inbox-at-desk")
	s.relooksUnconfirmed = follows(ctx, s.Version, sessionRelooksUnconfirmed, "relook-unconfirmed-submit")
	s.clearsUnsubmitted = follows(ctx, s.Version, sessionClearsUnsubmitted, "clear-unsubmitted")
	s.quickStepsLocal = follows(ctx, s.Version, sessionQuickStepsLocal, "quick-steps-local")
	s.resultsAfterBacklog = follows(ctx, s.Version, sessionResultsAfterBacklog, "results-after-backlog")
	s.stopHoldsTyping = follows(ctx, s.Version, sessionStopHoldsTyping, "stop-holds-typing")
	s.handlersFinish = follows(ctx, s.Version, sessionHandlersFinish, "handlers-finish-before-continue-as-new")
	s.editsAtDesk = follows(ctx, s.Version, sessionEditsAtDesk, "edits-reach-the-desk")
	s.representsAfterReset = follows(ctx, s.Version, sessionRepresentsAfterReset, "represent-after-reset")
	s.signalsReadOnce = follows(ctx, s.Version, sessionSignalsReadOnce, "signals-read-once")
	s.Ledger.editsReservedAtOnce = !s.editsAtDesk
	if s.editsAtDesk {
		workflow.Go(ctx, s.listenTakeBacks)
	}
	if s.signalsReadOnce {
		workflow.Go(ctx, s.listenSignals)
	}
	if s.inboxAtDesk {
		workflow.Go(ctx, s.followInbox)
	}
	workflow.Go(ctx, s.takeAlerts)
	workflow.Go(ctx, s.pushAlerts)
	workflow.Go(ctx, s.takePushes)
	workflow.Go(ctx, s.pushDigests)
	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled: every timer fires at once, so the loop must end here
		}
		s.drain(ctx)
		s.settleOffers(ctx)
		s.answerRepeats(ctx)
		if len(s.Queue) > 0 && s.mayContinueAsNew(ctx) {
			// A queue that never empties (a long burst) must not grow the history to its
			// limit; it is carried over once it fits well within a payload (a 10,000-message
			// burst drains to that size with the history far below Temporal's limits).
			return s.continueAsNew(ctx)
		}
		if len(s.Queue) == 0 {
			s.tellHeld(ctx)
			if s.mayContinueAsNew(ctx) {
				return s.continueAsNew(ctx)
			}
			s.waitForSignal(ctx, s.leaseTimer(ctx))
			continue
		}
		req := s.Queue[0]
		if req.Kind == KindContext {
			if err := s.commitToHistory(workflow.WithActivityOptions(ctx, tmuxActivityOptions), req); err != nil {
				workflow.GetLogger(ctx).Warn("context not committed", "session", s.Config.Name, "request", req.ID, "error", err)
			}
			s.dequeue(req.ID)
			continue
		}
		if typedKind(req.Kind) && !s.inContext(req) {
			s.deliverBatch(ctx)
			continue
		}
		// Typed already: answered again, nothing typed. A kind this build does not know (from
		// a newer door) fails rather than wait forever.
		var err error
		if !typedKind(req.Kind) {
			err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s: unknown delivery kind %q", s.Config.Name, req.Kind), ErrTypeUnknownKind, nil)
		}
		result := s.result(ctx, req, err)
		if result.OK {
			s.remember(req)
		}
		s.dequeue(req.ID)
		count(ctx, metricDeliveries, map[string]string{"session": s.Config.Name, "kind": req.Kind, "ok": fmt.Sprint(result.OK)}, 1)
		if result.OK {
			s.Delivered++
		} else {
			s.Failed++
		}
		// The intent may have ended meanwhile; then nobody needs the answer.
		if err := workflow.SignalExternalWorkflow(ctx, req.ReplyTo, "", SignalDeliveryResult, result).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Info("delivery result not taken", "session", s.Config.Name, "request", req.ID, "error", err)
		}
	}
}

// session is the running state of SessionWorkflow.
type session struct {
	SessionInput
	// upgrade: a worker's configure signal reached a run older than SessionVersion; it continues
	// as new at its next quiet point.
	upgrade bool
	// configures counts the configure signals this run took.
	configures  int
	deliverCh   workflow.ReceiveChannel
	deliverAll  workflow.ReceiveChannel
	configureCh workflow.ReceiveChannel
	// wordsCh carries everything the agent's hooks say (the one hook protocol), from the desk
	// or from a hook with no desk answering; takenCh only drains the commits of hooks of the
	// build before (the taken signal), for one release. wakeCh wakes the main loop after a
	// take (an update, which no selector sees).
	wordsCh workflow.ReceiveChannel
	takenCh workflow.ReceiveChannel
	wakeCh  workflow.Channel
	// withdrawCh carries the intents the person took back (WithdrawRequest); restand: the
	// standing offer names one of them and must be taken back from the desk.
	withdrawCh workflow.ReceiveChannel
	restand    bool
	// replaceCh carries edited texts (ReplaceRequest); staleStanding: the standing offer holds
	// a text since edited, and is offered again.
	replaceCh     workflow.ReceiveChannel
	staleStanding bool
	// editsAtDesk: edits and take-backs are read by a listener of their own, which takes a
	// stale standing offer back from the desk at once (sessionEditsAtDesk); publishing: a
	// standing offer is on its way to the desk (no withdrawal may overtake it).
	editsAtDesk bool
	publishing  bool
	// representsAfterReset: what a hook printed into a context that a reset then ended, its
	// commit coming after, is presented again in the new one (sessionRepresentsAfterReset).
	representsAfterReset bool
	// signalsReadOnce: each signal channel is read by one listener, and the waits await its
	// notes (sessionSignalsReadOnce); news: a signal was applied since the last wait or drain;
	// agentNews: one from the agent's side (a hook's words or commit, a wake).
	signalsReadOnce bool
	news, agentNews bool
	// owedNudgeOnly: reminders of what the agent has only nudge, and a reset is told
	// (sessionOwedNeverEscalates).
	owedNudgeOnly bool
	// noAgentWaits: a pane that is gone or an agent that ended waits like a shell in front, told
	// once (sessionNoAgentWaits); toldNoAgent: the person was told, not again until an agent
	// is back.
	noAgentWaits bool
	toldNoAgent  bool
	// followsApprovals: the agent's hooks after a permission request are passed on to its
	// approval (sessionFollowsApprovals).
	followsApprovals bool
	// relooksAfterStop: a screen still drawn busy right after the hooks said the turn ended is
	// looked at again soon (sessionRelooksAfterStop).
	relooksAfterStop bool
	// resetAsks: a reset the config does not opt into is asked of the person (sessionResetAsks).
	resetAsks bool
	// inboxAtDesk: the session follows what is unread in its agent's inbox and hands it to its
	// desk (sessionInboxAtDesk).
	inboxAtDesk bool
	// relooksUnconfirmed: a typing no receipt confirms is read once more before it counts as
	// submitted (sessionRelooksUnconfirmed).
	relooksUnconfirmed bool
	// clearsUnsubmitted: a text left on the input line after the last try is cleared
	// (sessionClearsUnsubmitted).
	clearsUnsubmitted bool
	// quickStepsLocal: the history's append and the results to the intents run as local
	// activities (sessionQuickStepsLocal).
	quickStepsLocal bool
	// resultsAfterBacklog: a typed block's results wait while more waits to be typed
	// (sessionResultsAfterBacklog); heldReqs are those requests, heldResults their results
	// (side by side), heldSince when the first was held.
	resultsAfterBacklog bool
	heldReqs            []DeliveryRequest
	heldResults         []DeliveryResult
	heldSince           time.Time
	// deliveredAt is when this run counted each message delivered, by intent (QueryHad).
	deliveredAt map[string]time.Time
	// stopHoldsTyping: nothing is typed or offered while a /stop is under way, and its key goes
	// only to the turn it was asked for (sessionStopHoldsTyping); stopping: a stop is under way;
	// typings counts the blocks this run began to type.
	stopHoldsTyping bool
	stopping        bool
	typings         int
	// handlersFinish: running update handlers finish before the run continues as new
	// (sessionHandlersFinish).
	handlersFinish bool
	// busyWhy is why the delivery at the head waits (the view's WaitsFor).
	busyWhy string
	// workingPushesWait: reminder pushes of what the agent works on wait
	// (sessionWorkingPushesWait).
	workingPushesWait bool
	// deskOff: this run found no desk.
	deskOff     bool
	busySince   *time.Time
	busyAlerted bool
	// receipts are intents named by the agent's submitted prompts, not yet matched.
	receipts []string
	// sessionStarts counts the agent's SessionStart reports (a reset is confirmed by one);
	// resetStarts, when set, is the count before a reset that the SessionStart of the next typed
	// prompt is to confirm (SessionStartAtPrompt).
	sessionStarts int
	resetStarts   *int
	// pushing: a digest push is out and its intents not yet answered (no continue-as-new then,
	// or it would go out twice); pushingN is how many of HeldPushes it carries.
	pushing  bool
	pushingN int
	// gatherSince is when the first push held for the next digest arrived (zero after a
	// continue-as-new: the carried pushes have waited long enough).
	gatherSince time.Time
	// tells counts this run's tellResults (their signals' request IDs).
	tells int
}

// maxReceipts bounds session.receipts (a prompt a person typed may name an intent too).
const maxReceipts = 100

func (s *session) view() (SessionView, error) {
	v := SessionView{Config: s.Config, Delivered: s.Delivered, Failed: s.Failed, BusySince: s.busySince, WaitsFor: s.busyWhy, Agent: s.Agent}
	for _, r := range s.Queue {
		v.Queued = append(v.Queued, r.ID)
	}
	for _, o := range s.Offers {
		for _, r := range o.Requests {
			v.Offered = append(v.Offered, r.ID)
		}
	}
	return v, nil
}

// drain takes every signal that has arrived without blocking, and reports whether there was one.
func (s *session) drain(ctx workflow.Context) (took bool) {
	if s.signalsReadOnce {
		took, s.news = s.news, false // the listener read and applied them (signals.go)
		return took
	}
	for {
		var r ReplaceRequest
		if !s.replaceCh.ReceiveAsync(&r) {
			break
		}
		s.edited(ctx, r)
		took = true
	}
	for {
		var r WithdrawRequest
		if !s.withdrawCh.ReceiveAsync(&r) {
			break
		}
		s.takenBack(ctx, r)
		took = true
	}
	for {
		var raw json.RawMessage
		if !s.configureCh.ReceiveAsync(&raw) {
			break
		}
		s.configure(ctx, raw)
		took = true
	}
	for {
		var req DeliveryRequest
		if !s.deliverCh.ReceiveAsync(&req) {
			break
		}
		s.Admit(req)
		took = true
	}
	for {
		var reqs []DeliveryRequest
		if !s.deliverAll.ReceiveAsync(&reqs) {
			break
		}
		s.admitAll(reqs)
		took = true
	}
	for {
		var t TakenRequest
		if !s.takenCh.ReceiveAsync(&t) {
			break
		}
		s.Committed(t.Key)
		took = true
	}
	for {
		var w HookWords
		if !s.wordsCh.ReceiveAsync(&w) {
			break
		}
		s.hear(ctx, w)
		took = true
	}
	for s.wakeCh.ReceiveAsync(nil) {
	}
	return took
}

// mayContinueAsNew reports whether the history is long enough to continue as new, and the state
// can be handed on: no digest push out (it would go out twice) and a queue that fits a payload.
func (s *session) mayContinueAsNew(ctx workflow.Context) bool {
	return !s.pushing && (s.upgrade || s.historyTooLong(ctx)) && s.queueBytes() <= policy.MaxCarriedQueueBytes
}

// continueAsNew hands the session's state to a new run. Every signal that arrived meanwhile is
// taken first (and the commits among them settled), also the pushes and alerts the desks have
// not picked up, and the running update handlers finish (sessionHandlersFinish): the new run's
// input is fixed here, and what is left unread or unanswered would be lost.
func (s *session) continueAsNew(ctx workflow.Context) error {
	for {
		took := s.drain(ctx)
		// Commits a take read early (lateCommitted) are settled too: s.commits is not carried.
		if s.drainDesks(ctx) || s.drainInbox(ctx) || took || len(s.commits) > 0 {
			s.settleOffers(ctx)
			continue
		}
		if len(s.Ledger.repeats) > 0 {
			s.answerRepeats(ctx)
			continue
		}
		if len(s.heldReqs) > 0 {
			s.tellHeld(ctx) // not carried: the next run starts with none
			continue
		}
		if s.signalsReadOnce && !s.quiet() {
			// The listener reads what is left (it runs once this coroutine waits).
			if err := workflow.Await(ctx, s.quiet); err != nil {
				return err
			}
			continue
		}
		if s.handlersFinish && !workflow.AllHandlersFinished(ctx) {
			// An update under way (a /stop pressing its key) is answered by this run; what
			// arrived meanwhile is taken, as above, before the next run's input is fixed.
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			continue
		}
		// The next run takes its host's task queue (a session from before hosts, or started on
		// the worker's task queue, moves there).
		queue := SessionTaskQueue(workflow.GetInfo(ctx).TaskQueueName)
		if s.Config.Host != "" {
			queue = SessionHostQueue(queue, s.Config.Host)
		}
		ctx = workflow.WithWorkflowTaskQueue(ctx, queue)
		next := s.SessionInput
		next.Version = SessionVersion // the new run follows every rule without markers
		return workflow.NewContinueAsNewError(ctx, SessionWorkflowName, next)
	}
}

// drainDesks takes the pushes and alerts that arrived and that the desks' goroutines have not
// taken yet.
func (s *session) drainDesks(ctx workflow.Context) (took bool) {
	pushes, alerts := workflow.GetSignalChannel(ctx, SignalRemindPush), workflow.GetSignalChannel(ctx, SignalAlert)
	sent := workflow.GetSignalChannel(ctx, SignalPushSent)
	for {
		var r PushRequest
		if !pushes.ReceiveAsync(&r) {
			break
		}
		s.holdPush(ctx, r)
		took = true
	}
	for {
		var p PushSent
		if !sent.ReceiveAsync(&p) {
			break
		}
		s.dropPush(ctx, p)
		took = true
	}
	for {
		var a Alert
		if !alerts.ReceiveAsync(&a) {
			break
		}
		s.HeldAlerts = append(s.HeldAlerts, a)
		took = true
	}
	return took
}

// waitForSignal blocks until a signal arrives or timer (if any) fires, taking the signal. It
// reports whether the agent's hooks said something (a report, a take, a commit).
func (s *session) waitForSignal(ctx workflow.Context, timer workflow.Future) (agent bool) {
	if s.signalsReadOnce {
		return s.awaitNews(ctx, timer)
	}
	s.selectSignal(ctx, timer, &agent)
	return agent
}

// selectSignal reads one signal (or the wake channel), or waits for timer, and applies it; agent
// is set when it came from the agent's side (a hook's words or commit, a wake).
func (s *session) selectSignal(ctx workflow.Context, timer workflow.Future, agent *bool) {
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(s.deliverCh, func(c workflow.ReceiveChannel, _ bool) {
		var req DeliveryRequest
		c.Receive(ctx, &req)
		s.Admit(req)
	})
	sel.AddReceive(s.deliverAll, func(c workflow.ReceiveChannel, _ bool) {
		var reqs []DeliveryRequest
		c.Receive(ctx, &reqs)
		s.admitAll(reqs)
	})
	sel.AddReceive(s.configureCh, func(c workflow.ReceiveChannel, _ bool) {
		var raw json.RawMessage
		c.Receive(ctx, &raw)
		s.configure(ctx, raw)
	})
	sel.AddReceive(s.takenCh, func(c workflow.ReceiveChannel, _ bool) {
		var t TakenRequest
		c.Receive(ctx, &t)
		s.Committed(t.Key)
		*agent = true
	})
	sel.AddReceive(s.wordsCh, func(c workflow.ReceiveChannel, _ bool) {
		var w HookWords
		c.Receive(ctx, &w)
		s.hear(ctx, w)
		*agent = true
	})
	if !s.editsAtDesk { // else listenTakeBacks reads them
		s.receiveTakeBacks(ctx, sel, s.replace, s.withdraw)
	}
	sel.AddReceive(s.wakeCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		*agent = true
	})
	if timer != nil {
		sel.AddFuture(timer, func(workflow.Future) {})
	}
	sel.Select(ctx)
}

func (s *SessionInput) historyTooLong(ctx workflow.Context) bool {
	return historyTooLong(ctx, policy.Or(s.MaxHistoryEvents, policy.MaxHistoryEvents))
}

// hasMessage reports whether the agent has intent's message: in its context (typed, or committed
// by a hook), in a hook's hands (taken, its commit not in yet), or in the block being typed. A
// person's edit or take-back asks it (issue 38): an intent hears of its delivery only when the
// session tells it, which under a burst is after the session's backlog is typed.
func (s *session) hasMessage(intent string) (bool, error) {
	return s.Ledger.hasMessage(intent), nil
}

// replace puts an edited text in place of a waiting message (Ledger.Replace); a standing offer
// that holds the old text is offered again.
func (s *session) replace(ctx workflow.Context, r ReplaceRequest) {
	replaced, standing := s.Replace(r.Intent, r.Text)
	if standing {
		s.staleStanding, s.restand = true, true
	}
	workflow.GetLogger(ctx).Info("edited by the person", "session", s.Config.Name, "intent", r.Intent, "replaced", replaced)
}

// withdraw takes back an intent the person ignored or cancelled (Ledger.Withdraw).
func (s *session) withdraw(ctx workflow.Context, r WithdrawRequest) {
	standing := s.Withdraw(r.Intent)
	// A standing offer that names it is taken back from the desk at once (the wait wakes).
	s.restand = s.restand || standing
	workflow.GetLogger(ctx).Info("taken back by the person", "session", s.Config.Name, "intent", r.Intent, "standing", standing)
}

// result is the answer to req after err.
func (s *session) result(ctx workflow.Context, req DeliveryRequest, err error) DeliveryResult {
	res := DeliveryResult{ID: req.ID, Kind: req.Kind, OK: err == nil, At: workflow.Now(ctx)}
	if err != nil {
		res.Error = err.Error()
		if appErr, ok := asApplicationError(err); ok {
			res.ErrorType = appErr.Type()
		}
	}
	return res
}

// configure takes the worker's config for the session (the configure signal). It replaces the
// config: a field the new one leaves empty is empty (human: false again, no ntfy topic, fewer
// patterns).
func (s *session) configure(ctx workflow.Context, raw json.RawMessage) {
	// A worker started: a run older than SessionVersion moves to it at its next quiet point.
	// The marker is one per configure this run took: a version is fixed per change ID and run,
	// and the configures this run took under the code before (replayed without a marker) must
	// not fix the answer for the ones to come.
	s.configures++
	if s.Version < SessionVersion && !s.upgrade &&
		workflow.GetVersion(ctx, fmt.Sprintf("upgrade-at-configure-%d", s.configures), workflow.DefaultVersion, 1) == 1 {
		s.upgrade = true
	}
	var c SessionConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		workflow.GetLogger(ctx).Error("configure signal not understood; config kept", "session", s.Config.Name, "error", err)
		return
	}
	s.Config = c
}
