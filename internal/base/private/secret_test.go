package private

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A secret is replaced whole and stays private; its folder is made 0700; nothing of the write
// is left beside it, and a temporary file a crash left long ago is removed (a recent one, maybe
// another writer's, is not).
func TestWriteSecretReplacesWholeAndPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "node.key")
	for _, content := range []string{"first, longer content", "second"} {
		if err := WriteSecret(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	if info, err := os.Lstat(path); err != nil || info.Mode() != 0o600 {
		t.Fatalf("%s: %v; want a file, 0600", path, err)
	}
	if info, err := os.Lstat(filepath.Dir(path)); err != nil || info.Mode() != fs.ModeDir|0o700 {
		t.Fatalf("folder: %v; want 0700", err)
	}
	old := filepath.Join(filepath.Dir(path), ".node.key.123.tmp")
	recent := filepath.Join(filepath.Dir(path), ".node.key.456.tmp")
	for _, p := range []string{old, recent} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if err := WriteSecret(path, []byte("third")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".node.key.456.tmp node.key" {
		t.Fatalf("folder holds %v; want the secret and the recent temporary file only", names)
	}
}

// CreateSecret leaves an existing file alone and says so (fs.ErrExist): the first one's
// content stands.
func TestCreateSecretKeepsTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.token")
	if err := CreateSecret(path, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := CreateSecret(path, []byte("second")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second create: %v; want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "first" {
		t.Fatalf("content %q; want the first", got)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("folder holds %d entries; want the secret only", len(entries))
	}
}

// OpenDirAt makes a missing folder 0700 and opens it; a link, a file, a folder open to others,
// or (as root) another user's folder in its place is refused with an error that names it.
func TestOpenDirAtRefusesWhatIsNotTheUsersOwn(t *testing.T) {
	parent, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	d, err := OpenDirAt(parent, "mine")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if info, err := os.Lstat(filepath.Join(parent.Name(), "mine")); err != nil || info.Mode() != fs.ModeDir|0o700 {
		t.Fatalf("made folder: %v; want 0700", err)
	}
	if d, err = OpenDirAt(parent, "mine"); err != nil {
		t.Fatalf("opened again: %v", err)
	}
	d.Close()

	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(parent.Name(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent.Name(), "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(parent.Name(), "open"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(parent.Name(), "open"), 0o755); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{"link": "link", "file": "not a folder", "open": "0755"}
	if os.Getuid() == 0 {
		if err := os.Mkdir(filepath.Join(parent.Name(), "theirs"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(parent.Name(), "theirs"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		refused["theirs"] = "uid 65534"
	}
	for name, says := range refused {
		d, err := OpenDirAt(parent, name)
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, ErrNotOwnDir) || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v; want ErrNotOwnDir saying %q", name, err, says)
		}
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("something was made behind the link: %v", entries)
	}
}
