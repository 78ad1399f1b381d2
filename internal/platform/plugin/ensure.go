package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/private"
)

// Outcome is what Ensure did.
type Outcome struct {
	Target Target `json:"target"`
	Patch  Result `json:"patch"`
	// CachePatch is the patch of the copy Claude Code installed and runs (the newest cache
	// version); empty File when there is none.
	CachePatch Result `json:"cache_patch"`
	Cache      Result `json:"cache"`
	// State is the plugin's state after Ensure (StatePatched on success).
	State string `json:"state"`
}

// Options derive the patch from intentq's config: the ingest endpoint, the token file and the
// spool directory the block uses, where the secretary's Claude Code lives, bun, and
// data_dir/backups for backups.
func Options(cfg *config.Config) (Blocks, PatchOptions, error) {
	url, err := IngestURL(cfg.Ingest.Listen)
	if err != nil {
		return Blocks{}, PatchOptions{}, err
	}
	if !cfg.Ingest.Token.IsSet() {
		return Blocks{}, PatchOptions{}, errors.New("plugin patch needs an ingest token (ingest.token or ingest.token_file)")
	}
	blocks, err := Block(url, Files{TokenFile: cfg.PluginTokenFile(), SpoolDir: cfg.SpoolDir()})
	if err != nil {
		return Blocks{}, PatchOptions{}, err
	}
	return blocks, PatchOptions{Bun: cfg.Claude.Bun, BackupDir: filepath.Join(cfg.DataDir, "backups")}, nil
}

// writeTokenFile puts the ingest token where the block reads it (0600), unless the user keeps it
// in ingest.token_file already.
func writeTokenFile(cfg *config.Config) error {
	if cfg.Ingest.TokenFile != "" {
		return nil
	}
	path := cfg.PluginTokenFile()
	if old, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(old)) == cfg.Ingest.Token.Reveal() {
		return os.Chmod(path, 0o600)
	}
	if err := private.WriteFile(path, []byte(cfg.Ingest.Token.Reveal()+"\n")); err != nil {
		return fmt.Errorf("plugin: token file: %w", err)
	}
	return nil
}

// Ensure resolves the plugin the secretary runs, writes the token file, patches both copies
// Claude Code may run (the marketplace's and the newest installed cache version), removes the
// old v1 block from the cache copy, and verifies the result (SPEC I8). Which copy really runs is
// found out at run time: the canary records its file. Any failure leaves the files as they were
// and is returned; callers fail closed.
func Ensure(cfg *config.Config) (Outcome, error) {
	blocks, opts, err := Options(cfg)
	if err != nil {
		return Outcome{}, err
	}
	t, err := Resolve(cfg.Claude.Home, cfg.Claude.Settings)
	if err != nil {
		return Outcome{}, err
	}
	if err := writeTokenFile(cfg); err != nil {
		return Outcome{}, err
	}
	out := Outcome{Target: t}
	if out.Cache, err = CleanV1Cache(t, opts); err != nil {
		return out, err
	}
	if out.Patch, err = Patch(t, blocks, opts); err != nil {
		return out, err
	}
	ct, hasCache, err := CacheTarget(t)
	if err != nil {
		return out, err
	}
	if hasCache {
		if out.CachePatch, err = Patch(ct, blocks, opts); err != nil {
			return out, err
		}
	}
	if out.State, err = stateOfBoth(t, blocks); err != nil {
		return out, err
	}
	if out.State != StatePatched {
		return out, fmt.Errorf("%w: the plugin is %s after patching", ErrNotVerified, out.State)
	}
	return out, nil
}

// stateOfBoth is the state of the marketplace copy and the cache copy together: patched only
// when every copy present is.
func stateOfBoth(t Target, blocks Blocks) (string, error) {
	state, err := State(t, blocks)
	if err != nil || state != StatePatched {
		return state, err
	}
	ct, hasCache, err := CacheTarget(t)
	if err != nil || !hasCache {
		return state, err
	}
	cs, err := State(ct, blocks)
	if err != nil {
		return "", err
	}
	return cs, nil
}

// Check reports the plugin's patch state (both copies) without changing anything.
func Check(cfg *config.Config) (Target, string, error) {
	blocks, _, err := Options(cfg)
	if err != nil {
		return Target{}, "", err
	}
	t, err := Resolve(cfg.Claude.Home, cfg.Claude.Settings)
	if err != nil {
		return Target{}, "", err
	}
	state, err := stateOfBoth(t, blocks)
	return t, state, err
}
