// Package diskfault plays a disk that fails in the middle of a write, for tests of durable
// writes (issue 61: a data_dir that went read-only mid-burst left the access token empty). A
// test runs its writer in a child process (the test binary again) that calls LimitWrites first.
package diskfault

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LimitWrites lets this process write files up to limit bytes: a write past it stops there.
// With die false the write returns an error (EFBIG: Go ignores SIGXFSZ), as on a full disk;
// with die true the kernel's default for SIGXFSZ kills the process at that write, as a crash or
// a power loss does before the data reached the disk. Only for a child process: the limit is
// the whole process's.
func LimitWrites(limit uint64, die bool) error {
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		return fmt.Errorf("setrlimit: %w", err)
	}
	if !die {
		return nil
	}
	// struct sigaction as the kernel takes it, all zero: SIG_DFL, no flags, an empty mask.
	var sa [4]uint64
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGXFSZ), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); errno != 0 {
		return fmt.Errorf("rt_sigaction(SIGXFSZ, SIG_DFL): %w", errno)
	}
	return nil
}

// Killed reports whether err, a child process's end (exec.Cmd's Run or Wait), says that
// LimitWrites killed it at a write (SIGXFSZ).
func Killed(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	return ok && status.Signaled() && status.Signal() == syscall.SIGXFSZ
}
