package instance

// Where machine-wide locks live (issue 61, finding 4). The host lock and the embedded server's
// port claims keep apart workers with different data_dirs, so they need a folder shared by all of
// this user's processes; it used to be in the system's temporary folder, where another user
// could make $TMPDIR/intentq-<uid> first (MkdirAll took it) or put links in it. Now only a
// runtime folder that is this user's alone, or data_dir, and each folder and file is opened
// without following a link and checked on its descriptor (private.OpenDirAt, TryLock).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/intentq/intentq/internal/base/private"
)

// RuntimeName is intentq's folder inside a runtime folder; DataDirLocks the lock folder in
// data_dir when there is no private runtime folder.
const (
	RuntimeName  = "intentq"
	DataDirLocks = "locks"
)

// runtimeBase is a folder the lock folder may be made in.
type runtimeBase struct {
	path string
	// shared: a system folder (root's /run) that others may enter but only its owner may change;
	// else the folder must be this user's with mode 0700 (a runtime folder of the user's own).
	shared bool
}

// runtimeBases are the folders LockDir tries, in order: $XDG_RUNTIME_DIR, /run/user/<uid>, and
// for root /run (only root can create in it).
func runtimeBases() []runtimeBase {
	var bases []runtimeBase
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		bases = append(bases, runtimeBase{path: d})
	}
	uid := os.Getuid()
	bases = append(bases, runtimeBase{path: "/run/user/" + strconv.Itoa(uid)})
	if uid == 0 {
		bases = append(bases, runtimeBase{path: "/run", shared: true})
	}
	return bases
}

// LockDir opens the folder for this user's machine-wide locks (the host lock, the embedded
// server's port claims), by descriptor: RuntimeName in the first private runtime folder
// ($XDG_RUNTIME_DIR, else /run/user/<uid>, when it is this user's own folder with mode 0700;
// for root, /run; one where it cannot be made is passed over), else DataDirLocks in dataDir,
// where a lock keeps apart only processes that share dataDir. The folder must be this user's
// with mode 0700: one that is not (another user made it first, a link in its place) is refused
// with an error that names it (private.ErrNotOwnDir).
func LockDir(dataDir string) (*os.File, error) { return lockDir(dataDir, runtimeBases()) }

func lockDir(dataDir string, bases []runtimeBase) (*os.File, error) {
	for _, b := range bases {
		base, err := openRuntimeBase(b)
		if err != nil {
			continue // not there, or not private: the next one
		}
		d, err := private.OpenDirAt(base, RuntimeName)
		_ = base.Close()
		if errors.Is(err, private.ErrNotOwnDir) {
			return nil, fmt.Errorf("lock folder: %w", err) // there, but not ours: say so
		}
		if err != nil {
			continue // cannot be made there (a read-only /run): the next one
		}
		return d, nil
	}
	data, err := private.OpenOwnDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("lock folder: data_dir: %w", err)
	}
	defer data.Close()
	d, err := private.OpenDirAt(data, DataDirLocks)
	if err != nil {
		return nil, fmt.Errorf("lock folder: %w", err)
	}
	return d, nil
}

// openRuntimeBase opens b's folder without following a link and checks it on the descriptor:
// this user's with mode 0700, or, shared, this user's and writable by no one else.
func openRuntimeBase(b runtimeBase) (*os.File, error) {
	fd, err := unix.Open(b.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: b.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), b.path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("stat %s: %w", b.path, err)
	}
	ok := int(st.Uid) == os.Getuid() && st.Mode&0o777 == 0o700
	if b.shared {
		ok = int(st.Uid) == os.Getuid() && st.Mode&0o022 == 0
	}
	if !ok {
		_ = f.Close()
		return nil, errors.New(b.path + " is not a private runtime folder of this user's")
	}
	return f, nil
}
