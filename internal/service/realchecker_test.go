package service_test

// The exactly-once checker against the real system (issue 32): one test process runs the
// embedded Temporal server and the real worker (service.Start) with its real hook desk; a
// Telegram stand-in (fakebot) is the door and the answers' destination; a tmux pane is the
// agent's terminal; the agent is played here, running intentq's hook handlers with the JSON
// Claude Code gives them (hooks.Run, through the worker's desk as `starter hook` does) and
// answering through the real MCP server's reply tool. Faults are drawn by a seed: workflow tasks
// failing right after an activity or local activity completed (a worker interceptor), the
// worker stopped and started mid-flight, hooks dying before they print and after (their output
// lost), a slow Telegram that outlives the reply tool's wait, delays between everything.
//
// After each schedule: every message entered the agent's context exactly once (typed, or handed
// over by a hook whose output the agent got), every delivery counted was printed or typed, and
// every message got its answer once, as a reply to itself. A failing seed prints its schedule;
// -realchecker.seed=N plays one, -realchecker.budget sets how long `make test` plays (the
// benchmark plays longer).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/doors/hooks"
	"github.com/intentq/intentq/internal/doors/hooks/hooktemporal"
	"github.com/intentq/intentq/internal/doors/mcp"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/internal/service"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/peers"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

var (
	realBudget  = flag.Duration("realchecker.budget", 60*time.Second, "how long TestExactlyOnceRealSystem plays schedules")
	realSeed    = flag.Int64("realchecker.seed", 0, "play this one schedule of TestExactlyOnceRealSystem")
	realVerbose = flag.Bool("realchecker.v", false, "print every schedule, not only a failing one")
)

// The checker's session, its chat and sender.
const (
	checkerSession = "checker"
	checkerChat    = int64(77)
	checkerUser    = int64(7701)
)

// TestExactlyOnceRealSystem plays seeded schedules against the real system for a fixed budget.
func TestExactlyOnceRealSystem(t *testing.T) {
	rs := newRealSystem(t)
	if *realSeed != 0 {
		rs.play(t, *realSeed)
		return
	}
	began, n := time.Now(), 0
	for seed := int64(1); n == 0 || time.Since(began) < *realBudget; seed++ {
		rs.play(t, seed)
		n++
		if t.Failed() {
			return
		}
	}
	t.Logf("%d schedules in %s, %d workflow tasks failed on purpose, %d worker restarts", n, time.Since(began).Round(time.Second), rs.faults.failed(), rs.restarts)
}

// BenchmarkExactlyOnceRealSystem plays schedules for five minutes (make bench) and prints how
// many it played.
func BenchmarkExactlyOnceRealSystem(b *testing.B) {
	for range b.N {
		b.StopTimer()
		rs := newRealSystem(b)
		b.StartTimer()
		began, n := time.Now(), 0
		for seed := int64(1001); time.Since(began) < 5*time.Minute; seed++ {
			rs.play(b, seed)
			n++
			if b.Failed() {
				return
			}
		}
		b.ReportMetric(float64(n), "schedules")
		b.ReportMetric(float64(rs.faults.failed()), "failed-tasks")
		b.ReportMetric(float64(rs.restarts), "restarts")
	}
}

// realSystem is the service and its peers, shared by the schedules (each schedule's messages
// have IDs of their own).
type realSystem struct {
	cfg      *config.Config
	bot      *fakebot.Server
	pane     string
	screen   *os.File // the pane's terminal, where the agent draws whether it works
	faults   *taskFaults
	svc      *service.Service
	down     bool // the worker is stopped (an outage)
	restarts int
	// offset is how much of the pane the schedules have read.
	offset int
}

