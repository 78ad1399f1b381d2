// Package plugin patches the official Claude Code Telegram plugin (SPEC I8) so that its
// handleInbound posts every inbound message to intentq's loopback ingest endpoint before
// Claude sees it.
//
// The flow, run at worker start and on demand, is:
//
//	t, err := plugin.Resolve(cfg.Claude.Home, cfg.Claude.Settings) // static, symlink-safe
//	block, err := plugin.Block(ingestURL, token)                    // marked TypeScript block
//	res, err := plugin.Patch(t, block, opts)                        // backup, write, bun build, verify
//	res, err = plugin.CleanV1Cache(t, opts)                         // old v1 block in the cache copy
//
// Every function fails closed: on any error nothing is left half-written (a failed syntax
// check restores the backup byte for byte), and errors name the file concerned. Errors never
// contain the ingest token.
package plugin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Size limits of the files this package reads.
const (
	// MaxJSONBytes caps settings.json and marketplace.json.
	MaxJSONBytes = 1 << 20
	// MaxServerTSBytes caps server.ts.
	MaxServerTSBytes = 4 << 20
)

// States reported by State.
const (
	// StatePatched: the current block is in place before the anchor.
	StatePatched = "patched"
	// StateOutdated: an intentq block is present but differs from the current one (older
	// version, other URL or token, or not right before the anchor).
	StateOutdated = "outdated"
	// StateUnpatched: no intentq block.
	StateUnpatched = "unpatched"
)

// Sentinel errors, for errors.Is; the returned errors wrap them with the file concerned.
var (
	// ErrOutsideRoot: a resolved path lies outside the marketplaces (or cache) root: a path
	// traversal or a symlink out. Callers should alert.
	ErrOutsideRoot = errors.New("plugin: path outside the plugin root")
	// ErrNotEnabled: settings.json enables no telegram@<marketplace> plugin.
	ErrNotEnabled = errors.New("plugin: telegram plugin not enabled")
	// ErrUnsupportedSource: marketplace.json installs the plugin from somewhere other than a
	// directory inside the marketplace (github, url, git-subdir, npm, ...).
	ErrUnsupportedSource = errors.New("plugin: unsupported plugin source")
	// ErrAnchor: the anchor line is missing or occurs more than once.
	ErrAnchor = errors.New("plugin: anchor line not found exactly once")
	// ErrMalformedBlock: server.ts holds unbalanced or repeated intentq markers.
	ErrMalformedBlock = errors.New("plugin: malformed intentq block")
	// ErrBunFailed: bun build --no-bundle rejected the written file (the backup was restored).
	ErrBunFailed = errors.New("plugin: bun build failed")
	// ErrNoBun: no bun executable was found.
	ErrNoBun = errors.New("bun not found")
	// ErrSuspiciousV1Span: the old v1 block to remove from the cache is implausibly small or
	// large; nothing was written.
	ErrSuspiciousV1Span = errors.New("plugin: v1 block out of bounds")
	// ErrNotVerified: after writing, the file does not hold the marker exactly once.
	ErrNotVerified = errors.New("plugin: patch not verified")
)

// Target is the resolved location of the Telegram plugin that Claude Code runs.
type Target struct {
	// Marketplace is the marketplace name from the telegram@<marketplace> key.
	Marketplace string
	// SettingsPath is the settings.json the plugin was found in.
	SettingsPath string
	// MarketplaceJSON is the marketplace.json that names the plugin's source.
	MarketplaceJSON string
	// MarketplacesRoot is <claude home>/plugins/marketplaces with symlinks resolved.
	MarketplacesRoot string
	// PluginDir is the plugin directory, symlinks resolved, inside MarketplacesRoot.
	PluginDir string
	// ServerTS is the server.ts that bun runs, symlinks resolved, inside MarketplacesRoot.
	ServerTS string
	// CacheRoot is <claude home>/plugins/cache/<marketplace>/telegram; it may not exist.
	CacheRoot string
}

// PatchOptions tune Patch and CleanV1Cache.
type PatchOptions struct {
	// Bun is the bun executable; empty: FindBun("").
	Bun string
	// BackupDir, when set, receives timestamped backups (e.g. data_dir/backups); empty: the
	// backup is written beside the file as <name>.intentq-backup.
	BackupDir string
	// BunTimeout bounds the syntax check; zero means 30 s.
	BunTimeout time.Duration
}

// Result says what Patch or CleanV1Cache did.
type Result struct {
	// Changed is true when the file was rewritten.
	Changed bool
	// File is the file looked at (empty when there was none, e.g. no cache).
	File string
	// Before is the state found (StatePatched, StateOutdated, StateUnpatched) for Patch.
	Before string
	// Backup is the backup written before the change, if any.
	Backup string
	// RemovedBytes is the size of the v1 block removed by CleanV1Cache.
	RemovedBytes int
}

// readLimited reads a regular file of at most limit bytes, by path: for Resolve, which finds
// the files; a patch reads and writes through the root it resolved (place).
func readLimited(path string, limit int64, what string) ([]byte, os.FileMode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	return readOpen(f, path, limit, what)
}

// readOpen reads f (named path), a regular file of at most limit bytes, and its permissions.
func readOpen(f *os.File, path string, limit int64, what string) ([]byte, os.FileMode, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", what, err)
	}
	if !info.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s %s is not a regular file", what, path)
	}
	if info.Size() > limit {
		return nil, 0, fmt.Errorf("%s %s is %d bytes, over the %d-byte limit", what, path, info.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, 0, fmt.Errorf("%s %s grew over the %d-byte limit while reading", what, path, limit)
	}
	return data, info.Mode().Perm(), nil
}

// backup saves data (the current content of file) before file is changed, and returns the
// backup's path: beside the file, through its root, or in opts.BackupDir. Backups are private
// (0600): an older block holds the ingest token.
func backup(file *place, data []byte, opts PatchOptions, tag string) (string, error) {
	bp := file.sibling(filepath.Base(file.rel) + ".intentq-backup")
	if opts.BackupDir != "" {
		if err := os.MkdirAll(opts.BackupDir, 0o700); err != nil {
			return "", fmt.Errorf("backup of %s: %w", file.path, err)
		}
		stamp := time.Now().UTC().Format("20060102-150405.000000000")
		name := fmt.Sprintf("%s-%s.%s.intentq-backup", tag, filepath.Base(file.rel), stamp)
		var err error
		if bp, err = openPlace(opts.BackupDir, filepath.Join(opts.BackupDir, name)); err != nil {
			return "", fmt.Errorf("backup of %s: %w", file.path, err)
		}
		defer bp.close()
	}
	if err := bp.write(data, 0o600); err != nil {
		return "", fmt.Errorf("backup of %s: %w", file.path, err)
	}
	got, _, err := bp.read(MaxServerTSBytes, "backup")
	if err != nil || string(got) != string(data) {
		return "", fmt.Errorf("backup of %s: %s does not read back identical", file.path, bp.path)
	}
	return bp.path, nil
}

// within reports whether path is strictly inside root (both already cleaned and resolved).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." || filepath.IsAbs(rel) {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// splitLines splits s into lines that keep their line endings.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
