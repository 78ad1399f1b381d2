package private

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFixTakesGroupAndOtherAccessOff(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "history"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]os.FileMode{"temporal.db": 0o644, "temporal.db-wal": 0o666, "history/secretary.jsonl": 0o640, "run.sh": 0o755}
	for name, mode := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "shared.txt")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outside, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := Fix(dir); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{"": 0o700, "history": 0o700, "temporal.db": 0o600, "temporal.db-wal": 0o600, "history/secretary.jsonl": 0o600, "run.sh": 0o700}
	for name, mode := range want {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != mode {
			t.Errorf("%s: %v, want %v", name, got, mode)
		}
	}
	if info, _ := os.Stat(outside); info.Mode().Perm() != 0o644 {
		t.Errorf("a file behind a link was changed: %v", info.Mode().Perm())
	}
}

func TestUmaskMakesNewFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	Umask()
	p := filepath.Join(t.TempDir(), "new")
	if err := os.WriteFile(p, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o600 {
		t.Errorf("new file: %v, want 0600", info.Mode().Perm())
	}
}

// Both writes replace a file whole and leave it private, over a temporary file a crash left
// (0644, which must not be reused with its mode).
func TestWriteFileReplacesWholeAndPrivate(t *testing.T) {
	for name, write := range map[string]func(string, []byte) error{"durable": WriteFile, "atomic": WriteFileAtomic} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "journal.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+".tmp", []byte("left by a crash"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, content := range []string{"first, longer content", "second"} {
				if err := write(path, []byte(content)); err != nil {
					t.Fatalf("write: %v", err)
				}
				got, err := os.ReadFile(path)
				if err != nil || string(got) != content {
					t.Fatalf("read %q, %v; want %q", got, err, content)
				}
			}
			info, err := os.Stat(path)
			if err != nil || info.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v, %v; want 0600", info.Mode().Perm(), err)
			}
			if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
				t.Fatalf("temporary file left: %v", err)
			}
		})
	}
}