func newRealSystem(t testing.TB) *realSystem {
	peers.Tmux(t)
	bot := fakebot.New(botToken)
	t.Cleanup(bot.Close)
	cfg := testenv.Config(t)
	cfg.Telegram.Token = botToken
	cfg.Telegram.APIEndpoint = bot.Endpoint()
	cfg.Telegram.AllowedUserIDs = []int64{checkerUser}
	cfg.Reminders.FirstAfter = time.Hour
	cfg.Sessions[checkerSession] = config.Session{TmuxTarget: checkerSession + ":0", CLI: "claude", Mode: config.ModeTmux, Chats: []int64{checkerChat}}
	// The agent's terminal: raw, without echo, every byte kept (bracketed pastes and Enter).
	pane := filepath.Join(os.Getenv("TMUX_TMPDIR"), "checker.out")
	cmd := exec.Command("tmux", "new-session", "-d", "-s", checkerSession, "-x", "200", "-y", "50", "stty raw -echo; exec cat > "+pane)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-server").Run() })
	// The screen: Claude Code draws "esc to interrupt" while a turn runs, which is what the
	// session reads when the hooks' word is too old to trust (after a worker's absence).
	tty, err := exec.Command("tmux", "display-message", "-p", "-t", checkerSession+":0", "#{pane_tty}").Output()
	if err != nil {
		t.Fatalf("tmux pane_tty: %v", err)
	}
	screen, err := os.OpenFile(strings.TrimSpace(string(tty)), os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("the pane's terminal: %v", err)
	}
	t.Cleanup(func() { _ = screen.Close() })
	rs := &realSystem{cfg: cfg, bot: bot, pane: pane, screen: screen, faults: &taskFaults{done: map[string]bool{}}}
	rs.svc = testenv.StartService(t, cfg, zap.NewNop(), service.WithWorkerInterceptors(rs.faults))
	return rs
}

// restart stops the worker (and its embedded server; a second stop does nothing) and starts it
// again on the same data_dir.
func (rs *realSystem) restart(t testing.TB) {
	rs.svc.Stop(context.Background())
	rs.restarts++
	for attempt := 1; ; attempt++ {
		svc, err := service.Start(context.Background(), rs.cfg, zap.NewNop(), service.WithWorkerInterceptors(rs.faults))
		if err == nil {
			rs.svc, rs.down = svc, false
			t.Cleanup(func() { svc.Stop(context.Background()) })
			return
		}
		if attempt == 5 {
			t.Fatalf("restart: %v", err)
		}
		time.Sleep(time.Second)
	}
}

// taskFaults fails a workflow task right after an activity or local activity completed (once
// per point, while the fault is armed): the retried task runs again from the history, and a
// local activity runs again.
type taskFaults struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex
	armed func() bool
	done  map[string]bool
	count int
}

func (f *taskFaults) failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

// fail reports whether the task at point fails now (each point once).
func (f *taskFaults) fail(point string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed == nil || f.done[point] || !f.armed() {
		return false
	}
	f.done[point] = true
	f.count++
	return true
}

func (f *taskFaults) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &faultyInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, f: f}
}

type faultyInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	f *taskFaults
}

func (i *faultyInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&faultyOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, f: i.f})
}

// faultyOutbound numbers the session's activities as its code schedules them (the same on every
// replay): a point is the run and that number.
type faultyOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	f   *taskFaults
	seq int
}

func (o *faultyOutbound) wrap(ctx workflow.Context, fut workflow.Future) workflow.Future {
	info := workflow.GetInfo(ctx)
	if info.WorkflowType.Name != workflows.SessionWorkflowName {
		return fut
	}
	o.seq++
	return &faultyFuture{Future: fut, point: fmt.Sprintf("%s/%d", info.WorkflowExecution.RunID, o.seq), f: o.f}
}

func (o *faultyOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	return o.wrap(ctx, o.Next.ExecuteActivity(ctx, activityType, args...))
}

func (o *faultyOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	return o.wrap(ctx, o.Next.ExecuteLocalActivity(ctx, activityType, args...))
}

type faultyFuture struct {
	workflow.Future
	point string
	f     *taskFaults
}

// Get fails the workflow task (a panic: the SDK fails the task and the server retries it) once
// the activity's result is in, when the fault says so.
func (ff *faultyFuture) Get(ctx workflow.Context, v any) error {
	err := ff.Future.Get(ctx, v)
	if !workflow.IsReplaying(ctx) && ff.f.fail(ff.point) {
		panic("checker: the workflow task fails right after an activity")
	}
	return err
}

