package service_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/platform/doctor"
	"github.com/intentq/intentq/internal/service"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

// The version floor (issue 34), against the real server: a session run started at a version
// before SessionVersion continues as new when a worker's configure signal reaches it while it
// is quiet (the one marker it records says so), and the new run, started at SessionVersion,
// records no version markers. WRITE_REPLAY_HISTORY=1 saves the old run's history (the upgrade step) for the replay
// tests in package workflows (testdata/session_upgrade.json).
func TestSessionUpgradesToTheVersionFloorAtConfigure(t *testing.T) {
	cfg := testenv.Config(t)
	svc, _ := startService(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := svc.Client()
	id := workflows.SessionWorkflowID("old-run")
	conf := workflows.SessionConfig{Name: "old-run", TmuxTarget: "old-run:0", Push: true}
	// As the build before started sessions: the oldest version this build replays.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: workflows.SessionTaskQueue(cfg.Temporal.TaskQueue)},
		workflows.SessionWorkflowName, workflows.SessionInput{Version: workflows.SessionFloor, Config: conf})
	if err != nil {
		t.Fatal(err)
	}
	oldRun := run.GetRunID()
	events := func(runID string) []*historypb.HistoryEvent { return runHistoryEvents(t, c, id, runID) }
	counter := func(typ enumspb.EventType) func([]*historypb.HistoryEvent) int {
		return func(evs []*historypb.HistoryEvent) int {
			n := 0
			for _, ev := range evs {
				if ev.GetEventType() == typ {
					n++
				}
			}
			return n
		}
	}
	markers, tasks := counter(enumspb.EVENT_TYPE_MARKER_RECORDED), counter(enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
	waitUntil(t, "the old run's first task", 30*time.Second, func() bool { return tasks(events(oldRun)) > 0 })
	// A run below the floor (this build does not replay it) is named by the doctor until it
	// has ended; the run at the floor is not.
	below := workflows.SessionWorkflowID("older-run")
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: below, TaskQueue: "nobody-polls-this"},
		workflows.SessionWorkflowName, workflows.SessionInput{Version: workflows.SessionFloor - 1, Config: conf}); err != nil {
		t.Fatal(err)
	}
	floor := func() doctor.Result { return doctor.VersionFloor(ctx, c, cfg.Temporal.Namespace) }
	waitUntil(t, "the doctor to name the run below the floor", 30*time.Second, func() bool {
		r := floor()
		return !r.OK && strings.Contains(r.Detail, fmt.Sprintf("%s (version %d", below, workflows.SessionFloor-1)) && !strings.Contains(r.Detail, id+" ")
	})
	if err := c.TerminateWorkflow(ctx, below, "", "closed by the operator before the upgrade"); err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWorkflow(ctx, id, oldRun, workflows.SignalConfigure, conf); err != nil {
		t.Fatal(err)
	}
	var newRun string
	waitUntil(t, "the old run to continue as new", 60*time.Second, func() bool {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false
		}
		newRun = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		return newRun != oldRun
	})
	if n := markers(events(oldRun)); n == 0 {
		t.Errorf("the old run recorded no version marker, want the upgrade at configure")
	}
	// The new run's input carries SessionVersion, and its first task records no marker.
	var first []*historypb.HistoryEvent
	waitUntil(t, "the new run's first task", 30*time.Second, func() bool {
		first = events(newRun)
		return tasks(first) > 0
	})
	var in workflows.SessionInput
	payloads := first[0].GetWorkflowExecutionStartedEventAttributes().GetInput()
	if err := converter.GetDefaultDataConverter().FromPayloads(payloads, &in); err != nil {
		t.Fatal(err)
	}
	if in.Version != workflows.SessionVersion || in.Config.Name != "old-run" {
		t.Fatalf("the new run's input: version %d, config %+v; want version %d and the session's config", in.Version, in.Config, workflows.SessionVersion)
	}
	if n := markers(first); n != 0 {
		t.Errorf("the run started at the current version recorded %d version markers, want none", n)
	}
	waitUntil(t, "the doctor to see every run at the floor", 30*time.Second, func() bool { return floor().OK })
	if os.Getenv("WRITE_REPLAY_HISTORY") != "" {
		data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events(oldRun)})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("../../workflows/testdata/session_upgrade.json", data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 38: the doctor names each host's worker, and a host no worker serves (its sessions'
// messages wait); this worker starts only its own host's sessions.
func TestDoctorNamesEachHostsWorker(t *testing.T) {
	cfg := testenv.Config(t)
	cfg.Sessions["far"] = config.Session{TmuxTarget: "far:0", CLI: "claude", Mode: config.ModeTmux, Host: "elsewhere"}
	svc, _ := startService(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var report doctor.Report
	waitUntil(t, "the doctor to see this host's worker", 30*time.Second, func() bool {
		report = doctor.Hosts(ctx, svc.Client(), cfg)
		for _, r := range report {
			if r.Name == "host "+cfg.Host && r.OK {
				return true
			}
		}
		return false
	})
	for _, r := range report {
		switch r.Name {
		case "host elsewhere":
			if r.OK || !strings.Contains(r.Detail, "far wait") {
				t.Errorf("a host nobody serves: %+v", r)
			}
		case "host " + cfg.Host:
			if !r.OK || !strings.Contains(r.Detail, config.DefaultSessionName+" served by intentq@") {
				t.Errorf("this host: %+v", r)
			}
		default:
			t.Errorf("unexpected check %+v", r)
		}
	}
	if _, err := svc.Client().DescribeWorkflowExecution(ctx, workflows.SessionWorkflowID("far"), ""); err == nil {
		t.Error("this worker started a session of another host")
	}
}

// Issue 38: a host whose worker is gone is told to the person once, by one worker of the two that
// notice, naming the sessions whose messages wait; when its worker comes, it is told once that
// the host is back.
func TestHostDownIsToldOnce(t *testing.T) {
	ntfy := fakentfy.New()
	t.Cleanup(ntfy.Close)
	cfg := testenv.Config(t)
	cfg.Ntfy.URL, cfg.Ntfy.Topic = ntfy.URL(), "ops"
	cfg.Host = "a"
	def := cfg.Sessions[config.DefaultSessionName]
	def.Host = "a"
	cfg.Sessions[config.DefaultSessionName] = def
	cfg.Sessions["far"] = config.Session{TmuxTarget: "far:0", CLI: "claude", Mode: config.ModeTmux, Host: "b"}
	cfg.Sessions["near"] = config.Session{TmuxTarget: "near:0", CLI: "claude", Mode: config.ModeTmux, Host: "c"}
	first, _ := startService(t, cfg)
	// Another host's worker against the first's server, and later the missing host's.
	worker := func(host string) *service.Service {
		other := *cfg
		other.Host = host
		other.Temporal.Address = cfg.TemporalAddress()
		other.Temporal.APIKey = config.Secret(first.Token())
		other.Temporal.Encryption.Mode = config.EncryptionOff
		other.Ingest.Listen = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
		other.DataDir = t.TempDir()
		svc, _ := startService(t, &other)
		return svc
	}
	workers := []*service.Service{first, worker("c")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := func(hosts ...string) bool {
		for _, h := range doctor.HostStates(ctx, first.Client(), cfg) {
			if slices.Contains(hosts, h.Host) && !h.Served() {
				return false
			}
		}
		return true
	}
	about := func(host string) []fakentfy.Message {
		var got []fakentfy.Message
		for _, m := range ntfy.Messages() {
			if strings.Contains(m.Title, "host "+host) {
				got = append(got, m)
			}
		}
		return got
	}
	round := func() {
		for _, w := range workers {
			w.Watchdog().RunOnce(ctx)
		}
	}
	waitUntil(t, "hosts a and c served", 30*time.Second, func() bool { return served("a", "c") })
	for range 3 {
		round()
	}
	if down := about("b"); len(down) != 1 || !strings.Contains(down[0].Message, "no worker serves host b: the messages of far wait") {
		t.Errorf("host b down, told %d times, want once naming far: %+v", len(down), down)
	}
	if n := len(about("a")) + len(about("c")); n != 0 {
		t.Errorf("hosts that are served were told about %d times: %+v", n, ntfy.Messages())
	}

	workers = append(workers, worker("b"))
	waitUntil(t, "host b served", 30*time.Second, func() bool { return served("b") })
	// The checks read the task queues at most every 10 s.
	for deadline := time.Now().Add(30 * time.Second); len(about("b")) < 2 && time.Now().Before(deadline); time.Sleep(time.Second) {
		round()
	}
	round()
	if back := about("b"); len(back) != 2 || !strings.Contains(back[1].Title, "ok again") {
		t.Errorf("host b back: told %+v, want once that it is ok again", back)
	}
}
