package toolpolicy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 61, item 10: every name bash expands a wildcard word to, with any of the shell options
// that widen matching and in the C and UTF-8 locales, is among the paths the guard checks; or
// the guard refuses the word as syntax it does not match.
func TestGlobCoversBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("no bash to compare with: install bash")
	}
	dir := t.TempDir()
	for _, n := range []string{"link", "Link", "lénk", "Ünk", "l\xffnk", ".hidden", "l[ink", "a]b", "b-c", "_u", "sub"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub", "in"), 0o700); err != nil {
		t.Fatal(err)
	}
	options := []string{"", "shopt -s dotglob", "shopt -s nocaseglob", "shopt -u globasciiranges",
		"shopt -s nocaseglob dotglob; shopt -u globskipdots"}
	g := Guard{Dir: dir}
	if err := g.prepare(); err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{
		`l?nk`, `L*`, `[l]ink`, `[a-z]ink`, `[A-Z]ink`, `l[i]n[k]`, `*`, `.*`, `\l*`, `'l'*`, `"l"in?`,
		`l\[*`, `[.]*`, `?ink`, `*nk`, `lé*`, `l??nk`, `[a-c]-c`, `a]*`, `[_]u`, `*/in`, `s?b/*`,
		`[a-zA-Z]ink`, `[0-9a-z]*`, `l[a-z]nk`, `[A-Z]*`, `?nk`, `.?`, `\.*`, `[!x]ink`, `[[:alpha:]]*`,
	} {
		found := map[string]bool{}
		refused := false
		for _, patterns := range pathViews("ls "+word, 0).globs {
			for _, pattern := range patterns {
				g.state.entries = maxEntries
				_, paths, err := g.globPaths(pattern, dir, false)
				refused = refused || errors.Is(err, errUnknownGlob)
				for _, p := range paths {
					found[strings.TrimPrefix(p, dir+"/")] = true
				}
			}
		}
		if refused {
			continue
		}
		for _, opt := range options {
			for _, locale := range []string{"C", "C.UTF-8"} {
				cmd := exec.Command(bash, "-c", opt+"\nfor f in "+word+`; do [ -e "$f" ] && printf '%s\n' "$f"; done; :`)
				cmd.Dir = dir
				cmd.Env = []string{"LC_ALL=" + locale, "PATH=" + os.Getenv("PATH")}
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("bash %s: %v", word, err)
				}
				for _, name := range strings.Fields(string(out)) {
					if !found[name] {
						t.Errorf("%s (%s, %s): bash expands it to %q, the guard checks %v", word, opt, locale, name, found)
					}
				}
			}
		}
	}
}