// header finds the intentq header of a message of the checker's chat in what the agent got.
var header = regexp.MustCompile(`【新着メッセージ】msg_id=(\d+) chat=77\b`)

// schedule is one seeded play: the agent's view and what happened, for the report.
type schedule struct {
	rs   *realSystem
	t    testing.TB
	seed int64
	rnd  *rand.Rand
	log  []string
	// sent are the messages the person sent; seen counts each one's entries into the agent's
	// context; answered the ones the agent answered (the tool said so).
	sent     []int
	seen     map[int]int
	answered map[int]bool
	// retry is a reply call that ended in an error, repeated as it was; answering names the
	// message each call (text and reply_to) answers; texts the answer each message gets.
	retry     []mcp.ReplyArgs
	answering map[string]int
	texts     map[int]string
	working   bool
	queued    []string // prompts typed while the agent worked (the CLI submits them after)
	prompt    strings.Builder
	pasting   bool
	runs      int
}

func (rs *realSystem) play(t testing.TB, seed int64) {
	sc := &schedule{rs: rs, t: t, seed: seed, rnd: rand.New(rand.NewPCG(uint64(seed), 32)), seen: map[int]int{}, answered: map[int]bool{},
		answering: map[string]int{}, texts: map[int]string{}}
	// The faults draw from a generator of their own: the workers' goroutines ask (under the
	// faults' lock) while the schedule plays.
	rate := []float64{0, 0.05, 0.2}[sc.rnd.IntN(3)]
	frnd := rand.New(rand.NewPCG(uint64(seed), 99))
	rs.faults.mu.Lock()
	rs.faults.armed = func() bool { return frnd.Float64() < rate }
	rs.faults.mu.Unlock()
	defer func() {
		rs.faults.mu.Lock()
		rs.faults.armed = nil
		rs.faults.mu.Unlock()
		rs.bot.SetSendDelay(0)
		if t.Failed() && *realVerbose {
			sc.traceSession()
			slices.Sort(sc.log)
		}
		if t.Failed() || *realVerbose {
			t.Logf("schedule of seed %d (replay with -realchecker.seed=%d):\n%s", seed, seed, strings.Join(sc.log, "\n"))
		}
	}()
	sc.note("seed %d: workflow tasks fail after %.0f%% of the session's activities", seed, rate*100)
	steps, restarted := 20+sc.rnd.IntN(30), false
	for step := 0; step < steps && !t.Failed(); step++ {
		sc.readPane()
		switch r := sc.rnd.IntN(100); {
		case r < 25 && len(sc.sent) < 8:
			sc.send()
			if sc.rnd.IntN(3) == 0 {
				// A compact or /clear as the message arrives: its session start races the
				// message's delivery (typed, or offered to the next hook).
				time.Sleep(time.Duration(sc.rnd.IntN(150)) * time.Millisecond)
				sc.sessionStart()
			}
		case r < 45 && sc.working:
			sc.toolCall()
		case r < 52 && sc.working:
			sc.stop()
		case r < 58 && !sc.working:
			sc.startTurn("a job of the agent's own")
		case r < 62:
			sc.sessionStart()
		case r < 64 && !restarted:
			restarted = true
			if sc.rnd.IntN(4) > 0 {
				sc.note("worker stopped and started")
				rs.restart(t)
				break
			}
			// An outage longer than a take's lease: the agent goes on meanwhile (its hooks find
			// no worker; what they printed they record), then the worker comes back.
			sc.note("worker stopped for longer than a lease")
			rs.svc.Stop(context.Background())
			rs.down = true
			for end := time.Now().Add(31*time.Second + time.Duration(sc.rnd.IntN(5000))*time.Millisecond); time.Now().Before(end); {
				if sc.working && sc.rnd.IntN(3) > 0 {
					sc.toolCall()
				}
				time.Sleep(time.Duration(500+sc.rnd.IntN(2000)) * time.Millisecond)
			}
			rs.restart(t)
			sc.note("worker back")
		case r < 85:
			sc.answerOne()
		}
		time.Sleep(time.Duration(sc.rnd.IntN(300)) * time.Millisecond)
	}
	sc.settle()
}

func (sc *schedule) note(format string, a ...any) {
	sc.log = append(sc.log, fmt.Sprintf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, a...)...))
}

