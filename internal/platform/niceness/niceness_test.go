package niceness

import (
	"runtime"
	"sync"
	"testing"
)

// Every thread of the process, and every thread started after, runs at the niceness asked.
func TestLowerReachesEveryThreadAndItsChildren(t *testing.T) {
	// Threads before: goroutines locked to threads of their own, blocked.
	release := make(chan struct{})
	var wg sync.WaitGroup
	// spawn returns once n more goroutines each hold a thread of their own.
	spawn := func(n int) {
		started := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				started <- struct{}{}
				<-release
			}()
		}
		for range n {
			<-started
		}
	}
	spawn(4)
	// Nicer than the test runs (a user's process may only become nicer).
	before, err := Of(0)
	if err != nil {
		t.Fatal(err)
	}
	want := 3
	for _, n := range before {
		want = min(Max, max(want, n+3))
	}
	if err := Lower(want); err != nil {
		t.Fatal(err)
	}
	spawn(4) // threads after
	threads, err := Of(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) < 9 {
		t.Fatalf("%d threads, want at least 9", len(threads))
	}
	for tid, n := range threads {
		if n != want {
			t.Errorf("thread %d at niceness %d, want %d", tid, n, want)
		}
	}
	close(release)
	wg.Wait()
}

func TestLowerRefusesOutOfRange(t *testing.T) {
	for _, n := range []int{0, -1, Max + 1} {
		if err := Lower(n); err == nil {
			t.Errorf("Lower(%d) accepted", n)
		}
	}
}
