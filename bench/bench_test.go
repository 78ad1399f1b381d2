// Package bench measures intentq end to end on the embedded Temporal server: how fast the
// Telegram door turns a burst into intents, and how close the first reminder comes to its
// schedule. Run with `make bench`; figures are printed, never asserted against a clock.
package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sync/errgroup"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/service"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/fakentfy"
	"github.com/intentq/intentq/internal/testkit/peers"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

const botToken = "42:bench"

func start(b *testing.B, cfg *config.Config) *service.Service {
	b.Helper()
	return testenv.StartService(b, cfg, zap.NewNop())
}

// startTimes returns the server's start time of every workflow matching query.
func startTimes(b *testing.B, svc *service.Service, query string) map[string]time.Time {
	b.Helper()
	out := map[string]time.Time{}
	var token []byte
	for {
		resp, err := svc.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: query, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			out[e.GetExecution().GetWorkflowId()] = e.GetStartTime().AsTime()
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out
		}
	}
}

// telegramConfig is a config with the Telegram door on a fake Bot API (chat 77 allowed) and
// reminders an hour away.
func telegramConfig(b *testing.B) (*fakebot.Server, *config.Config) {
	bot := fakebot.New(botToken)
	cfg := testenv.Config(b)
	cfg.Telegram.Token = botToken
	cfg.Telegram.APIEndpoint = bot.Endpoint()
	cfg.Telegram.AllowedChatIDs = []int64{77}
	cfg.Reminders.FirstAfter = time.Hour
	return bot, cfg
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkI1TelegramBurst1000: 1,000 messages (plus 50 duplicate deliveries) through the Bot
// API door; intents/s, and p50/p99 from update served to intent workflow started; lost and
// duplicated intents are counted. The chat maps to a headless session, so the figures are the
// door's and not the pane's.
func BenchmarkI1TelegramBurst1000(b *testing.B) {
	const n = 1000
	for i := 0; i < b.N; i++ {
		bot, cfg := telegramConfig(b)
		cfg.Sessions = map[string]config.Session{"bench": {CLI: "claude", Mode: config.ModeHeadless, Default: true}}
		svc := start(b, cfg)

		updates := make(map[string]int, n) // intent ID -> update ID
		b.ResetTimer()
		began := time.Now()
		var last int
		for m := 1; m <= n; m++ {
			last = bot.AddMessage(77, 77, m, fmt.Sprintf("burst %d", m))
			updates[workflows.IntentID("77", strconv.Itoa(m))] = last
			if m%20 == 0 {
				last = max(last, bot.Duplicate(last))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := bot.WaitConfirmed(ctx, last); err != nil {
			b.Fatal(err)
		}
		cancel()
		elapsed := time.Since(began)
		b.StopTimer()

		var started map[string]time.Time
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			started = startTimes(b, svc, "WorkflowType = 'Intent'")
			if len(started) >= n {
				break
			}
		}
		var lat []time.Duration
		lost := 0
		for id, upd := range updates {
			st, ok := started[id]
			if !ok {
				lost++
				continue
			}
			lat = append(lat, st.Sub(bot.Served(upd)))
		}
		dups := len(started) - (n - lost)
		b.ReportMetric(float64(n)/elapsed.Seconds(), "intents/s")
		b.ReportMetric(float64(percentile(lat, 0.50).Milliseconds()), "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Milliseconds()), "p99-ms")
		b.ReportMetric(float64(lost), "lost")
		b.ReportMetric(float64(dups), "duplicates")
		if lost != 0 || dups != 0 {
			b.Errorf("lost %d, duplicated %d of %d", lost, dups, n)
		}
		svc.Stop(context.Background())
		bot.Close()
	}
}

// BenchmarkI6FirstReminderAccuracy: 20 intents recorded at once, the real 30 s first_after; how
// far after 30.0 s each one's first reminder reaches ntfy (p50/p99; reminders due together go
// as one digest push listing them), how many pushes carried them, and when the pane has
// received all 20 reminders (typed together as a digest).
func BenchmarkI6FirstReminderAccuracy(b *testing.B) {
	peers.Tmux(b)
	const n = 20
	for i := 0; i < b.N; i++ {
		ntfy := fakentfy.New()
		cfg := testenv.Config(b)
		cfg.Ingest.Token = "bench"
		cfg.Ntfy.URL = ntfy.URL()
		cfg.Ntfy.Topic = "bench"
		pane := filepath.Join(os.Getenv("TMUX_TMPDIR"), "pane.out")
		if out, err := exec.Command("tmux", "new-session", "-d", "-s", "secretary", "cat > "+pane).CombinedOutput(); err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		svc := start(b, cfg)

		b.ResetTimer()
		for m := 1; m <= n; m++ {
			req, _ := http.NewRequest(http.MethodPost, "http://"+cfg.Ingest.Listen+"/v1/intents",
				strings.NewReader(fmt.Sprintf(`{"chat_id":"5","message_id":%d,"text":"wait for me %d"}`, m, m)))
			req.Header.Set("Authorization", "Bearer bench")
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusCreated {
				b.Fatalf("record: %v %v", err, resp)
			}
			resp.Body.Close()
		}
		for deadline := time.Now().Add(90 * time.Second); strings.Count(fmt.Sprint(ntfy.Messages()), "msg_id=") < n && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		received := map[string]time.Time{}
		for id, t := range startTimes(b, svc, "WorkflowType = 'Intent'") {
			received[strings.TrimPrefix(id, "intent/5/")] = t
		}
		var late []time.Duration
		for _, m := range ntfy.Messages() {
			for _, line := range strings.Split(m.Message, "\n") {
				id := strings.TrimPrefix(strings.Fields(line + " ")[0], "msg_id=")
				if rec, ok := received[id]; ok && strings.HasPrefix(line, "msg_id=") {
					late = append(late, m.Time.Sub(rec)-30*time.Second)
				}
			}
		}
		var paneDone time.Duration
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			data, _ := os.ReadFile(pane)
			if strings.Count(string(data), "【未対応メッセージ】") >= n {
				paneDone = time.Since(received["1"]) - 30*time.Second
				break
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(percentile(late, 0.50).Milliseconds()), "p50-late-ms")
		b.ReportMetric(float64(percentile(late, 0.99).Milliseconds()), "p99-late-ms")
		b.ReportMetric(float64(len(late)), "reminded")
		b.ReportMetric(float64(len(ntfy.Messages())), "pushes")
		b.ReportMetric(paneDone.Seconds(), "all-in-pane-s")
		if len(late) != n {
			b.Errorf("%d of %d intents reminded", len(late), n)
		}
		svc.Stop(context.Background())
		ntfy.Close()
		_ = exec.Command("tmux", "kill-server").Run()
	}
}

// BenchmarkP1SchedulerOverhead: prompts/s through the headless scheduler (session FIFO, global
// permits, audit) with a fake CLI that answers at once: the orchestration overhead per prompt.
// 4 sessions x 25 prompts, limit 2.
func BenchmarkP1SchedulerOverhead(b *testing.B) {
	fake, err := filepath.Abs("../activities/testdata/fakeclaude.sh")
	if err != nil {
		b.Fatal(err)
	}
	const sessions, perSession = 4, 25
	for i := 0; i < b.N; i++ {
		cfg := testenv.Config(b)
		cfg.CLIs["fake"] = config.CLI{Command: fake, HeadlessArgs: []string{"-p", "--output-format", "json"}}
		cfg.Scheduler.MaxConcurrentSessions = 2
		for s := 0; s < sessions; s++ {
			cfg.Sessions[fmt.Sprintf("b%d", s)] = config.Session{CLI: "fake", Mode: config.ModeHeadless}
		}
		svc := start(b, cfg)
		ctx := context.Background()
		b.ResetTimer()
		began := time.Now()
		for n := 0; n < perSession; n++ {
			for s := 0; s < sessions; s++ {
				req := workflows.PromptRequest{Key: fmt.Sprint(n), Text: fmt.Sprintf("ok %d", n)}
				if _, err := headless.Submit(ctx, svc.Client(), cfg, fmt.Sprintf("b%d", s), req, true); err != nil {
					b.Fatal(err)
				}
			}
		}
		for {
			done := int64(0)
			for s := 0; s < sessions; s++ {
				st, err := headless.Audit(ctx, svc.Client(), fmt.Sprintf("b%d", s))
				if err != nil {
					b.Fatal(err)
				}
				done += st.Succeeded + st.Failed
			}
			if done == sessions*perSession {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		elapsed := time.Since(began)
		b.StopTimer()
		b.ReportMetric(float64(sessions*perSession)/elapsed.Seconds(), "prompts/s")
		b.ReportMetric(float64(elapsed.Milliseconds())/float64(sessions*perSession), "ms/prompt")
		svc.Stop(ctx)
	}
}

// BenchmarkN15DoorVsRawStarts compares, three times in one run on one embedded server, the
// engine's own speed (1,000 starts of a waiting workflow, 16 in flight, no worker involved) with
// the Telegram door's (a 1,000-message burst, from the first update to the offset confirming the
// last, every message durably started and queued to its session in arrival order), and the
// ratio of the two. The session's pane is an idle line reader: how long the burst takes to be
// all in it (typed together, a block per prompt) is measured too.
func BenchmarkN15DoorVsRawStarts(b *testing.B) {
	peers.Tmux(b)
	const n, pairs = 1000, 3
	for i := 0; i < b.N; i++ {
		bot, cfg := telegramConfig(b)
		pane := filepath.Join(os.Getenv("TMUX_TMPDIR"), "pane.out")
		if out, err := exec.Command("tmux", "new-session", "-d", "-s", "secretary", "cat > "+pane).CombinedOutput(); err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		core, logs := observer.New(zap.WarnLevel)
		svc := testenv.StartService(b, cfg, zap.New(core))
		c := svc.Client()
		ctx := context.Background()
		atStart := logs.Len()
		b.ResetTimer()
		var ratios []float64
		for pair := 1; pair <= pairs; pair++ {
			began := time.Now()
			var g errgroup.Group
			g.SetLimit(16)
			for m := 0; m < n; m++ {
				g.Go(func() error {
					_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("raw/%d/%d", pair, m), TaskQueue: "raw-starts"}, "RawWait")
					return err
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			raw := float64(n) / time.Since(began).Seconds()

			began = time.Now()
			var last int
			for m := 1; m <= n; m++ {
				last = bot.AddMessage(77, 77, pair*10000+m, fmt.Sprintf("burst %d/%d", pair, m))
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			if err := bot.WaitConfirmed(wctx, last); err != nil {
				b.Fatal(err)
			}
			cancel()
			door := float64(n) / time.Since(began).Seconds()
			var inPane time.Duration
			for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
				data, _ := os.ReadFile(pane)
				if strings.Count(string(data), "【新着メッセージ】") >= pair*n {
					inPane = time.Since(began)
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("pair %d: %d of %d messages in the pane", pair, strings.Count(string(data), "【新着メッセージ】"), pair*n)
				}
			}
			b.ReportMetric(raw, fmt.Sprintf("raw-starts/s#%d", pair))
			b.ReportMetric(door, fmt.Sprintf("door-intents/s#%d", pair))
			b.ReportMetric(door/raw, fmt.Sprintf("door/raw#%d", pair))
			b.ReportMetric(inPane.Seconds(), fmt.Sprintf("all-in-idle-pane-s#%d", pair))
			ratios = append(ratios, door/raw)
		}
		b.StopTimer()
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "door/raw-median")
		// The embedded server's complaints during the bursts (it logs at warn and above).
		busy, qps, errs := 0, 0, 0
		for _, e := range logs.All()[atStart:] {
			if !strings.HasPrefix(e.LoggerName, "temporal") {
				continue
			}
			text := e.Message + fmt.Sprint(e.ContextMap())
			switch {
			case strings.Contains(text, "SQLITE_BUSY") || strings.Contains(text, "database is locked"):
				busy++
			case strings.Contains(text, "Max QPS"):
				qps++
			case e.Level >= zap.ErrorLevel:
				errs++
			}
		}
		b.ReportMetric(float64(busy), "server-sqlite-busy-lines")
		b.ReportMetric(float64(qps), "server-qps-lines")
		b.ReportMetric(float64(errs), "server-other-error-lines")
		svc.Stop(ctx)
		bot.Close()
		_ = exec.Command("tmux", "kill-server").Run()
	}
}
