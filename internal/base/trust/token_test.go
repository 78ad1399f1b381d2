package trust

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentq/intentq/internal/testkit/diskfault"
)

// Issue 61: a data_dir that went read-only mid-burst left access.token empty, and the next start
// died with "access.token is empty". An empty or damaged token (a crash can also leave a block of
// NULs, or half of the hex) is replaced by a new one, and the renewal says what was found and
// who must reconnect; the token after that stays.
func TestEnsureTokenRenewsAnEmptyOrDamagedToken(t *testing.T) {
	for name, old := range map[string]string{
		"empty":       "",
		"blank line":  "\n",
		"NULs":        strings.Repeat("\x00", 65),
		"half":        "0123456789abcdef0123456789abcdef",
		"not hex":     strings.Repeat("zz", tokenBytes),
		"two tokens":  strings.Repeat("ab", tokenBytes) + "\n" + strings.Repeat("cd", tokenBytes),
		"wrong alpha": strings.Repeat("g", 2*tokenBytes),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), TokenFile)
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			tok, renewal, err := EnsureTokenNoting(path)
			if err != nil {
				t.Fatalf("EnsureTokenNoting = %v; want a new token, not a refusal", err)
			}
			if !validToken(tok) || strings.Contains(old, tok) {
				t.Fatalf("token %q after %q: want a new 64-character hex token", tok, old)
			}
			want := "damaged"
			if strings.TrimSpace(old) == "" {
				want = "empty"
			}
			if renewal == nil || !strings.Contains(renewal.Found, want) {
				t.Fatalf("renewal %+v: want one that says the token was %s", renewal, want)
			}
			msg := renewal.String()
			for _, part := range []string{path, want, "new token", "must restart", "starter ui"} {
				if !strings.Contains(msg, part) {
					t.Errorf("the renewal's message does not say %q: %s", part, msg)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil || string(data) != tok+"\n" {
				t.Fatalf("file holds %q (%v), want the new token", data, err)
			}
			if info, err := os.Lstat(path); err != nil || info.Mode() != 0o600 {
				t.Fatalf("%s: %v; want a file, 0600", path, err)
			}
			again, renewal, err := EnsureTokenNoting(path)
			if err != nil || again != tok || renewal != nil {
				t.Fatalf("the next start: %q %+v %v; want the same token, no renewal", again, renewal, err)
			}
			if tok, err := EnsureToken(path); err != nil || tok != again {
				t.Fatalf("EnsureToken = %q, %v", tok, err)
			}
			leftovers(t, filepath.Dir(path), TokenFile)
		})
	}
	t.Run("clients are told to restart the worker", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), TokenFile)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadToken(path); !errors.Is(err, ErrEmptySecret) || !strings.Contains(err.Error(), "restart the worker") {
			t.Fatalf("ReadToken of an empty token: %v; want one that says to restart the worker", err)
		}
	})
}

// A write of the token that fails (a full or read-only disk: here the file size limit) leaves no
// file behind, and a process that dies in the middle of the write (as at a power loss before the
// data reached the disk) leaves no empty or half-written token either: the old file, or none,
// and the next start makes a whole one.
func TestTokenWriteThatFailsLeavesNoEmptyFile(t *testing.T) {
	if mode := os.Getenv("TRUST_TOKEN_WRITE"); mode != "" {
		writeTokenUnderLimit(mode, os.Getenv("TRUST_TOKEN_PATH"))
		return
	}
	for _, tc := range []struct {
		name, mode, old string
	}{
		{"fails, new", "fail", ""},
		{"dies, new", "die", ""},
		{"dies, replacing an empty one", "die", "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), TokenFile)
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestTokenWriteThatFailsLeavesNoEmptyFile$")
			cmd.Env = append(os.Environ(), "TRUST_TOKEN_WRITE="+tc.mode, "TRUST_TOKEN_PATH="+path)
			out, err := cmd.CombinedOutput()
			switch tc.mode {
			case "fail":
				if err != nil || !strings.Contains(string(out), "write failed as wanted") {
					t.Fatalf("writer: %v\n%s", err, out)
				}
			case "die":
				if !diskfault.Killed(err) {
					t.Fatalf("the writer did not die at its write (SIGXFSZ): %v\n%s", err, out)
				}
			}
			data, err := os.ReadFile(path)
			switch {
			case tc.old == "" && err == nil:
				t.Fatalf("a failed write left %s holding %q; want no file", path, data)
			case tc.old == "" && !errors.Is(err, os.ErrNotExist):
				t.Fatal(err)
			case tc.old != "" && string(data) != tc.old:
				t.Fatalf("a failed replacement left %q (%v); want the old file as it was", data, err)
			}
			if tc.mode == "fail" {
				leftovers(t, filepath.Dir(path), TokenFile)
			}
			tok, _, err := EnsureTokenNoting(path)
			if err != nil || !validToken(tok) {
				t.Fatalf("the next start: %q, %v; want a whole new token", tok, err)
			}
		})
	}
}

// writeTokenUnderLimit is the writer process of TestTokenWriteThatFailsLeavesNoEmptyFile: it may
// write 10 bytes per file, so the token's write stops in its middle; "fail": the write returns an
// error; "die": the process is killed there.
func writeTokenUnderLimit(mode, path string) {
	if err := diskfault.LimitWrites(10, mode == "die"); err != nil {
		println(err.Error())
		os.Exit(2)
	}
	_, err := EnsureToken(path)
	if err == nil {
		println("the write succeeded")
		os.Exit(2)
	}
	println("write failed as wanted:", err.Error())
	os.Exit(0)
}

// leftovers fails when dir holds anything but the file name (a temporary file left behind).
func leftovers(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != name {
			t.Errorf("%s left in %s", e.Name(), dir)
		}
	}
}
