package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/intentq/intentq/internal/base/instance"
)

// privateRuntime sets XDG_RUNTIME_DIR to a new folder of this user's with mode 0700 and returns
// the folder the port claims go to in it.
func privateRuntime(t *testing.T) string {
	t.Helper()
	runtime := t.TempDir()
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	return filepath.Join(runtime, instance.RuntimeName, "ports")
}

// Two servers starting at the same moment on one machine (a second worker, parallel tests) both
// found the same internal port free and both bound it; one exited ("address already in use").
// A pick is claimed until the server has bound it: no other pick returns it meanwhile, not even
// one for another data_dir, and released, it can be picked again.
func TestInternalPortsAreClaimedUntilBound(t *testing.T) {
	privateRuntime(t)
	first, release, err := freePorts(t.TempDir(), 4)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := portsDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	for _, port := range first {
		if _, ok, err := claimPort(dir, port); ok || err != nil {
			t.Fatalf("port %d claimed twice (%v)", port, err)
		}
	}
	for range 20 {
		again, releaseAgain, err := freePorts(t.TempDir(), 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, port := range again {
			if slices.Contains(first, port) {
				t.Fatalf("port %d picked while another server's start holds it", port)
			}
		}
		releaseAgain()
	}
	release()
	for _, port := range first {
		f, ok, err := claimPort(dir, port)
		if !ok || err != nil {
			t.Fatalf("port %d still claimed after its release (%v)", port, err)
		}
		_ = f.Close()
	}
}

// Issue 61, finding 4: another user who makes $TMPDIR/intentq-ports-<uid> first (a folder of
// theirs, open to all) or puts a link there gets nothing of the port claims: they live in this
// user's private runtime folder, opened without following links; a link in place of a claim is
// refused and what it points to is left alone.
func TestPortClaimsStayOutOfTheSharedTempFolder(t *testing.T) {
	for _, squat := range []string{"folder", "link"} {
		t.Run(squat, func(t *testing.T) {
			tmp := t.TempDir()
			if err := os.Chmod(tmp, 0o1777); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TMPDIR", tmp)
			claims := privateRuntime(t)
			theirs := filepath.Join(t.TempDir(), "theirs")
			if err := os.Mkdir(theirs, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(theirs, 0o777); err != nil {
				t.Fatal(err)
			}
			if os.Getuid() == 0 {
				if err := os.Chown(theirs, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
			old := filepath.Join(tmp, fmt.Sprintf("intentq-ports-%d", os.Getuid()))
			if squat == "folder" {
				if err := os.Rename(theirs, old); err != nil {
					t.Fatal(err)
				}
				theirs = old
			} else if err := os.Symlink(theirs, old); err != nil {
				t.Fatal(err)
			}

			ports, release, err := freePorts(t.TempDir(), 4)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			if entries, _ := os.ReadDir(theirs); len(entries) != 0 {
				t.Errorf("port claims went into the squatted folder: %v", entries)
			}
			for _, port := range ports {
				if _, err := os.Lstat(filepath.Join(claims, strconv.Itoa(port))); err != nil {
					t.Errorf("port %d's claim is not in the private runtime folder: %v", port, err)
				}
			}
			if m, err := lmode(claims); err != nil || m != os.ModeDir|0o700 {
				t.Fatalf("%s: %v, %v; want a folder, 0700", claims, m, err)
			}
		})
	}
	t.Run("a link in place of a claim", func(t *testing.T) {
		claims := privateRuntime(t)
		dir, err := portsDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		victim := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(claims, "20999")); err != nil {
			t.Fatal(err)
		}
		if f, ok, err := claimPort(dir, 20999); err == nil {
			_ = f.Close()
			t.Fatalf("a claim through a link: ok %v; want a refusal", ok)
		}
		if data, err := os.ReadFile(victim); err != nil || string(data) != "keep me" {
			t.Fatalf("the file behind the link: %q, %v", data, err)
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