// msgID is the Telegram id of the schedule's n-th message.
func (sc *schedule) msgID(n int) int { return int(sc.seed)*100 + n }

func (sc *schedule) send() {
	id := sc.msgID(len(sc.sent) + 1)
	sc.sent = append(sc.sent, id)
	sc.rs.bot.AddMessage(checkerChat, checkerUser, id, fmt.Sprintf("note %d", id))
	sc.note("person sends %d", id)
}

// listed finds a pending message a session start lists with its text ("- id=... chat=... age=...",
// the text on the lines after it, indented).
var listed = regexp.MustCompile(`- id=intent/77/(\d+) chat=77 age=\S+\n\s+note (\d+)`)

// took counts the messages a text the agent got carries: with intentq's header (typed, or handed
// over by a hook), or listed with its text by a session start before the agent had it (a listing
// of one it had is its context presented again after a reset, not a second entry).
func (sc *schedule) took(via, text string) {
	for _, m := range header.FindAllStringSubmatch(text, -1) {
		id, _ := strconv.Atoi(m[1])
		sc.seen[id]++
		sc.note("agent got %d (%s)", id, via)
	}
	for _, m := range listed.FindAllStringSubmatch(text, -1) {
		if id, _ := strconv.Atoi(m[1]); sc.seen[id] == 0 {
			sc.seen[id]++
			sc.note("agent got %d (listed in full by %s)", id, via)
		}
	}
}

// hook runs a hook as Claude Code runs `starter hook`: what it prints reaches the agent (the
// context it adds, the reason of a blocked stop).
func (sc *schedule) hook(event string, input string) string {
	// The CLI takes in what is typed as it comes: a prompt typed into an idle agent is in its
	// context before any later hook of the agent runs.
	sc.readPane()
	sc.runs++
	var out bytes.Buffer
	if err := hooks.Run(context.Background(), event, strings.NewReader(input), &out, sc.settings(), sc.dial, 5*time.Second); err != nil {
		sc.t.Errorf("hook %s: %v", event, err)
	}
	if out.Len() == 0 {
		return ""
	}
	var printed hooks.Output
	if err := json.Unmarshal(out.Bytes(), &printed); err != nil {
		sc.t.Errorf("hook %s printed %q: %v", event, out.String(), err)
		return ""
	}
	text := printed.Reason
	if printed.HookSpecificOutput != nil {
		text += printed.HookSpecificOutput.AdditionalContext
	}
	return text
}

func (sc *schedule) settings() hooks.Settings {
	return hooks.Settings{Session: checkerSession, Agent: checkerSession, DataDir: sc.rs.cfg.DataDir, StopTyped: true, Logger: zap.NewNop()}
}

// dial is a hook's backend: the worker's desk, and Temporal when the desk does not answer; while
// the worker is down (with it the embedded server), dialing Temporal fails as it would.
func (sc *schedule) dial(context.Context) (hooks.Backend, func(), error) {
	if sc.rs.down {
		temporal, closeFn := hooks.Lazy(func(context.Context) (hooks.Backend, func(), error) {
			return nil, nil, errors.New("dial 127.0.0.1: connection refused")
		})
		return hooks.ThroughDesk(sc.rs.cfg.DataDir, sc.rs.svc.Token(), temporal), closeFn, nil
	}
	return hooks.ThroughDesk(sc.rs.cfg.DataDir, sc.rs.svc.Token(), hooktemporal.Temporal{Client: sc.rs.svc.Client(), Config: sc.rs.cfg}), func() {}, nil
}

