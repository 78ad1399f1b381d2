package plugin

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/intentq/intentq/config"
)

// Outcome is what Ensure did.
type Outcome struct {
	Target Target `json:"target"`
	Patch  Result `json:"patch"`
	Cache  Result `json:"cache"`
	// State is the plugin's state after Ensure (StatePatched on success).
	State string `json:"state"`
}

// Options derive the patch from intentq's config: the ingest endpoint and token, where the
// secretary's Claude Code lives, bun, and data_dir/backups for backups.
func Options(cfg *config.Config) (block string, opts PatchOptions, err error) {
	url, err := IngestURL(cfg.Ingest.Listen)
	if err != nil {
		return "", opts, err
	}
	if !cfg.Ingest.Token.IsSet() {
		return "", opts, errors.New("plugin patch needs an ingest token (ingest.token or ingest.token_file)")
	}
	block, err = Block(url, cfg.Ingest.Token.Reveal())
	if err != nil {
		return "", opts, err
	}
	return block, PatchOptions{Bun: cfg.Claude.Bun, BackupDir: filepath.Join(cfg.DataDir, "backups")}, nil
}

// Ensure resolves the plugin the secretary runs, patches it (idempotent), removes the old v1
// block from the newest cache version, and verifies the result (SPEC I8). Any failure leaves
// the files as they were and is returned; callers fail closed.
func Ensure(cfg *config.Config) (Outcome, error) {
	block, opts, err := Options(cfg)
	if err != nil {
		return Outcome{}, err
	}
	t, err := Resolve(cfg.Claude.Home, cfg.Claude.Settings)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Target: t}
	if out.Patch, err = Patch(t, block, opts); err != nil {
		return out, err
	}
	if out.Cache, err = CleanV1Cache(t, opts); err != nil {
		return out, err
	}
	if out.State, err = State(t, block); err != nil {
		return out, err
	}
	if out.State != StatePatched {
		return out, fmt.Errorf("%w: %s is %s after patching", ErrNotVerified, t.ServerTS, out.State)
	}
	return out, nil
}

// Check reports the plugin's patch state without changing anything.
func Check(cfg *config.Config) (Target, string, error) {
	block, _, err := Options(cfg)
	if err != nil {
		return Target{}, "", err
	}
	t, err := Resolve(cfg.Claude.Home, cfg.Claude.Settings)
	if err != nil {
		return Target{}, "", err
	}
	state, err := State(t, block)
	return t, state, err
}
