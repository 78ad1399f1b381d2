// Package niceness lowers the CPU priority of the whole process. Linux keeps a niceness per
// thread and a new thread inherits its creator's, so once every thread of the process is set,
// the threads it starts later (the Go runtime's, the embedded server's) follow.
package niceness

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Max is the lowest priority a process can take (niceness 19).
const Max = 19

// Lower sets every thread of this process to niceness n (1..Max). A thread already nicer keeps
// its niceness unless the process may raise priorities (root). A thread started while Lower runs
// may keep its creator's old value, so the threads are read twice.
func Lower(n int) error {
	if n < 1 || n > Max {
		return fmt.Errorf("niceness: %d is outside 1..%d", n, Max)
	}
	for range 2 {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("niceness: list threads: %w", err)
		}
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			err = unix.Setpriority(unix.PRIO_PROCESS, tid, n)
			switch {
			case err == nil, errors.Is(err, unix.ESRCH): // set, or the thread has ended
			case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM): // nicer already
			default:
				return fmt.Errorf("niceness: thread %d: %w", tid, err)
			}
		}
	}
	return nil
}

// Of is the niceness of each thread of process pid (0: this process), by thread id.
func Of(pid int) (map[int]int, error) {
	dir := "/proc/self/task"
	if pid != 0 {
		dir = fmt.Sprintf("/proc/%d/task", pid)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("niceness: list threads: %w", err)
	}
	out := map[int]int{}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// getpriority(2) returns 20 - niceness (1..40), so that no value is negative.
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("niceness: thread %d: %w", tid, err)
		}
		out[tid] = 20 - prio
	}
	return out, nil
}