// readPane takes what was typed: a prompt ends at Enter outside a bracketed paste. An idle agent
// submits it at once (its user-prompt-submit hook is the receipt); a working one after its turn.
func (sc *schedule) readPane() {
	data, _ := os.ReadFile(sc.rs.pane)
	const pasteStart, pasteEnd = "\x1b[200~", "\x1b[201~"
	for ; sc.rs.offset < len(data); sc.rs.offset++ {
		c := data[sc.rs.offset]
		sc.prompt.WriteByte(c)
		s := sc.prompt.String()
		switch {
		case strings.HasSuffix(s, pasteStart):
			sc.pasting = true
			sc.prompt.Reset()
			sc.prompt.WriteString(strings.TrimSuffix(s, pasteStart))
		case strings.HasSuffix(s, pasteEnd):
			sc.pasting = false
			sc.prompt.Reset()
			sc.prompt.WriteString(strings.TrimSuffix(s, pasteEnd))
		case c == '\r' && !sc.pasting:
			text := strings.ReplaceAll(strings.TrimSuffix(s, "\r"), "\r", "\n")
			sc.prompt.Reset()
			if strings.TrimSpace(text) != "" {
				sc.queued = append(sc.queued, text)
				if sc.working {
					sc.note("typed while the agent works: %q", firstLine(text))
				}
			}
		}
	}
	if !sc.working && len(sc.queued) > 0 {
		sc.startTurn(sc.queued[0])
		sc.queued = sc.queued[1:]
	}
}

// startTurn submits a prompt: the agent gets it, and what user-prompt-submit adds.
func (sc *schedule) startTurn(prompt string) {
	if !header.MatchString(prompt) {
		sc.note("agent starts a turn of its own")
	}
	sc.working = true
	sc.draw(true)
	sc.took("typed", prompt)
	out := sc.hook("user-prompt-submit", fmt.Sprintf(`{"session_id":"c","hook_event_name":"UserPromptSubmit","prompt":%q,"prompt_id":"p%d-%d"}`, prompt, sc.seed, sc.runs))
	sc.took("user-prompt-submit", out)
}

// toolCall is one tool call of a working agent: pre-tool-use, then post-tool-use, which may die
// before it prints (nothing reaches the agent, nothing is committed) or after (its output is lost
// with it: Claude Code takes the output of a hook that exits, and nothing is committed).
func (sc *schedule) toolCall() {
	sc.runs++
	input := fmt.Sprintf(`{"session_id":"c","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"make"},"tool_use_id":"toolu_%d_%d"}`, sc.seed, sc.runs)
	sc.hook("pre-tool-use", strings.Replace(input, "PostToolUse", "PreToolUse", 1))
	switch r := sc.rnd.IntN(10); {
	case r == 0:
		sc.note("post-tool-use dies before it prints")
		err := hooks.Run(context.Background(), hooks.EventPostToolUse, strings.NewReader(input), failingWriter{}, sc.settings(), sc.dial, 5*time.Second)
		if err == nil {
			sc.note("(its print failed silently)")
		}
	case r == 1:
		sc.note("post-tool-use dies after it printed, before its commit (output lost)")
		b, closeFn, _ := sc.dial(context.Background())
		defer closeFn()
		in, _ := hooks.ReadInput(strings.NewReader(input))
		_, _ = hooks.PostToolUse(context.Background(), b, sc.settings(), in)
	default:
		sc.took("post-tool-use", sc.hook(hooks.EventPostToolUse, input))
	}
}

// failingWriter fails every write, as a hook killed before its print.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("killed") }

func (sc *schedule) stop() {
	sc.took("stop", sc.hook(hooks.EventStop, `{"session_id":"c","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"done"}`))
	sc.working = false
	sc.draw(false)
	sc.note("agent stops")
}

// draw shows the agent's screen as Claude Code draws it: at work, its spinner line with "esc to
// interrupt" (drawn before the turn's first hook); idle, an empty screen (cleared after the Stop
// hook returned).
func (sc *schedule) draw(working bool) {
	frame := "\x1b[2J\x1b[H"
	if working {
		frame += "✻ Working… (esc to interrupt)"
	}
	if _, err := sc.rs.screen.WriteString(frame); err != nil {
		sc.t.Errorf("the agent's screen: %v", err)
	}
}

func (sc *schedule) sessionStart() {
	sc.readPane()
	if len(sc.queued) > 0 {
		// Claude Code compacts between turns, and a prompt typed while it worked is submitted
		// when the turn ends: that comes first. (A session start while a typed prompt waits in
		// the CLI, confirmed by the input line only, is a gap the README names.)
		sc.stop()
		sc.readPane()
	}
	// Claude Code compacts during a turn (the turn goes on); a /clear comes while it idles.
	source := map[bool]string{true: "compact", false: "clear"}[sc.working]
	sc.note("session starts again (%s)", source)
	out := sc.hook(hooks.EventSessionStart, `{"session_id":"c","hook_event_name":"SessionStart","source":"`+source+`"}`)
	if *realVerbose && out != "" {
		sc.note("session-start printed %q", out)
	}
	sc.took("session-start", out)
}

