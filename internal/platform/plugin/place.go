package plugin

// Files reached through their root (issue 33, item 8): Resolve checks that the plugin lies
// inside the marketplaces (or cache) root, but a path checked and then written by path can be
// redirected in between: a folder swapped for a link to elsewhere got a file outside the root
// patched. Every read, write, chmod and rename of a patch goes instead through an os.Root opened
// on the resolved root, which refuses to follow a link out of it, whenever the link appears.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// place is a file reached through the root it must stay in.
type place struct {
	root *os.Root
	// rel is the file relative to root, path its full path (for messages and bun).
	rel  string
	path string
}

// openPlace opens root (a resolved folder) for the file at path, which must lie inside it.
func openPlace(root, path string) (*place, error) {
	rel, err := filepath.Rel(root, path)
	if err != nil || !within(root, path) {
		return nil, fmt.Errorf("%w: %s is not inside %s", ErrOutsideRoot, path, root)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("plugin: open root %s: %w", root, err)
	}
	return &place{root: r, rel: rel, path: path}, nil
}

// sibling is the file name beside p, in the same root.
func (p *place) sibling(name string) *place {
	return &place{root: p.root, rel: filepath.Join(filepath.Dir(p.rel), name), path: filepath.Join(filepath.Dir(p.path), name)}
}

// close closes the root (a sibling shares it: close one of them).
func (p *place) close() { _ = p.root.Close() }

// read reads the file, a regular file of at most limit bytes, and its permissions.
func (p *place) read(limit int64, what string) ([]byte, os.FileMode, error) {
	f, err := p.root.Open(p.rel)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", what, p.path, outside(err))
	}
	defer f.Close()
	return readOpen(f, p.path, limit, what)
}

// write replaces the file with data (mode perm) through a new file beside it, renamed over it,
// both through the root: a reader sees the old or the new content, never a mix, and nothing
// outside the root is created, changed or replaced.
func (p *place) write(data []byte, perm os.FileMode) error {
	tmp := p.sibling("." + filepath.Base(p.rel) + ".intentq-tmp-" + rand.Text())
	f, err := p.root.OpenFile(tmp.rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", p.path, outside(err))
	}
	fail := func(err error) error {
		_ = f.Close()
		_ = p.root.Remove(tmp.rel)
		return fmt.Errorf("write %s: %w", p.path, outside(err))
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = p.root.Remove(tmp.rel)
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if err := p.root.Rename(tmp.rel, p.rel); err != nil {
		_ = p.root.Remove(tmp.rel)
		return fmt.Errorf("write %s: %w", p.path, outside(err))
	}
	if d, err := p.root.Open(filepath.Dir(p.rel)); err == nil { // best effort: make the rename durable
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// outside marks the root's refusal to follow a link out of it as ErrOutsideRoot (callers
// alert on it); other errors pass unchanged.
func outside(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe) && pe.Err.Error() == "path escapes from parent",
		errors.As(err, &le) && le.Err.Error() == "path escapes from parent":
		return fmt.Errorf("%w: %w", ErrOutsideRoot, err)
	}
	return err
}
