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
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/intentq/intentq/internal/base/private"
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
// data_dir must be this user's own (another user's is refused), and the lock file is opened
// through data_dir's descriptor without following a link.
func Acquire(dataDir string) (*Lock, error) {
	dir, err := private.OpenOwnDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	defer dir.Close()
	l, err := acquireAt(dir, FileName)
	var inUse *InUseError
	if errors.As(err, &inUse) {
		inUse.DataDir = dataDir
	}
	return l, err
}

// acquireAt takes the lock file name in dir and writes this process into it; an InUseError
// (without DataDir) names the holder when another process has it.
func acquireAt(dir *os.File, name string) (*Lock, error) {
	f, ok, err := TryLock(dir, name)
	if err != nil {
		return nil, err
	}
	path := f.Name()
	if !ok {
		defer f.Close()
		var h Holder
		if data, rerr := io.ReadAll(io.LimitReader(f, 4096)); rerr == nil {
			_ = json.Unmarshal(data, &h)
		}
		return nil, &InUseError{Holder: h}
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

// TryLock opens the lock file name in the folder dir (created 0600 when missing; never through a
// link, nor a file that is not a regular file of this user's) and takes the kernel's exclusive
// lock on it (flock) without waiting. ok false: another process holds it (f is open, unlocked,
// for reading what the holder wrote); the kernel lets go of a lock when its process ends.
func TryLock(dir *os.File, name string) (f *os.File, ok bool, err error) {
	path := filepath.Join(dir.Name(), name)
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err == unix.ELOOP {
		return nil, false, fmt.Errorf("lock file %s is a link: remove it (intentq makes its own): %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	f = os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Getuid() {
		f.Close()
		return nil, false, fmt.Errorf("lock file %s is not a file of this user's (uid %d, mode %o): remove it", path, st.Uid, st.Mode)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if err == unix.EWOULDBLOCK {
			return f, false, nil
		}
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, true, nil
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

// lockName is the key's lock file in the lock folder.
func (k HostKey) lockName() string {
	sum := sha256.Sum256([]byte(k.Address + "\x00" + k.Namespace + "\x00" + k.TaskQueue + "\x00" + k.Host))
	return "host-" + hex.EncodeToString(sum[:8]) + ".lock"
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
// session across two workers' hook desks. The lock is a file per key in this user's lock folder
// (LockDir): machine-wide in a private runtime folder, else in dataDir, where it only keeps
// apart workers that share dataDir.
func AcquireHost(dataDir string, k HostKey) (*Lock, error) {
	dir, err := LockDir(dataDir)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	l, err := acquireAt(dir, k.lockName())
	var inUse *InUseError
	if errors.As(err, &inUse) {
		return nil, &HostInUseError{Host: k.Host, Holder: inUse.Holder}
	}
	return l, err
}