// answerOne answers a message the agent has got and not answered, through the MCP reply tool:
// with reply_to, or without when the agent thinks it is the only one waiting; sometimes
// Telegram is slow and the call ends in an error after the answer went out (then the agent
// repeats the call as it was, later). A retry waiting goes first.
func (sc *schedule) answerOne() {
	if len(sc.retry) > 0 {
		a := sc.retry[0]
		sc.retry = sc.retry[1:]
		sc.reply(a, 30*time.Second)
		return
	}
	var open []int
	for _, id := range sc.sent {
		if sc.seen[id] > 0 && !sc.answered[id] {
			open = append(open, id)
		}
	}
	if len(open) == 0 {
		return
	}
	id := open[sc.rnd.IntN(len(open))]
	a := mcp.ReplyArgs{ChatID: strconv.FormatInt(checkerChat, 10), ReplyTo: strconv.Itoa(id), Text: sc.answerText(id)}
	slow := sc.rnd.IntN(5) == 0
	if len(open) == 1 && sc.rnd.IntN(2) == 0 {
		a.ReplyTo = "" // "the only one waiting", as far as the agent knows
		slow = slow || sc.rnd.IntN(3) == 0
	}
	sc.answering[a.Text+"\x00"+a.ReplyTo] = id
	wait := 30 * time.Second
	if slow {
		sc.rs.bot.SetSendDelay(1500 * time.Millisecond)
		wait = 700 * time.Millisecond
		defer sc.rs.bot.SetSendDelay(0)
	}
	sc.reply(a, wait)
}

// reply calls the reply tool; an error leaves the call to be repeated as it was, a refusal
// (several pending) makes the agent name the message.
func (sc *schedule) reply(a mcp.ReplyArgs, wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, text, err := sc.callReply(ctx, a)
	id := sc.answering[a.Text+"\x00"+a.ReplyTo]
	switch {
	case err == nil:
		sc.note("reply %+v: sent to %s", a, res.Intent)
		sc.answered[id] = true
	case a.ReplyTo == "" && strings.Contains(text, "pending messages"):
		sc.note("reply %+v refused: several pending; names the message", a)
		a.ReplyTo = strconv.Itoa(id)
		sc.answering[a.Text+"\x00"+a.ReplyTo] = id
		sc.reply(a, wait)
	case strings.Contains(text, "is already"):
		sc.note("reply %+v: %s", a, text)
	default:
		sc.note("reply %+v ended in an error (%v %s); repeated later", a, err, text)
		sc.retry = append(sc.retry, a)
	}
}

// callReply runs the MCP server's reply tool over an in-memory connection, as the agent's CLI
// does over stdio.
func (sc *schedule) callReply(ctx context.Context, a mcp.ReplyArgs) (mcp.ReplyResult, string, error) {
	backend := mcp.Temporal{Client: sc.rs.svc.Client(), Config: sc.rs.cfg, Telegram: &activities.Telegram{Token: botToken, Endpoint: sc.rs.bot.Endpoint()}}
	ct, st := sdk.NewInMemoryTransports()
	if _, err := mcp.NewServer(backend, mcp.Settings{Session: checkerSession, Agent: checkerSession, Config: sc.rs.cfg}, "checker").Connect(ctx, st, nil); err != nil {
		return mcp.ReplyResult{}, "", err
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "checker", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return mcp.ReplyResult{}, "", err
	}
	defer cs.Close()
	args := map[string]any{"chat_id": a.ChatID, "text": a.Text}
	if a.ReplyTo != "" {
		args["reply_to"] = a.ReplyTo
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "reply", Arguments: args})
	if err != nil {
		return mcp.ReplyResult{}, "", err
	}
	var text strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if r.IsError {
		return mcp.ReplyResult{}, text.String(), errors.New(text.String())
	}
	var res mcp.ReplyResult
	if m, ok := r.StructuredContent.(map[string]any); ok {
		res.Intent, _ = m["intent"].(string)
	}
	return res, text.String(), nil
}

