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
// `WRITE_REPLAY_HISTORY=1 go test -run TestI2 ./internal/service/`, and keep old files for workflows
// that may still be running (use workflow.GetVersion for such changes).
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
	for _, file := range []string{
		// Before busy-aware delivery, history commit, escalation and confirmation (GetVersion).
		"testdata/intent_delivered_closed_v1.json", "testdata/session_v1.json",
		// Before separate reminder channels, per-session escalation, the alert desk and
		// messages typed once (GetVersion).
		"testdata/intent_delivered_closed_v2.json", "testdata/session_v2.json",
		// Before the ack reaction, the reply hint and the reply update.
		"testdata/intent_delivered_closed_v3.json", "testdata/session_v3.json",
		// Before the agent's hooks (state, take and commit), reminder ticks and typing keys.
		"testdata/intent_delivered_closed_v4.json", "testdata/session_v4.json",
		// Before typing together, digest pushes, deliver-all and capped takes (issue 15).
		"testdata/intent_delivered_closed_v5.json", "testdata/session_v5.json",
		// An intent with markers for each of those rules, before the version travelled in its
		// input; a session from before blocks kept strict arrival order.
		"testdata/intent_delivered_closed_v6.json", "testdata/session_v6.json",
		// Reminded (pushes failed, retried, sent) and closed: a session from before a digest
		// gathered from its first push's arrival; then current.
		"testdata/intent_reminded_v7.json", "testdata/session_reminders_v7.json",
		// Before activities took session names (issue 23), configure replaced the config, the
		// exactly-once rules (issue 24) and digests counting only the lines they carry.
		"testdata/intent_reminded_v8.json", "testdata/session_reminders_v8.json",
		"testdata/intent_delivered_closed_v8.json", "testdata/session_v8.json",
		// Before a hook's offer was committed at once, the session's answers went out by one
		// activity (SignalAll) and a take saw commits the main loop had not read (issue 26).
		"testdata/intent_reminded_v9.json", "testdata/session_reminders_v9.json",
		"testdata/intent_delivered_closed_v9.json", "testdata/session_v9.json",
		// Before standing offers at the hook desk (issue 26).
		"testdata/intent_reminded_v10.json", "testdata/session_reminders_v10.json",
		"testdata/intent_delivered_closed_v10.json", "testdata/session_v10.json",
		// Before offers-fixed (issue 32): standing offers by a local activity, desk commits read
		// by the main loop only, a compaction's session start taken for idle.
		"testdata/intent_delivered_closed_v11.json", "testdata/session_v11.json",
		// Before the version floor (issue 34): sessions and intents decided each rule by its
		// marker (an intent's keep-passed-results too).
		"testdata/intent_reminded_v12.json", "testdata/session_reminders_v12.json",
		"testdata/intent_delivered_closed_v12.json", "testdata/session_v12.json",
		// The upgrade step: a session run from before the floor (no version in its input) takes
		// a worker's configure signal and continues as new at SessionVersion. Regenerate with
		// WRITE_REPLAY_HISTORY=1 go test -run TestSessionUpgradesToTheVersionFloorAtConfigure
		// ./internal/service/.
		"testdata/session_upgrade.json",
		// Sessions started at version 1, before confirm-patiently (no markers but for the
		// rules added since).
		"testdata/session_v13.json", "testdata/session_reminders_v13.json",
		// Current: sessions and intents started at SessionVersion and IntentVersion, no markers.
		"testdata/intent_reminded.json", "testdata/session_reminders.json",
		"testdata/intent_delivered_closed.json", "testdata/session.json",
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
