package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/peers"
	"github.com/intentq/intentq/internal/testkit/procs"
	"github.com/intentq/intentq/internal/testkit/runlog"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

// cluster is a Temporal cluster on PostgreSQL brought up by scripts/cluster-up for one test.
type cluster struct {
	Dir     string
	Address string
	Keys    string
}

// shared is the cluster of this test binary: brought up by the first test that needs it, down
// when all have run (TestMain).
var (
	sharedOnce sync.Once
	shared     *cluster
	sharedErr  error
	sharedDown func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDown != nil {
		sharedDown()
	}
	procs.Cleanup()
	os.Exit(code)
}

// up returns the shared cluster, running scripts/cluster-up (no workers) on free ports in a
// fresh folder the first time. The built programs are kept in .cluster/bin.
func up(t testing.TB) *cluster {
	t.Helper()
	pg := peers.Postgres(t)
	sharedOnce.Do(func() { shared, sharedErr = clusterUp(t, pg) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func clusterUp(t testing.TB, pg string) (*cluster, error) {
	dir, err := os.MkdirTemp("", "iq-cluster")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // PostgreSQL runs as postgres under root
		return nil, err
	}
	root := procs.Root()
	env := append(os.Environ(), "CLUSTER_DIR="+dir, "CLUSTER_BIN="+filepath.Join(root, ".cluster", "bin"), "PG_BIN="+pg, "WORKERS=0")
	port := func(name string) string {
		p := fmt.Sprint(testenv.FreePort(t))
		env = append(env, name+"="+p)
		return p
	}
	for _, name := range []string{"DB_PORT", "TEMPORAL_HTTP_PORT", "HISTORY_PORT", "MATCHING_PORT", "INTERNAL_WORKER_PORT", "UI_PORT", "INGEST_BASE",
		"FRONTEND_MEMBERSHIP_PORT", "HISTORY_MEMBERSHIP_PORT", "MATCHING_MEMBERSHIP_PORT", "WORKER_MEMBERSHIP_PORT"} {
		port(name)
	}
	c := &cluster{Dir: dir, Address: "127.0.0.1:" + port("TEMPORAL_PORT"), Keys: filepath.Join(dir, "encryption.keys")}
	sharedDown = func() {
		down := exec.Command(filepath.Join(root, "scripts", "cluster-down"))
		down.Env = env
		if out, err := down.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "cluster-down: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "cluster-up"))
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "logs", "temporal.log"))
		return nil, fmt.Errorf("cluster-up: %v\n%s\ntemporal.log (end):\n%s", err, out, tail(string(logs), 3000))
	}
	keygen := exec.Command(filepath.Join(procs.Binaries(t), "starter"), "keygen")
	keygen.Env = append(os.Environ(), "INTENTQ_TEMPORAL_ENCRYPTION_KEY_FILE="+c.Keys, "INTENTQ_DATA_DIR="+dir)
	if out, err := keygen.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("keygen: %v %s", err, out)
	}
	return c, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// workerEnv is the environment of one intentq worker on the cluster. Tests keep apart by
// namespace (workflow IDs such as session/<name> and semaphore/agent-runs are per namespace, not
// per task queue).
func (c *cluster) workerEnv(t testing.TB, home, configFile, name string, extra ...string) []string {
	return append([]string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMUX_TMPDIR=" + filepath.Join(home, "tmux"),
		"INTENTQ_CONFIG=" + configFile,
		"INTENTQ_TEMPORAL_ADDRESS=" + c.Address,
		"INTENTQ_TEMPORAL_ENCRYPTION_KEY_FILE=" + c.Keys,
		"INTENTQ_DATA_DIR=" + filepath.Join(home, name),
		fmt.Sprintf("INTENTQ_INGEST_LISTEN=127.0.0.1:%d", testenv.FreePort(t)),
		"INTENTQ_METRICS_LISTEN=127.0.0.1:0",
		"INTENTQ_CLIS_KIMI_PROCESS_NAMES=" + testenv.StandInProcessNames,
		// The panes' read loops run in sh, not the user's login shell (tmux's default).
		"SHELL=/bin/sh",
	}, extra...)
}

var lineRE = regexp.MustCompile(`^【(新着|未対応)メッセージ】msg_id=(\d+) chat=(\d+)`)

