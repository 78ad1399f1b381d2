package private

// Folders by descriptor (issue 61, finding 4): a folder that holds locks or sockets is opened
// once, without following a link, and checked on the opened descriptor, so the folder checked
// is the folder used; nothing is looked up by name again, and a folder that another user made
// first, or a link in its place, is refused rather than taken.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrNotOwnDir marks a folder that is not this user's own private folder (another user's, open
// to others, or a link or a file in its place).
var ErrNotOwnDir = errors.New("not a private folder of this user's")

// OpenDirAt opens the folder name inside parent without following a link, making it (0700) when
// it is missing, and refuses it (ErrNotOwnDir) unless it is a folder of this user's with mode
// 0700.
func OpenDirAt(parent *os.File, name string) (*os.File, error) {
	path := filepath.Join(parent.Name(), name)
	created := true
	if err := unix.Mkdirat(int(parent.Fd()), name, 0o700); err != nil {
		if err != unix.EEXIST {
			return nil, fmt.Errorf("create %s: %w", path, &os.PathError{Op: "mkdir", Path: path, Err: err})
		}
		created = false
	}
	fd, err := unix.Openat(int(parent.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return nil, fmt.Errorf("%s is a link or a file, not a folder: remove it (intentq makes its own): %w", path, ErrNotOwnDir)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	d := os.NewFile(uintptr(fd), path)
	if created {
		// Made just now by this process: a umask narrower than 077 must not leave it unusable.
		if err := unix.Fchmod(fd, 0o700); err != nil {
			_ = d.Close()
			return nil, fmt.Errorf("chmod %s: %w", path, err)
		}
	}
	if err := CheckOwnDir(d); err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

// CheckOwnDir refuses the open folder d (ErrNotOwnDir) unless it belongs to this user and has
// mode 0700. The error names the folder, its owner or mode, and what to do.
func CheckOwnDir(d *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", d.Name(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a folder: %w", d.Name(), ErrNotOwnDir)
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): another user may have made it first; remove it (intentq makes its own): %w",
			d.Name(), st.Uid, uid, ErrNotOwnDir)
	}
	if perm := st.Mode & 0o7777; perm != 0o700 {
		return fmt.Errorf("%s has mode %04o, not 0700: others could change what is in it; run `chmod 700 %s` if it is yours: %w",
			d.Name(), perm, d.Name(), ErrNotOwnDir)
	}
	return nil
}

// OpenOwnDir opens the folder at path, making it (and its parents, 0700) when missing: a folder
// the person configured (data_dir), so links on the way are theirs and followed. One that
// belongs to another user is refused (ErrNotOwnDir); one open to group or others is closed to
// them (by descriptor, as Fix does by path at the worker's start).
func OpenOwnDir(path string) (*os.File, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	d := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		_ = d.Close()
		return nil, fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): use a folder of your own: %w", path, st.Uid, uid, ErrNotOwnDir)
	}
	if st.Mode&0o077 != 0 {
		if err := unix.Fchmod(fd, uint32(st.Mode&0o7700)); err != nil {
			_ = d.Close()
			return nil, fmt.Errorf("%s is open to others: %w", path, err)
		}
	}
	return d, nil
}