// settle ends the schedule: the agent finishes its turn and takes in what is typed, until every
// message has reached it; it answers what it has not; then the checks.
func (sc *schedule) settle() {
	t := sc.t
	if sc.working {
		sc.stop()
	}
	sc.rs.faults.mu.Lock()
	sc.rs.faults.armed = nil
	sc.rs.faults.mu.Unlock()
	ctx := context.Background()
	delivered := func(id int) bool {
		v, err := intent.Show(ctx, sc.rs.svc.Client(), workflows.IntentID(strconv.FormatInt(checkerChat, 10), strconv.Itoa(id)))
		return err == nil && v.Delivered != nil
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		sc.readPane()
		if sc.working {
			sc.stop()
		}
		all := true
		for _, id := range sc.sent {
			all = all && sc.seen[id] > 0 && delivered(id)
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			for _, id := range sc.sent {
				sc.note("message %d: seen %d, delivered %v", id, sc.seen[id], delivered(id))
			}
			t.Errorf("seed %d: not every message reached the agent within 90 s", sc.seed)
			return
		}
	}
	for deadline := time.Now().Add(60 * time.Second); len(sc.retry) > 0 || sc.unanswered() > 0; {
		if time.Now().After(deadline) {
			t.Errorf("seed %d: answers still failing after 60 s (%d to repeat, %d unanswered)", sc.seed, len(sc.retry), sc.unanswered())
			return
		}
		before := len(sc.retry) + sc.unanswered()
		sc.answerOne()
		if len(sc.retry)+sc.unanswered() >= before && len(sc.retry) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
	// A typed block may still be on its way to the agent: a moment for the pane, then read it.
	time.Sleep(200 * time.Millisecond)
	sc.readPane()
	for _, id := range sc.sent {
		if n := sc.seen[id]; n != 1 {
			v, _ := intent.Show(ctx, sc.rs.svc.Client(), workflows.IntentID(strconv.FormatInt(checkerChat, 10), strconv.Itoa(id)))
			t.Errorf("seed %d: message %d entered the agent's context %d times (delivered at %v)", sc.seed, id, n, v.Delivered)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, id := range sc.sent {
		want := sc.texts[id]
		for {
			var mine, wrong int
			for _, m := range sc.rs.bot.Sent() {
				switch {
				case m.Text == want && m.ReplyTo == id:
					mine++
				case m.ReplyTo == id:
					wrong++
				}
			}
			if mine == 1 && wrong == 0 {
				break
			}
			if mine > 1 || wrong > 0 || wctx.Err() != nil {
				t.Errorf("seed %d: message %d got its answer %q %d times and %d other answers, want it once", sc.seed, id, want, mine, wrong)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	sc.note("%d messages; %d hook runs", len(sc.sent), sc.runs)
}

func (sc *schedule) unanswered() int {
	n := 0
	for _, id := range sc.sent {
		if !sc.answered[id] {
			n++
		}
	}
	return n
}

// answerText is the answer message id gets: often "OK", the same for several messages.
func (sc *schedule) answerText(id int) string {
	if _, ok := sc.texts[id]; !ok {
		sc.texts[id] = fmt.Sprintf("answer %d", id)
		if sc.rnd.IntN(2) == 0 {
			sc.texts[id] = "OK"
		}
	}
	return sc.texts[id]
}

// traceSession notes the session's history (event, time, activity or signal), for a failing
// schedule's report under -realchecker.v.
func (sc *schedule) traceSession() {
	iter := sc.rs.svc.Client().GetWorkflowHistory(context.Background(), workflows.SessionWorkflowID(checkerSession), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return
		}
		what := ev.GetEventType().String()
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			what += " " + a.GetActivityType().GetName()
		}
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
			what += " " + a.GetSignalName()
		}
		sc.log = append(sc.log, ev.GetEventTime().AsTime().Format("15:04:05.000")+" (session) "+what)
	}
}

// firstLine is the first line of s, for the report.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
