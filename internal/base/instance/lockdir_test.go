package instance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/intentq/intentq/internal/base/private"
)

// otherUID is the other local user the tests play when they run as root (nobody).
const otherUID = 65534

// asOtherUser gives path to otherUID when the test runs as root, and reports whether it did.
func asOtherUser(t *testing.T, path string) bool {
	t.Helper()
	if os.Getuid() != 0 {
		return false
	}
	if err := os.Lchown(path, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	return true
}

// privateTemp is a new temporary folder of this user's with mode 0700, as a runtime folder is.
func privateTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sharedTemp makes a sticky, world-writable temporary folder the process's TMPDIR, as /tmp is.
func sharedTemp(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	return tmp
}

// Issue 61, finding 4: another user who makes $TMPDIR/intentq-<uid> first (a folder of theirs,
// open to all) or puts a link there to a folder of theirs gets nothing of the host lock: it
// lives in the user's private runtime folder, and nothing is created in the shared one.
func TestHostLockStaysOutOfTheSharedTempFolder(t *testing.T) {
	for _, squat := range []string{"folder", "link"} {
		t.Run(squat, func(t *testing.T) {
			tmp := sharedTemp(t)
			runtime := privateTemp(t)
			t.Setenv("XDG_RUNTIME_DIR", runtime)
			theirs := filepath.Join(t.TempDir(), "theirs")
			if err := os.Mkdir(theirs, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(theirs, 0o777); err != nil {
				t.Fatal(err)
			}
			asOtherUser(t, theirs)
			old := filepath.Join(tmp, fmt.Sprintf("intentq-%d", os.Getuid()))
			if squat == "folder" {
				if err := os.Rename(theirs, old); err != nil {
					t.Fatal(err)
				}
				theirs = old
			} else if err := os.Symlink(theirs, old); err != nil {
				t.Fatal(err)
			}

			k := HostKey{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "intentq", Host: "laptop"}
			l, err := AcquireHost(t.TempDir(), k)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			if entries, _ := os.ReadDir(theirs); len(entries) != 0 {
				t.Errorf("the lock went into the squatted folder: %v", entries)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
				t.Errorf("the shared temporary folder holds %v, want only the squat", entries)
			}
			lockDir := filepath.Join(runtime, RuntimeName)
			if m, err := lmode(filepath.Join(lockDir, k.lockName())); err != nil || m != 0o600 {
				t.Fatalf("the host lock in the runtime folder: %v, %v; want a file, 0600", m, err)
			}
			if m, err := lmode(lockDir); err != nil || m != os.ModeDir|0o700 {
				t.Fatalf("lock folder %s: %v, %v; want a folder, 0700", lockDir, m, err)
			}
		})
	}
}

// The lock folder is the runtime folder's only when that is this user's own 0700 folder (not a
// link, not open to others, not another user's); otherwise data_dir's, and never the shared
// temporary folder.
func TestLockDirIsPrivateRuntimeOrDataDir(t *testing.T) {
	sharedTemp(t)
	good := privateTemp(t)
	open := t.TempDir()
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		base    string
		runtime bool
	}{
		{"private runtime folder", good, true},
		{"runtime folder open to others", open, false},
		{"runtime folder is a link", link, false},
		{"no runtime folder", filepath.Join(good, "missing"), false},
	}
	if os.Getuid() == 0 {
		theirs := privateTemp(t)
		asOtherUser(t, theirs)
		cases = append(cases, struct {
			name    string
			base    string
			runtime bool
		}{"runtime folder of another user", theirs, false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			d, err := lockDir(dataDir, []runtimeBase{{path: tc.base}})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			want := filepath.Join(dataDir, DataDirLocks)
			if tc.runtime {
				want = filepath.Join(tc.base, RuntimeName)
			}
			if d.Name() != want {
				t.Fatalf("lock folder %s, want %s", d.Name(), want)
			}
			if m, err := lmode(want); err != nil || m != os.ModeDir|0o700 {
				t.Fatalf("%s: %v, %v; want a folder, 0700", want, m, err)
			}
			_ = os.Remove(filepath.Join(good, RuntimeName))
		})
	}
}

// A lock folder that is not this user's own 0700 folder, and a link in place of a lock file,
// are refused with an error that names them; nothing behind them is changed (the old lock
// followed a link to a file and wrote over it).
func TestLocksRefuseWhatIsNotTheirOwn(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	write := func() {
		if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	untouched := func() {
		t.Helper()
		if data, err := os.ReadFile(victim); err != nil || string(data) != "keep me" {
			t.Fatalf("the file behind the link: %q, %v; want it untouched", data, err)
		}
	}
	k := HostKey{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "intentq", Host: "laptop"}

	t.Run("lock folder open to others", func(t *testing.T) {
		runtime := privateTemp(t)
		t.Setenv("XDG_RUNTIME_DIR", runtime)
		dir := filepath.Join(runtime, RuntimeName)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := AcquireHost(t.TempDir(), k)
		if !errors.Is(err, private.ErrNotOwnDir) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "0755") {
			t.Fatalf("AcquireHost = %v; want a refusal naming %s and its mode", err, dir)
		}
	})
	t.Run("lock folder is a link", func(t *testing.T) {
		runtime := privateTemp(t)
		t.Setenv("XDG_RUNTIME_DIR", runtime)
		target := t.TempDir()
		if err := os.Symlink(target, filepath.Join(runtime, RuntimeName)); err != nil {
			t.Fatal(err)
		}
		_, err := AcquireHost(t.TempDir(), k)
		if !errors.Is(err, private.ErrNotOwnDir) || !strings.Contains(err.Error(), "link") {
			t.Fatalf("AcquireHost = %v; want a refusal of the link", err)
		}
		if entries, _ := os.ReadDir(target); len(entries) != 0 {
			t.Errorf("a lock went behind the link: %v", entries)
		}
	})
	t.Run("lock folder of another user", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("playing another user (uid 65534) needs root")
		}
		runtime := privateTemp(t)
		t.Setenv("XDG_RUNTIME_DIR", runtime)
		dir := filepath.Join(runtime, RuntimeName)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		asOtherUser(t, dir)
		_, err := AcquireHost(t.TempDir(), k)
		if !errors.Is(err, private.ErrNotOwnDir) || !strings.Contains(err.Error(), "uid 65534") {
			t.Fatalf("AcquireHost = %v; want a refusal naming uid 65534", err)
		}
	})
	t.Run("host lock file is a link", func(t *testing.T) {
		write()
		runtime := privateTemp(t)
		t.Setenv("XDG_RUNTIME_DIR", runtime)
		dir := filepath.Join(runtime, RuntimeName)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(dir, k.lockName())); err != nil {
			t.Fatal(err)
		}
		if _, err := AcquireHost(t.TempDir(), k); err == nil || !strings.Contains(err.Error(), "link") {
			t.Fatalf("AcquireHost = %v; want a refusal of the link", err)
		}
		untouched()
	})
	t.Run("data_dir's lock file is a link", func(t *testing.T) {
		write()
		dataDir := t.TempDir()
		if err := os.Symlink(victim, filepath.Join(dataDir, FileName)); err != nil {
			t.Fatal(err)
		}
		if _, err := Acquire(dataDir); err == nil || !strings.Contains(err.Error(), "link") {
			t.Fatalf("Acquire = %v; want a refusal of the link", err)
		}
		untouched()
	})
	t.Run("data_dir of another user", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("playing another user (uid 65534) needs root")
		}
		dataDir := t.TempDir()
		asOtherUser(t, dataDir)
		_, err := Acquire(dataDir)
		if !errors.Is(err, private.ErrNotOwnDir) || !strings.Contains(err.Error(), "uid 65534") {
			t.Fatalf("Acquire = %v; want a refusal naming uid 65534", err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dataDir, FileName), &st); err == nil {
			t.Errorf("a lock file was made in another user's data_dir")
		}
	})
}

// lmode is the mode of path itself (a link's own), zero when it cannot be read.
func lmode(path string) (os.FileMode, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return 0, err
	}
	return info.Mode(), nil
}
