// Package instance keeps one worker per data_dir: the hook desk's journals, the typing markers,
// the embedded server's database and the access token live there, and two workers sharing them
// would each answer from their own copy (issue 38).
package instance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// FileName is the lock file in data_dir.
const FileName = "worker.lock"

// Holder is what the lock file says about the worker that holds it.
type Holder struct {
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	Host      string    `json:"host,omitempty"`
}

// InUseError says that another worker holds data_dir.
type InUseError struct {
	DataDir string
	Holder  Holder
}

func (e *InUseError) Error() string {
	who := "another worker"
	if e.Holder.PID > 0 {
		who = fmt.Sprintf("another worker (pid %d, started %s)", e.Holder.PID, e.Holder.StartedAt.Local().Format(time.DateTime))
	}
	return fmt.Sprintf("data_dir %s is in use by %s: stop it, or give this worker its own data_dir", e.DataDir, who)
}

// Lock is the held lock; Release lets it go (the process's end does too).
type Lock struct {
	f *os.File
}

// Acquire takes data_dir for this process, or fails at once with an InUseError naming the
// worker that holds it. The lock is the kernel's (flock): a worker that died holds nothing.
func Acquire(dataDir string) (*Lock, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data_dir %s: %w", dataDir, err)
	}
	path := filepath.Join(dataDir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		var h Holder
		if data, rerr := os.ReadFile(path); rerr == nil {
			_ = json.Unmarshal(data, &h)
		}
		return nil, &InUseError{DataDir: dataDir, Holder: h}
	}
	host, _ := os.Hostname()
	data, err := json.Marshal(Holder{PID: os.Getpid(), StartedAt: time.Now().UTC(), Host: host})
	if err == nil {
		if err = f.Truncate(0); err == nil {
			_, err = f.WriteAt(append(data, '\n'), 0)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Release lets data_dir go.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// HostKey names the sessions of one host in one deployment: a Temporal cluster (its address
// and namespace), a task queue, and the host's name.
type HostKey struct {
	Address, Namespace, TaskQueue, Host string
}

// HostInUseError says that another worker on this machine serves the host's sessions.
type HostInUseError struct {
	Host   string
	Holder Holder
}

func (e *HostInUseError) Error() string {
	return fmt.Sprintf("another worker (pid %d, started %s) serves host %s's sessions", e.Holder.PID, e.Holder.StartedAt.Local().Format(time.DateTime), e.Host)
}

// AcquireHost takes the serving of a host's sessions for this process, on this machine: a
// second worker of the same deployment that names the same host (the README's second worker on
// one machine) gets a HostInUseError and serves only the shared task queue, so no setup splits a
// session across two workers' hook desks. The lock lives in a folder of this user's in the
// system's temporary folder (0700), one file per key.
func AcquireHost(k HostKey) (*Lock, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("intentq-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	sum := sha256.Sum256([]byte(k.Address + "\x00" + k.Namespace + "\x00" + k.TaskQueue + "\x00" + k.Host))
	l, err := Acquire(filepath.Join(dir, "host-"+hex.EncodeToString(sum[:8])))
	var inUse *InUseError
	if errors.As(err, &inUse) {
		return nil, &HostInUseError{Host: k.Host, Holder: inUse.Holder}
	}
	return l, err
}
