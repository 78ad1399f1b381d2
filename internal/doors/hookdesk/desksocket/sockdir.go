package desksocket

// The socket's folder by descriptor (issue 33, item 8): the desk's socket is always
// data_dir/hooks.sock, however long data_dir is. A Unix socket's address holds 107 bytes at
// most, so the desk binds, and its hooks connect, through a descriptor of the folder:
// "/proc/self/fd/<n>/hooks.sock" is short whatever the folder's path. Nothing goes under a
// shared temporary folder, where another user could create the folder first (the desk off) or
// put a link there (the worker changing a folder of theirs); and the folder the desk checks is
// the one it binds in and sets private, by descriptor, never by path again.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// socketName is the desk's socket in data_dir.
const socketName = "hooks.sock"

// SocketPath is where the desk of the intentq whose data_dir is dataDir listens:
// data_dir/hooks.sock, whatever its length (Listen and Client reach it through a descriptor
// of data_dir).
func SocketPath(dataDir string) string { return filepath.Join(dataDir, socketName) }

// socketDir is an open folder that holds a socket.
type socketDir struct {
	f    *os.File
	name string
}

// openSocketDir opens the folder of the socket at path: flags are added to
// O_DIRECTORY|O_CLOEXEC (O_PATH for a client, which only connects through it).
func openSocketDir(path string, flags int) (*socketDir, error) {
	dir := filepath.Dir(path)
	fd, err := unix.Open(dir, flags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the socket's folder: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	return &socketDir{f: os.NewFile(uintptr(fd), dir), name: filepath.Base(path)}, nil
}

// addr is the socket's address through the folder's descriptor, short whatever its path.
func (d *socketDir) addr() string {
	return "/proc/self/fd/" + strconv.Itoa(int(d.f.Fd())) + "/" + d.name
}

// private refuses a folder that is not this user's own, and closes one that others may enter
// (by its descriptor: the folder checked is the folder changed).
func (d *socketDir) private() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(d.f.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", d.f.Name(), err)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", d.f.Name(), st.Uid, os.Getuid())
	}
	if st.Mode&0o077 != 0 {
		if err := unix.Fchmod(int(d.f.Fd()), 0o700); err != nil {
			return fmt.Errorf("%s is open to others: %w", d.f.Name(), err)
		}
	}
	return nil
}

// unlink removes the socket from the folder (none there is no error).
func (d *socketDir) unlink() error {
	if err := unix.Unlinkat(int(d.f.Fd()), d.name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("remove %s: %w", filepath.Join(d.f.Name(), d.name), err)
	}
	return nil
}

// chmod sets the socket's mode, relative to the folder.
func (d *socketDir) chmod(mode uint32) error {
	if err := unix.Fchmodat(int(d.f.Fd()), d.name, mode, 0); err != nil {
		return fmt.Errorf("chmod %s: %w", filepath.Join(d.f.Name(), d.name), err)
	}
	return nil
}

// close closes the folder's descriptor.
func (d *socketDir) close() error { return d.f.Close() }
