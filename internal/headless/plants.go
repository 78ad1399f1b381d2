package headless

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/intentq/intentq/internal/toolpolicy"
)

// gitPrograms are the files of an existing repository (relative to its .git) through which git
// runs a program: its config (core.fsmonitor, core.hooksPath, aliases, drivers) and hooks. A run
// that changes one is undone after it.
var gitPrograms = []string{"config", "config.worktree", "hooks"}

// maxSaved bounds one saved file of a repository (a config or hook is a few KiB).
const maxSaved = 1 << 20

// savedFile is a repository file's content and mode before a run.
type savedFile struct {
	data []byte
	mode fs.FileMode
}

// WatchPlants looks at a writable work folder before a headless run and returns what to call
// after it: the sweep moves every plant the run made (toolpolicy.IsPlant: a file named HEAD
// that makes a folder a git repository, .git, .envrc, editor and agent settings, at any depth)
// into quarantine (a private folder outside the work folder), and puts back what the run
// changed in an existing repository's config and hooks. The person's own plants, there before
// the run, stay. It returns what it moved or put back, each "path (where it went)"; an error
// means something may not have been undone. The kernel cannot refuse such files by name (the
// folder is writable), and Claude Code's guard sees only its own tools, so this runs for every
// CLI's run whose policy writes and does not allow everything.
func WatchPlants(work, quarantine string) (func() ([]string, error), error) {
	before, saved, err := scanPlants(work)
	if err != nil {
		return nil, fmt.Errorf("the work folder %s before the run: %w", work, err)
	}
	return func() ([]string, error) {
		after, _, err := scanPlants(work)
		if err != nil {
			return nil, fmt.Errorf("the work folder %s after the run: %w", work, err)
		}
		var done []string
		var errs []error
		dest := filepath.Join(quarantine, time.Now().UTC().Format("20060102T150405.000000000Z"))
		for _, rel := range after {
			if slices.Contains(before, rel) {
				continue
			}
			where, err := moveAside(filepath.Join(work, rel), filepath.Join(dest, rel))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			done = append(done, fmt.Sprintf("%s (%s)", rel, where))
		}
		for _, rel := range sortedKeys(saved) {
			put, err := putBack(work, rel, saved, filepath.Join(dest, rel))
			if err != nil {
				errs = append(errs, err)
			} else if put != "" {
				done = append(done, put)
			}
		}
		return done, errors.Join(errs...)
	}, nil
}

// scanPlants walks a work folder: the plants in it (relative paths, not descending into them)
// and the program files of the repositories among them (a .git folder's config and hooks).
func scanPlants(work string) ([]string, map[string]savedFile, error) {
	var plants []string
	saved := map[string]savedFile{}
	err := filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if path == work {
			return nil
		}
		rel, err := filepath.Rel(work, path)
		if err != nil {
			return err
		}
		if !toolpolicy.IsPlant(d.Name()) {
			return nil
		}
		plants = append(plants, rel)
		if d.IsDir() && strings.EqualFold(d.Name(), ".git") {
			if err := saveGitPrograms(path, rel, saved); err != nil {
				return err
			}
		}
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	return plants, saved, err
}

// saveGitPrograms keeps a repository's config and hooks (gitPrograms) by their path relative to
// the work folder.
func saveGitPrograms(gitDir, rel string, saved map[string]savedFile) error {
	for _, name := range gitPrograms {
		root := filepath.Join(gitDir, name)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			fi, err := os.Lstat(path)
			if err != nil {
				return err
			}
			r, err := filepath.Rel(gitDir, path)
			if err != nil {
				return err
			}
			sf := savedFile{mode: fi.Mode()}
			if fi.Mode().IsRegular() && fi.Size() <= maxSaved {
				if sf.data, err = os.ReadFile(path); err != nil {
					return err
				}
			} else if fi.Mode()&fs.ModeSymlink != 0 {
				target, err := os.Readlink(path)
				if err != nil {
					return err
				}
				sf.data = []byte(target)
			}
			saved[filepath.Join(rel, r)] = sf
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", root, err)
		}
	}
	// A hooks folder's new files are found by comparing its listing after the run with what
	// was saved: an empty marker keeps the folder itself in the map.
	saved[filepath.Join(rel, "hooks")+string(filepath.Separator)] = savedFile{mode: fs.ModeDir}
	return nil
}

// putBack restores one saved repository file the run changed, or, for the hooks folder's
// marker, moves aside every hook the run added. It says what it did ("" when nothing changed).
func putBack(work, rel string, saved map[string]savedFile, aside string) (string, error) {
	was, path := saved[rel], filepath.Join(work, rel)
	if was.mode.IsDir() {
		dir := strings.TrimSuffix(path, string(filepath.Separator))
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", nil
			}
			return "", fmt.Errorf("%s: %w", dir, err)
		}
		var moved []string
		for _, e := range entries {
			r := filepath.Join(strings.TrimSuffix(rel, string(filepath.Separator)), e.Name())
			if wasThere(saved, r) {
				continue
			}
			if where, err := moveAside(filepath.Join(dir, e.Name()), filepath.Join(filepath.Dir(aside), e.Name())); err != nil {
				return "", err
			} else {
				moved = append(moved, fmt.Sprintf("%s (%s)", r, where))
			}
		}
		return strings.Join(moved, "; "), nil
	}
	fi, err := os.Lstat(path)
	switch {
	case err == nil && was.mode.IsRegular() && fi.Mode().IsRegular():
		now, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if bytes.Equal(now, was.data) && fi.Mode().Perm() == was.mode.Perm() {
			return "", nil
		}
	case err == nil && was.mode&fs.ModeSymlink != 0 && fi.Mode()&fs.ModeSymlink != 0:
		if target, err := os.Readlink(path); err == nil && target == string(was.data) {
			return "", nil
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if !was.mode.IsRegular() && was.mode&fs.ModeSymlink == 0 || was.mode.IsRegular() && was.data == nil {
		return "", fmt.Errorf("%s changed during the run and is too large or special to put back", path)
	}
	if err == nil {
		if _, err := moveAside(path, aside); err != nil {
			return "", err
		}
	}
	if was.mode&fs.ModeSymlink != 0 {
		if err := os.Symlink(string(was.data), path); err != nil {
			return "", fmt.Errorf("put back %s: %w", path, err)
		}
	} else if err := os.WriteFile(path, was.data, was.mode.Perm()); err != nil {
		return "", fmt.Errorf("put back %s: %w", path, err)
	}
	return fmt.Sprintf("%s (put back as it was before the run)", rel), nil
}

// wasThere reports whether a repository path was saved before the run: the file itself, or a
// folder holding saved files.
func wasThere(saved map[string]savedFile, rel string) bool {
	if _, ok := saved[rel]; ok {
		return true
	}
	prefix := rel + string(filepath.Separator)
	for k := range saved {
		if strings.HasPrefix(k, prefix) && k != prefix {
			return true
		}
	}
	return false
}

// moveAside moves a plant into quarantine (to), or removes it where the quarantine is on
// another file system; it says where it went.
func moveAside(path, to string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return "", fmt.Errorf("quarantine for %s: %w", path, err)
	}
	if err := os.Rename(path, to); err == nil {
		return "moved to " + to, nil
	}
	if err := os.RemoveAll(path); err != nil {
		return "", fmt.Errorf("remove %s: %w", path, err)
	}
	return "removed", nil
}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
