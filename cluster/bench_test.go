package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/testkit/fakebot"
	"github.com/intentq/intentq/internal/testkit/procs"
	"github.com/intentq/intentq/internal/testkit/testenv"
	"github.com/intentq/intentq/workflows"
)

// BenchmarkN13Burst measures, in one run, a Telegram burst recorded by the door: intents/s (all
// updates acknowledged, that is durably started) and p50/p99 from the update being served to
// the door to its intent's workflow start, with one and two workers on the PostgreSQL cluster
// (payloads encrypted) and with one worker on the embedded server.
func BenchmarkN13Burst(b *testing.B) {
	const n = 300
	c := up(b)
	bin := procs.Binaries(b)
	for i := range b.N {
		for r, run := range []struct {
			name    string
			workers int
			address string
		}{{"embedded", 1, ""}, {"postgres-1-worker", 1, c.Address}, {"postgres-2-workers", 2, c.Address}} {
			// Each run its own chat: the same message twice is one intent.
			chat := int64(1000*(i+1) + r)
			home := b.TempDir()
			cfgFile := filepath.Join(home, "config.yaml")
			cfg := fmt.Sprintf("reminders:\n  first_after: 1h\ntelegram:\n  allowed_chat_ids: [%d]\nsessions:", chat) + "\n  bench:\n    tmux_target: \"bench:0\"\n    human: true\n    default: true\n"
			if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
				b.Fatal(err)
			}
			bot := fakebot.New("55:bench")
			namespace := fmt.Sprintf("bench%d-%d", i, r)
			address := run.address
			var envs [][]string
			for w := 0; w < run.workers; w++ {
				env := c.workerEnv(b, home, cfgFile, fmt.Sprintf("w%d", w), "INTENTQ_TEMPORAL_NAMESPACE="+namespace)
				if run.address == "" {
					port := testenv.FreePort(b)
					address = fmt.Sprintf("127.0.0.1:%d", port)
					env = append(env, "INTENTQ_TEMPORAL_ADDRESS=", fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_PORT=%d", port),
						fmt.Sprintf("INTENTQ_TEMPORAL_EMBEDDED_UI_PORT=%d", testenv.FreePort(b)))
				}
				if w == 0 {
					env = append(env, "INTENTQ_TELEGRAM_TOKEN=55:bench", "INTENTQ_TELEGRAM_API_ENDPOINT="+bot.Endpoint())
				}
				envs = append(envs, env)
			}
			var workers []*procs.Worker
			for _, env := range envs {
				w := procs.StartWorker(b, bin, env)
				w.WaitFor(b, "ready", 90*time.Second)
				workers = append(workers, w)
			}
			updates := make([]int, n+1)
			began := time.Now()
			for m := 1; m <= n; m++ {
				updates[m] = bot.AddMessage(chat, chat, m, fmt.Sprintf("burst %d", m))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			if err := bot.WaitConfirmed(ctx, updates[n]); err != nil {
				b.Fatal(err)
			}
			cancel()
			elapsed := time.Since(began)

			opts := client.Options{HostPort: address, Namespace: namespace}
			if run.address == "" {
				// The embedded server requires the worker's access token.
				tok, err := trust.ReadToken(trust.TokenPath(filepath.Join(home, "w0")))
				if err != nil {
					b.Fatal(err)
				}
				opts.Credentials = client.NewAPIKeyStaticCredentials(tok)
				opts.ConnectionOptions.TLSDisabled = true
			}
			cl, err := client.Dial(opts)
			if err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			for m := 1; m <= n; m++ {
				desc, err := cl.DescribeWorkflowExecution(context.Background(), workflows.IntentID(fmt.Sprint(chat), fmt.Sprint(m)), "")
				if err != nil {
					b.Fatalf("%s: intent %d: %v", run.name, m, err)
				}
				lat = append(lat, desc.GetWorkflowExecutionInfo().GetStartTime().AsTime().Sub(bot.Served(updates[m])))
			}
			cl.Close()
			slices.Sort(lat)
			b.ReportMetric(float64(n)/elapsed.Seconds(), run.name+"-intents/s")
			b.ReportMetric(float64(lat[n/2].Milliseconds()), run.name+"-p50-ms")
			b.ReportMetric(float64(lat[n*99/100].Milliseconds()), run.name+"-p99-ms")
			for _, w := range workers {
				_ = w.Cmd.Process.Kill()
				_ = w.Cmd.Wait()
			}
			bot.Close()
		}
	}
}
