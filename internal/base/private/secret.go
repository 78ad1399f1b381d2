package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Secrets intentq makes itself (the access token, the internode key, a keyring's new key) are
// written so that a crash or a disk error never leaves them empty or half-written (issue 61: a
// data_dir that went read-only mid-burst left access.token empty, and the next start refused
// it): a new temporary file in the same folder, made durable (fsync), then moved into place and
// the folder made durable too, so the rename itself survives a power loss.

// WriteSecret writes data to path as a private file (0600, its folder made 0700 when missing):
// a reader sees the old content or the new, never an empty or partial file, and the new content
// and its name are on disk when it returns. A failed write leaves path as it was.
func WriteSecret(path string, data []byte) error { return writeSecret(path, data, true) }

// CreateSecret is WriteSecret for a file that must not exist yet: when path exists, it is left
// alone and the error wraps fs.ErrExist (two processes creating it at once: the first one's
// content stands, and the second reads it).
func CreateSecret(path string, data []byte) error { return writeSecret(path, data, false) }

// staleTemp is how old a temporary file of a secret must be before a later write removes it as
// left by a crash (a write in progress takes milliseconds).
const staleTemp = time.Minute

func writeSecret(path string, data []byte, replace bool) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	pattern := "." + base + ".*.tmp"
	removeStale(dir, pattern)
	f, err := os.CreateTemp(dir, pattern) // 0600, O_EXCL
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // gone once renamed; after a link, the name to drop
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if replace {
		err = os.Rename(tmp, path)
	} else {
		err = createFrom(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// createFrom gives the complete file tmp the name path unless path exists: a hard link fails
// when the name is taken, atomically. On a file system without hard links the name is checked
// first (a race there lets a second creator replace the first: both hold a whole file).
func createFrom(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, serr := os.Lstat(path); serr == nil {
		return &os.LinkError{Op: "create", Old: tmp, New: path, Err: fs.ErrExist}
	}
	return os.Rename(tmp, path)
}

// removeStale removes temporary files matching pattern in dir that a crashed write left.
func removeStale(dir, pattern string) {
	left, _ := filepath.Glob(filepath.Join(dir, pattern))
	for _, p := range left {
		if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() && time.Since(info.ModTime()) > staleTemp {
			_ = os.Remove(p)
		}
	}
}

// SyncDir makes the entries of the folder dir durable (a new or renamed file's name survives a
// power loss). File systems that cannot sync a folder (EINVAL) are left as they are.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}