// Issue 13: a 500-message Telegram burst for 5 sessions on a PostgreSQL-backed Temporal cluster
// with two workers, one of them killed (-9) in the middle and started again: 500 intents, each
// typed exactly once into its session's pane, in arrival order, never two deliveries in one
// line (a session's deliveries never interleave across workers), every first reminder typed
// once, and the restarted worker takes its share of the work again.
func TestClusterBurstSurvivesAWorkerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Temporal cluster on PostgreSQL")
	}
	peers.Tmux(t)
	c := up(t)
	bin := procs.Binaries(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "tmux"), 0o700); err != nil {
		t.Fatal(err)
	}
	bot := fakebot.New("777:cluster")
	t.Cleanup(bot.Close)

	const sessions, perSession = 5, 100
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "reminders:\n  first_after: 20s\n  repeat_every: 1h\ntelegram:\n  api_endpoint: %q\n  allowed_chat_ids: [", bot.Endpoint())
	for s := 1; s <= sessions; s++ {
		if s > 1 {
			cfg.WriteString(", ")
		}
		fmt.Fprint(&cfg, 100+s)
	}
	cfg.WriteString("]\nsessions:\n")
	panes := map[int]string{}
	for s := 1; s <= sessions; s++ {
		fmt.Fprintf(&cfg, "  s%d:\n    tmux_target: \"s%d:0\"\n    cli: kimi\n    chats: [%d]\n    default: %v\n    escalation: {interrupt: false, reset: false}\n", s, s, 100+s, s == 1)
		panes[s] = filepath.Join(home, fmt.Sprintf("pane-%d.txt", s))
	}
	configFile := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(configFile, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	envA := c.workerEnv(t, home, configFile, "a", "INTENTQ_TELEGRAM_TOKEN=777:cluster", "INTENTQ_TEMPORAL_NAMESPACE=burst")
	envB := c.workerEnv(t, home, configFile, "b", "INTENTQ_TEMPORAL_NAMESPACE=burst")
	for s := 1; s <= sessions; s++ {
		tmux := exec.Command("tmux", "new-session", "-d", "-s", fmt.Sprintf("s%d", s), "-x", "250", "-y", "50",
			"trap '' INT; while IFS= read -r l; do printf '%s\\n' \"$l\" >> "+panes[s]+"; done")
		tmux.Env = envA
		if out, err := tmux.CombinedOutput(); err != nil {
			t.Fatalf("tmux: %v %s", err, out)
		}
	}
	t.Cleanup(func() { k := exec.Command("tmux", "kill-server"); k.Env = envA; _ = k.Run() })

	a := procs.StartWorker(t, bin, envA)
	a.WaitFor(t, "ready", 90*time.Second)
	b := procs.StartWorker(t, bin, envB)
	b.WaitFor(t, "ready", 90*time.Second)

	for i := 1; i <= perSession; i++ {
		for s := 1; s <= sessions; s++ {
			bot.AddMessage(int64(100+s), int64(100+s), i, fmt.Sprintf("burst %d for s%d", i, s))
		}
	}
	count := func(kind string) int {
		n := 0
		for _, p := range panes {
			data, _ := os.ReadFile(p)
			n += strings.Count(string(data), "【"+kind+"メッセージ】")
		}
		return n
	}
	waitCount := func(kind string, want int, timeout time.Duration) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for count(kind) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d %s lines after %s, want %d", count(kind), kind, timeout, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitCount("新着", 150, 4*time.Minute)
	if err := b.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = b.Cmd.Wait()
	waitCount("新着", 300, 4*time.Minute)
	b = procs.StartWorker(t, bin, envB)
	// Ready once its recovery has read the burst's undelivered intents, each through a query the
	// busy worker A answers: the worker itself gives that up to two minutes (recoverFor), and
	// under make test's load it took over 90 s.
	b.WaitFor(t, "ready", 3*time.Minute)
	restartedPID := b.Cmd.Process.Pid
	waitCount("新着", sessions*perSession, 6*time.Minute)
	waitCount("未対応", sessions*perSession, 6*time.Minute)

	for s := 1; s <= sessions; s++ {
		data, err := os.ReadFile(panes[s])
		if err != nil {
			t.Fatal(err)
		}
		next, reminded := 1, map[string]int{}
		for n, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			m := lineRE.FindStringSubmatch(line)
			if m == nil || strings.Count(line, "メッセージ】") != 1 || m[3] != fmt.Sprint(100+s) {
				t.Errorf("pane s%d line %d is not one delivery for its chat: %q", s, n+1, line)
				continue
			}
			if m[1] == "新着" {
				if m[2] != fmt.Sprint(next) {
					t.Errorf("pane s%d line %d: message %s, want %d (each once, in arrival order)", s, n+1, m[2], next)
				}
				next++
			} else {
				reminded[m[2]]++
			}
		}
		if next != perSession+1 {
			t.Errorf("pane s%d got %d messages, want %d", s, next-1, perSession)
		}
		for i := 1; i <= perSession; i++ {
			if reminded[fmt.Sprint(i)] != 1 {
				t.Errorf("pane s%d: the first reminder of %d typed %d times", s, i, reminded[fmt.Sprint(i)])
			}
		}
	}

	// The restarted worker took its share: tasks of the intents ran on it (a session's tasks
	// stay with the worker that has it cached, sticky, with its activities run eagerly there).
	cl, err := client.Dial(client.Options{HostPort: c.Address, Namespace: "burst"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	suffix := fmt.Sprintf("/%d", restartedPID)
	took := 0
	for s := 1; s <= sessions; s++ {
		for i := 1; i <= perSession; i++ {
			iter := cl.GetWorkflowHistory(context.Background(), workflows.IntentID(fmt.Sprint(100+s), fmt.Sprint(i)), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			ran := false
			for iter.HasNext() {
				ev, err := iter.Next()
				if err != nil {
					t.Fatal(err)
				}
				id := ev.GetWorkflowTaskStartedEventAttributes().GetIdentity() + ev.GetActivityTaskStartedEventAttributes().GetIdentity()
				ran = ran || strings.HasSuffix(id, suffix)
			}
			if ran {
				took++
			}
		}
	}
	if took == 0 {
		t.Error("the restarted worker ran no task of any intent")
	}
	t.Logf("the restarted worker ran tasks of %d intents", took)
}

// Issue 13: the headless limit (scheduler.max_concurrent_sessions) holds across two worker
// processes on the PostgreSQL cluster: 6 sessions x 3 prompts, limit 2, never more than 2 runs at
// once (as the fake CLI records them, with the worker that ran each), each session's prompts in
// order, runs on both workers.
func TestClusterHeadlessLimitAcrossWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Temporal cluster on PostgreSQL")
	}
	c := up(t)
	bin := procs.Binaries(t)
	home := t.TempDir()
	logPath := filepath.Join(home, "runs.log")
	fake := filepath.Join(procs.Root(), "activities", "testdata", "fakeclaude.sh")
	const sessions, prompts = 6, 3
	var cfg strings.Builder
	// Runs see only the environment variables the config names: the fake CLI's log is one. The
	// runs write that shared log outside their work folders: unconfined (the sandbox is not what
	// this test is about; internal/headless and worker's TestSecurityAttacks test it).
	fmt.Fprintf(&cfg, "policies:\n  global:\n    env: [FAKE_LOG]\nclis:\n  fake:\n    command: %q\n    headless_args: [\"-p\", \"--output-format\", \"json\"]\nscheduler:\n  max_concurrent_sessions: 2\n  sandbox: \"off\"\nsessions:\n  secretary:\n    tmux_target: \"secretary:0\"\n    default: true\n", fake)
	for i := 1; i <= sessions; i++ {
		fmt.Fprintf(&cfg, "  h%d:\n    cli: fake\n    mode: headless\n", i)
	}
	configFile := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(configFile, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	envA := c.workerEnv(t, home, configFile, "a", "FAKE_LOG="+logPath, "INTENTQ_TEMPORAL_NAMESPACE=headless")
	envB := c.workerEnv(t, home, configFile, "b", "FAKE_LOG="+logPath, "INTENTQ_TEMPORAL_NAMESPACE=headless")
	a := procs.StartWorker(t, bin, envA)
	a.WaitFor(t, "ready", 90*time.Second)
	b := procs.StartWorker(t, bin, envB)
	b.WaitFor(t, "ready", 90*time.Second)
	for n := 1; n <= prompts; n++ {
		for i := 1; i <= sessions; i++ {
			cmd := exec.Command(filepath.Join(bin, "starter"), "prompt", "--session", fmt.Sprintf("h%d", i), "--key", fmt.Sprint(n), fmt.Sprintf("conc h%d %d", i, n))
			cmd.Env = envA
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("prompt: %v %s", err, out)
			}
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		data, _ := os.ReadFile(logPath)
		if strings.Count(string(data), "end ") == sessions*prompts {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs ended:\n%s", strings.Count(string(data), "end "), sessions*prompts, data)
		}
		time.Sleep(200 * time.Millisecond)
	}
	runs := runlog.Summarize(runlog.Read(t, logPath))
	most, order, workers := runs.MostAtOnce, runs.Order, runs.Workers
	if most > 2 {
		t.Errorf("%d runs at once across the workers, limit 2", most)
	}
	for s, ns := range order {
		if strings.Join(ns, ",") != "1,2,3" {
			t.Errorf("session %s ran its prompts in the order %v", s, ns)
		}
	}
	if len(order) != sessions {
		t.Errorf("%d sessions ran, want %d", len(order), sessions)
	}
	if !workers[fmt.Sprint(a.Cmd.Process.Pid)] || !workers[fmt.Sprint(b.Cmd.Process.Pid)] {
		t.Errorf("runs on workers %v, want both %d and %d", workers, a.Cmd.Process.Pid, b.Cmd.Process.Pid)
	}
}
