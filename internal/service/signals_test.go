package service_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/encryption"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

// Issue 26: a session answers a block's intents with one SignalAll activity instead of a
// SignalExternalWorkflow (and a workflow task) each. On a real server: every running target
// gets its signal once however often the activity is retried (the request IDs), a target that
// does not run is passed over, and the result decodes as the intent reads it.
func TestSignalAllOnceEachDespiteRetries(t *testing.T) {
	t.Run("plain", func(t *testing.T) { signalAllOnce(t, testenv.Config(t)) })
	// With payload encryption on, a signal's result is encrypted like every payload the SDK
	// writes, and the intents' strict converter reads it.
	t.Run("encrypted", func(t *testing.T) {
		cfg := testenv.Config(t)
		cfg.Temporal.Encryption.Mode = config.EncryptionOn
		cfg.Temporal.Encryption.KeyFile = filepath.Join(t.TempDir(), "encryption.keys")
		if _, err := encryption.AppendKey(cfg.Temporal.Encryption.KeyFile); err != nil {
			t.Fatal(err)
		}
		signalAllOnce(t, cfg)
	})
}

func signalAllOnce(t *testing.T, cfg *config.Config) {
	svc, _ := startService(t, cfg)
	c := svc.Client()
	ctx := context.Background()
	// Targets nobody runs (no worker polls their queue): their histories show what arrived.
	targets := []string{"signals-test/1", "signals-test/2", "signals-test/3"}
	for _, id := range targets {
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "signals-test-nobody"}, "Nobody"); err != nil {
			t.Fatal(err)
		}
	}
	req := activities.SignalAllRequest{Signal: workflows.SignalDeliveryResult, Key: "run-1/delivery-result/0"}
	for i, id := range append(targets, "signals-test/never-started") {
		arg, err := json.Marshal(workflows.DeliveryResult{ID: id + "#1", Kind: workflows.KindMessage, OK: true, Via: "typed", Phase: i})
		if err != nil {
			t.Fatal(err)
		}
		req.Targets = append(req.Targets, activities.SignalTarget{WorkflowID: id, Arg: arg})
	}
	signals := &activities.Signals{Client: c, Namespace: cfg.Temporal.Namespace}
	for range 3 { // the first run and two retries
		if err := signals.SignalAll(ctx, req); err != nil {
			t.Fatalf("SignalAll: %v", err)
		}
	}
	// A new key (the next block) is a new signal. Two results for one intent in one request (its
	// message and a reminder answered by one typing) both arrive, once each, however often the
	// activity is retried; before, they shared a request ID and the server dropped the second.
	req.Key = "run-1/delivery-result/1"
	second := req.Targets[0]
	arg, err := json.Marshal(workflows.DeliveryResult{ID: targets[0] + "#r1", Kind: workflows.KindReminder, OK: true, Via: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	second.Arg = arg
	req.Targets = []activities.SignalTarget{req.Targets[0], second}
	for range 2 {
		if err := signals.SignalAll(ctx, req); err != nil {
			t.Fatalf("SignalAll: %v", err)
		}
	}
	for i, id := range targets {
		var got []workflows.DeliveryResult
		for _, e := range historyEvents(t, c, id) {
			a := e.GetWorkflowExecutionSignaledEventAttributes()
			if a == nil {
				continue
			}
			if a.GetSignalName() != workflows.SignalDeliveryResult {
				t.Fatalf("%s: signal %q", id, a.GetSignalName())
			}
			if cfg.EncryptionOn() && string(a.GetInput().GetPayloads()[0].GetMetadata()["encoding"]) != encryption.Encoding {
				t.Fatalf("%s: the result is stored unencrypted", id)
			}
			var res workflows.DeliveryResult
			if err := tclient.Payloads().FromPayloads(a.GetInput(), &res); err != nil {
				t.Fatalf("%s: result does not decode: %v", id, err)
			}
			got = append(got, res)
		}
		want := 1
		if i == 0 {
			want = 3 // sent at once: in any order
			if n := slices.IndexFunc(got, func(r workflows.DeliveryResult) bool { return r.ID == id+"#r1" }); n < 0 || n == 0 {
				t.Fatalf("%s: the second result of one request: %+v", id, got)
			}
			got = slices.DeleteFunc(got, func(r workflows.DeliveryResult) bool { return r.ID == id+"#r1" })
			want = 2
		}
		if len(got) != want {
			t.Fatalf("%s got %d signals, want %d: %+v", id, len(got), want, got)
		}
		if got[0].ID != id+"#1" || !got[0].OK || got[0].Via != "typed" || got[0].Phase != i {
			t.Fatalf("%s got %+v", id, got[0])
		}
	}
}
