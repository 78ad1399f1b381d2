package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/internal/platform/doctor"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
)

// `doctor --notify` pushes once when checks turn FAIL and once when they recover, never once
// per run; warnings never push; a push ntfy refused is tried again on the next run.
func TestNotifyOnChangeOnly(t *testing.T) {
	ntfy := fakentfy.New()
	defer ntfy.Close()
	pub := &activities.Ntfy{URL: ntfy.URL()}
	state := filepath.Join(t.TempDir(), "doctor", "notify.json")
	run := func(r doctor.Report) int {
		t.Helper()
		sent, err := doctor.Notify(context.Background(), r, pub, "ops", state, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return len(sent)
	}
	ok := doctor.Report{{Name: "worker", OK: true}, {Name: "tmux secretary", Status: doctor.StatusWarn, Detail: "no tmux pane yet"}}
	workerDown := doctor.Report{{Name: "worker", Detail: "no worker polls workflow tasks"}, {Name: "probe", Status: doctor.StatusSkip}}
	alsoServer := doctor.Report{{Name: "worker", Detail: "no worker polls workflow tasks"}, {Name: "temporal", Detail: "connection refused"}}

	if n := run(ok); n != 0 {
		t.Errorf("all fine (a warning): %d pushes", n)
	}
	if n := run(workerDown); n != 1 {
		t.Errorf("worker down: %d pushes, want 1", n)
	}
	for range 3 {
		if n := run(workerDown); n != 0 {
			t.Errorf("still down: %d pushes, want 0", n)
		}
	}
	if n := run(alsoServer); n != 1 || !strings.Contains(ntfy.Messages()[1].Message, "temporal: connection refused") ||
		strings.Contains(ntfy.Messages()[1].Message, "worker") {
		t.Errorf("a second check failing: %d pushes: %+v", n, ntfy.Messages())
	}
	ntfy.FailAlways(502)
	if n := run(ok); n != 0 {
		t.Errorf("recovered with ntfy down: %d pushes", n)
	}
	ntfy.Recover()
	if n := run(ok); n != 1 || !strings.Contains(ntfy.Messages()[2].Message, "temporal") || ntfy.Messages()[2].Title != "intentq: recovered" {
		t.Errorf("recovered once ntfy is back: %d pushes: %+v", n, ntfy.Messages())
	}
	if n := run(ok); n != 0 {
		t.Errorf("still fine: %d pushes", n)
	}
	if m := ntfy.Messages()[0]; m.Topic != "ops" || m.Title != "intentq: 1 check(s) failing" || !strings.Contains(m.Message, "worker: no worker polls") {
		t.Errorf("first push = %+v", m)
	}
}

func TestPollerConflict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "poller.json")
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if r := doctor.PollerConflict(path, now); r.Level() != doctor.StatusWarn {
		t.Errorf("never polled: %+v", r)
	}
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"conflict_since":"2026-11-23T11:50:00Z","last_conflict_at":"2026-11-23T11:59:00Z"}`)
	if r := doctor.PollerConflict(path, now); r.Level() != doctor.StatusFail || !strings.Contains(r.Detail, "409") {
		t.Errorf("conflict: %+v", r)
	}
	write(`{"last_poll_at":"2026-11-23T11:59:30Z"}`)
	if r := doctor.PollerConflict(path, now); !r.OK {
		t.Errorf("alone again: %+v", r)
	}
}
