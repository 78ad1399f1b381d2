// Package runlog reads the log the fake agent CLI (activities/testdata/fakeclaude.sh) keeps of
// its `conc` prompts: when each run started and ended, for which session and prompt, on which
// worker (the CLI's parent process). Tests of the headless limit read it.
package runlog

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Event is one line: a run's start or end.
type Event struct {
	At                 int64 // nanoseconds
	Start              bool
	Session, N, Worker string
}

// Read returns the log's events in time order (an end before a start at the same instant).
func Read(t testing.TB, path string) []Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []Event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line) // start|end <ns> conc <session> <n> <worker pid>
		if len(f) != 6 {
			t.Fatalf("run log line %q", line)
		}
		at, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatalf("run log line %q: %v", line, err)
		}
		events = append(events, Event{At: at, Start: f[0] == "start", Session: f[3], N: f[4], Worker: f[5]})
	}
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].At != events[j].At {
			return events[i].At < events[j].At
		}
		return !events[i].Start
	})
	return events
}

// Summary is what the runs show.
type Summary struct {
	// MostAtOnce is the most runs that overlapped.
	MostAtOnce int
	// Order is each session's prompts in the order they started.
	Order map[string][]string
	// Workers are the workers that ran any.
	Workers map[string]bool
}

// Summarize reads events (in time order).
func Summarize(events []Event) Summary {
	s := Summary{Order: map[string][]string{}, Workers: map[string]bool{}}
	running := 0
	for _, e := range events {
		if !e.Start {
			running--
			continue
		}
		running++
		s.MostAtOnce = max(s.MostAtOnce, running)
		s.Order[e.Session] = append(s.Order[e.Session], e.N)
		s.Workers[e.Worker] = true
	}
	return s
}
