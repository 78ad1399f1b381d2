// Package private keeps intentq's files to their owner: everything under data_dir holds message
// text or secrets (the Temporal database and its -wal and -shm, history, archive, backups,
// spool), so files are 0600 and folders 0700.
package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Umask makes the process create files without group or other access (umask 077), whoever
// creates them: intentq, SQLite, the Temporal server.
func Umask() { syscall.Umask(0o077) }

// Fix creates dir (0700) when it is missing and takes group and other access off dir and
// everything under it. Symbolic links are left alone, and so is what they point to.
func Fix(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking (a SQLite -shm file, a rotated spool)
			}
			return fmt.Errorf("walk %s: %w", path, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("stat %s: %w", path, err)
		}
		mode := info.Mode().Perm()
		if mode&0o077 == 0 {
			return nil
		}
		if err := os.Chmod(path, mode&^0o077); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("make %s private: %w", path, err)
		}
		return nil
	})
}

// WriteFile writes data to path as a private file (0600, its folder created 0700), atomically
// and durably: a reader sees the old content or the new, never half of it, and the new content
// is on disk when it returns. A temporary file left by a crash is replaced, never reused with
// its mode.
func WriteFile(path string, data []byte) error { return write(path, data, true) }

// WriteFileAtomic is WriteFile without the fsync: the new content survives a crash of any
// process (the kernel has it), not a power loss. For state that only matters while the
// machine's processes live (what a hook took from an agent's session, what was typed into a
// pane: a power loss ends the agent and the pane too), written on every delivery, where an
// fsync each time queued hooks behind the disk during a burst.
func WriteFileAtomic(path string, data []byte) error { return write(path, data, false) }

func write(path string, data []byte, durable bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
