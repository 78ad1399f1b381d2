package workflows

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/intentq/intentq/internal/base/encryption"
)

// TestReplayRecordedHistories replays histories recorded from a real server (see writeHistory
// in service/intents_test.go) against the current workflow code: a change that would break
// running intents or sessions fails here. Regenerate after an intended change with
// `WRITE_REPLAY_HISTORY=1 go test -run 'TestI2|TestI6' ./internal/service/`, and keep the old files while
// runs recorded that way may be open: until the floor passes them (docs/design.md, "Changes to
// running workflows").
func TestReplayRecordedHistories(t *testing.T) {
	replayAll(t, worker.NewWorkflowReplayer())
}

// Histories recorded before payload encryption was turned on replay with it on: the codec
// passes payloads it did not encrypt through (issue 13).
func TestReplayRecordedHistoriesWithEncryption(t *testing.T) {
	_, line, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := encryption.ParseKeyring(strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: encryption.DataConverter(k)})
	if err != nil {
		t.Fatal(err)
	}
	replayAll(t, r)
}

func replayAll(t *testing.T, r worker.WorkflowReplayer) {
	t.Helper()
	r.RegisterWorkflowWithOptions(IntentWorkflow, workflow.RegisterOptions{Name: IntentWorkflowName})
	r.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: SessionWorkflowName})
	r.RegisterWorkflowWithOptions(HeadlessSessionWorkflow, workflow.RegisterOptions{Name: HeadlessWorkflowName})
	r.RegisterWorkflowWithOptions(ApprovalWorkflow, workflow.RegisterOptions{Name: ApprovalWorkflowName})
	r.RegisterWorkflowWithOptions(InboxWorkflow, workflow.RegisterOptions{Name: InboxWorkflowName})
	for _, file := range []string{
		// Recorded at version 2 by the build before the floor rose to 2 (every older rule's
		// branch gone): runs at the floor replay across that upgrade, and across version 3's
		// rule (typing-holds-repeats), which they decide by its marker.
		"testdata/intent_reminded_v14.json", "testdata/session_reminders_v14.json",
		"testdata/intent_delivered_closed_v14.json", "testdata/session_v14.json",
		// The upgrade step: a run at the floor (version 2, as the build before started them)
		// takes a worker's configure signal and continues as new at SessionVersion (9 when
		// recorded; the replay does not read the new run's input), on its
		// host's task queue. Regenerate with
		// WRITE_REPLAY_HISTORY=1 go test -run TestSessionUpgradesToTheVersionFloorAtConfigure
		// ./internal/service/.
		"testdata/session_upgrade.json",
		// Started at SessionVersion 4 and IntentVersion 2 (the build before issue 35): they
		// replay across version 5's rule (owed-answers-nudge-only) and the intent's version 3
		// (take-back-ignored), which they decide by their markers.
		"testdata/intent_reminded_v4.json", "testdata/session_reminders_v4.json",
		"testdata/intent_delivered_closed_v4.json", "testdata/session_v4.json",
		// Started at SessionVersion 5 (the build before approvals): they replay across version
		// 6's rule (follows-approvals), which they decide by its marker.
		"testdata/session_v5.json", "testdata/session_reminders_v5.json", "testdata/session_taken_back_v5.json",
		// Started at SessionVersion 6 (the build before issue 37's receipt at the first prompt):
		// they replay across version 7's rule (receipt-at-first-prompt).
		"testdata/session_v6.json", "testdata/session_reminders_v6.json", "testdata/session_taken_back_v6.json",
		"testdata/session_approval_v6.json",
		// Started at IntentVersion 3 (the build before issue 38's reminder push while a host is
		// down): they replay across version 4's rule (push-when-host-down).
		"testdata/intent_reminded_v3.json", "testdata/intent_delivered_closed_v3.json", "testdata/intent_taken_back_v3.json",
		// Started at IntentVersion 4 (the build before an intent that pushed while its host was
		// down told its session): they replay across version 5's rule (withdraw-held-push).
		"testdata/intent_reminded_intent4.json", "testdata/intent_delivered_closed_intent4.json", "testdata/intent_taken_back_intent4.json",
		// Started at SessionVersion 7 (the build before a session told its desk what is unread
		// in its agent's inbox): they replay across version 8's rule (inbox-at-desk).
		"testdata/session_v7.json", "testdata/session_reminders_v7.json", "testdata/session_taken_back_v7.json",
		"testdata/session_approval_v7.json",
		// Started at SessionVersion 8 (the build before a typing that failed for good cleared
		// its text from the input line): they replay across version 9's rule (clear-unsubmitted).
		"testdata/session_v8.json", "testdata/session_reminders_v8.json", "testdata/session_taken_back_v8.json",
		"testdata/session_approval_v8.json", "testdata/session_inbox_v8.json",
		// Started at SessionVersion 9 (the build before a typing's quick steps ran as local
		// activities): they replay across version 10's rule (quick-steps-local).
		"testdata/session_v9.json", "testdata/session_reminders_v9.json", "testdata/session_taken_back_v9.json",
		"testdata/session_approval_v9.json", "testdata/session_inbox_v9.json",
		// Started at SessionVersion 10 (the build before a typed block's results waited for the
		// backlog): they replay across version 11's rule (results-after-backlog).
		"testdata/session_v10.json", "testdata/session_reminders_v10.json", "testdata/session_taken_back_v10.json",
		"testdata/session_approval_v10.json", "testdata/session_inbox_v10.json",
		// Started at SessionVersion 11 (the build before a /stop held the typing while it looked
		// and running update handlers finished before continue-as-new): they replay across
		// version 12's rules (stop-holds-typing, handlers-finish-before-continue-as-new).
		"testdata/session_v11.json", "testdata/session_reminders_v11.json", "testdata/session_taken_back_v11.json",
		"testdata/session_approval_v11.json", "testdata/session_inbox_v11.json",
		// Started at SessionVersion 12 (the build before edits and take-backs reached the desk
		// at once and a reset's straddling commits were presented again), and an approval from
		// before the phone's answer waited for its hook to hand it over: they replay across
		// version 13's rules (edits-reach-the-desk, represent-after-reset) and the approval's
		// confirmed-answers, which they decide by their markers.
		"testdata/session_v12.json", "testdata/session_reminders_v12.json", "testdata/session_taken_back_v12.json",
		"testdata/session_approval_v12.json", "testdata/session_inbox_v12.json", "testdata/approval_v12.json",
		// Current: sessions and intents started at SessionVersion (13) and IntentVersion (5), no
		// markers.
		"testdata/intent_reminded.json", "testdata/session_reminders.json",
		"testdata/intent_delivered_closed.json", "testdata/session.json",
		// Current, issues 35 and 36: a message the person took back (/cancel) while its pane was
		// gone, and its session (the no-agent wait, the withdraw signal, a /stop refused).
		// Regenerate with WRITE_REPLAY_HISTORY=1 go test -run TestControlCommandsAtTheDoor
		// ./internal/service/.
		"testdata/intent_taken_back.json", "testdata/session_taken_back.json",
		// Current, issue 36: an approval answered from the phone (forged and foreign presses
		// refused, a second press answered), and its session, which passed the agent's next hook
		// on to it. Regenerate with WRITE_REPLAY_HISTORY=1 go test -run TestApprovalAtTheDoor
		// ./internal/service/.
		"testdata/approval.json", "testdata/session_approval.json",
		// Current, issue 38: an inbox that tells its agent's session what is unread, the session
		// that asks it and tells its desk, and an inbox run from before it told sessions, which
		// continued as new when asked. Regenerate with WRITE_REPLAY_HISTORY=1 go test -run
		// TestS1StopHookNamesUnreadInboxAsTheDeskKnows ./internal/service/.
		"testdata/inbox.json", "testdata/session_inbox.json", "testdata/inbox_upgrade.json",
		// A headless session (a success, a retried network error, a denied tool) from when runs
		// carried the program and arguments (issue 23), then one whose runs name the session.
		// Regenerate with WRITE_HEADLESS_HISTORY=$PWD/workflows/testdata/headless.json
		// go test -run TestHeadlessRunsFromWorkerConfig ./internal/service/.
		"testdata/headless_v1.json", "testdata/headless.json",
	} {
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
			t.Errorf("replay %s: %v", file, err)
		}
	}
}
