package main_test

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/testkit/testenv"
)

// Issue 15: temporal.workflow_cache bounds the workflows the worker keeps in memory, also with
// the embedded server, whose own system workers start first (the SDK fixes its process-wide
// cache at the first worker: set later, its default of 10,000 held every pending intent of a
// big backlog, 1 GB at 10,000).
func TestWorkflowCacheBoundsPendingIntents(t *testing.T) {
	t.Parallel() // end to end: waits on real time; every test has its own home, tmux server and ports
	const cache, pending = 3, 12
	bin := binaries(t)
	metrics := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	env, _, ingest := ingestEnv(t, "INTENTQ_AGENT_ID=secretary", fmt.Sprintf("INTENTQ_TEMPORAL_WORKFLOW_CACHE=%d", cache), "INTENTQ_METRICS_LISTEN="+metrics)
	_, lines := startWorker(t, bin, env)
	waitFor(t, lines, "ready", 60*time.Second)
	recordBurst(t, ingest, "41", pending)
	// Each intent has run in the worker once it answers a query.
	for i := 1; i <= pending; i++ {
		if out, code := run(t, filepath.Join(bin, "starter"), env, "", "show", fmt.Sprintf("intent/41/%d", i)); code != 0 {
			t.Fatalf("starter show intent/41/%d: exit %d %s", i, code, out)
		}
	}
	// The SDK reports the cache's size after each workflow task; the reporter publishes it
	// within a second.
	gauge := regexp.MustCompile(`(?m)^temporal_sticky_cache_size\{[^}]*\} (\S+)$`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := gauge.FindStringSubmatch(string(body)); m != nil {
			size, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatalf("sticky cache size %q: %v", m[1], err)
			}
			if size > cache {
				t.Fatalf("the worker caches %v workflows, temporal.workflow_cache is %d", size, cache)
			}
			if size > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no temporal_sticky_cache_size in the worker's metrics:\n%s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
