package main_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// recordRange records messages from..to of chat through the ingest endpoint, 16 at a time.
func recordRange(t testing.TB, ingest, chat string, from, to int) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(16)
	for i := from; i <= to; i++ {
		g.Go(func() error {
			req, _ := http.NewRequest(http.MethodPost, "http://"+ingest+"/v1/intents",
				strings.NewReader(fmt.Sprintf(`{"chat_id":%q,"message_id":%d,"text":"burst %d"}`, chat, i, i)))
			req.Header.Set("Authorization", "Bearer tok")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("record %d: %w", i, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				return fmt.Errorf("record %d: %s", i, resp.Status)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// procStat reads a process's resident memory (bytes) and CPU time used so far.
func procStat(t testing.TB, pid int) (rss int64, cpu time.Duration) {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			rss = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command (which may hold spaces): state is field 3, utime 14, stime 15.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return rss, time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

// BenchmarkN15PendingScale grows one worker's pending intents to 10, 1,000 and 10,000 (ingest
// door) and measures at each size, once the burst's work is done: every hook's wall time as
// Claude Code runs it (`intentq-hook hook EVENT`, as setup installs it, a new process each time, p50 and max of 20;
// post-tool-use after Read, and after Bash with the reminder of old intents due every time),
// `starter pending` listing them all, the worker's resident memory and its idle CPU over 30 s
// (reminders are an hour away: nothing is due); and, once, the floor under every hook: a
// starter process that does nothing.
func BenchmarkN15PendingScale(b *testing.B) {
	bin := binaries(b)
	inputs := map[string]string{
		"session-start":      `{"session_id":"s","source":"startup"}`,
		"user-prompt-submit": `{"session_id":"s","prompt":"hello","prompt_id":"p%d"}`,
		"pre-tool-use":       `{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		"post-tool-use":      `{"session_id":"s","tool_name":"Read","tool_input":{"file_path":"x"},"tool_use_id":"toolu_%d"}`,
		"post-tool-use-bash": `{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_b%d"}`,
		"stop":               `{"session_id":"s","stop_hook_active":false,"last_assistant_message":"done"}`,
		"notification":       `{"session_id":"s","notification_type":"idle_prompt"}`,
	}
	// The floor under every hook: a starter process that only prints its help (process start
	// and Go's init; what the hooks add to it is what grows, or not, with pending intents).
	var floor []time.Duration
	for i := 0; i < 20; i++ {
		start := time.Now()
		if out, err := exec.Command(filepath.Join(bin, "starter"), "--help").CombinedOutput(); err != nil {
			b.Fatalf("starter --help: %v %s", err, out)
		}
		floor = append(floor, time.Since(start))
	}
	slices.Sort(floor)
	b.ReportMetric(float64(floor[len(floor)/2].Microseconds())/1000, "process-floor-p50-ms")
	for range b.N {
		env, _, ingest := ingestEnv(b, "INTENTQ_AGENT_ID=secretary", "INTENTQ_REMINDERS_FIRST_AFTER=1h",
			"INTENTQ_HOOKS_REMIND_AFTER=1s", "INTENTQ_HOOKS_REMIND_EVERY=1ms")
		w, lines := startWorker(b, bin, env)
		waitFor(b, lines, "ready", 60*time.Second)
		recorded := 0
		for _, pending := range []int{10, 1000, 10000} {
			recordRange(b, ingest, "3", recorded+1, pending)
			recorded = pending
			// Steady state: once the burst's work is done (the server runs each intent's first
			// task and writes visibility for minutes after a big one; a lull of 10 s in it is not
			// the end of it), three 10 s windows in a row under 2 % of a core, at most 8 minutes.
			_, last := procStat(b, w.Process.Pid)
			settled := time.Now()
			for quiet, deadline := 0, time.Now().Add(8*time.Minute); quiet < 3 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Second)
				_, now := procStat(b, w.Process.Pid)
				busy := (now - last).Seconds() / 10
				last = now
				if busy < 0.02 {
					quiet++
				} else {
					quiet = 0
				}
			}
			b.ReportMetric(time.Since(settled).Seconds(), fmt.Sprintf("settle-s@%d", pending))
			// starter pending lists them all once visibility has caught up.
			var listed time.Duration
			for deadline := time.Now().Add(2 * time.Minute); ; {
				start := time.Now()
				out, code := run(b, filepath.Join(bin, "starter"), env, "", "pending", "--json")
				listed = time.Since(start)
				if code == 0 && strings.Count(out, `"id":`) == pending {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("starter pending lists %d of %d (exit %d)", strings.Count(out, `"id":`), pending, code)
				}
				time.Sleep(time.Second)
			}
			b.ReportMetric(float64(listed.Milliseconds()), fmt.Sprintf("pending-list-ms@%d", pending))
			for _, event := range []string{"session-start", "user-prompt-submit", "pre-tool-use", "post-tool-use", "post-tool-use-bash", "stop", "notification"} {
				var times []time.Duration
				for i := 0; i < 20; i++ {
					input := inputs[event]
					if strings.Contains(input, "%d") {
						input = fmt.Sprintf(input, pending*100+i)
					}
					start := time.Now()
					cmd := exec.Command(filepath.Join(bin, "intentq-hook"), "hook", strings.TrimSuffix(event, "-bash"))
					cmd.Env, cmd.Stdin = env, strings.NewReader(input)
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("hook %s: %v %s", event, err, out)
					}
					times = append(times, time.Since(start))
				}
				slices.Sort(times)
				b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, fmt.Sprintf("%s-p50-ms@%d", event, pending))
				b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, fmt.Sprintf("%s-max-ms@%d", event, pending))
			}
			_, cpu0 := procStat(b, w.Process.Pid)
			time.Sleep(30 * time.Second)
			rss, cpu1 := procStat(b, w.Process.Pid)
			b.ReportMetric(float64(rss>>20), fmt.Sprintf("rss-MiB@%d", pending))
			b.ReportMetric(100*(cpu1-cpu0).Seconds()/30, fmt.Sprintf("idle-cpu-%%@%d", pending))
		}
		_ = w.Process.Kill()
		_ = w.Wait()
	}
}
