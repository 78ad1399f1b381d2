package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// defaultBunTimeout bounds one `bun build --no-bundle` run.
const defaultBunTimeout = 30 * time.Second

// bunOutputLines is how much of bun's output an error quotes.
const bunOutputLines = 12

// FindBun returns the bun executable to use: explicit when set (it must exist), else bun on
// PATH, else ~/.bun/bin/bun (where bun's installer puts it and Claude Code users have it).
func FindBun(explicit string) (string, error) {
	if explicit != "" {
		if err := executable(explicit); err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrNoBun, explicit, err)
		}
		return explicit, nil
	}
	if p, err := exec.LookPath("bun"); err == nil {
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".bun", "bin", "bun")
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w on PATH or in ~/.bun/bin (install bun, or set its path)", ErrNoBun)
}

// executable checks that path is an executable regular file.
func executable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// bunCheck runs `bun build --no-bundle file` with its output going to a temporary directory,
// so nothing is written beside the plugin. On failure it returns bun's first lines of output,
// with anything after "Bearer" redacted (bun quotes the failing source line).
func bunCheck(bun, file string, timeout time.Duration) (string, error) {
	if timeout <= 0 {
		timeout = defaultBunTimeout
	}
	out, err := os.MkdirTemp("", "intentq-bun-*")
	if err != nil {
		return "", fmt.Errorf("bun build: %w", err)
	}
	defer os.RemoveAll(out)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bun, "build", "--no-bundle", file, "--outdir", out)
	cmd.Dir = out
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.WaitDelay = 2 * time.Second
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err = cmd.Run()
	if ctx.Err() != nil {
		return summarize(buf.String()), fmt.Errorf("bun build timed out after %s", timeout)
	}
	if err != nil {
		return summarize(buf.String()), fmt.Errorf("bun build: %w", err)
	}
	return "", nil
}

var (
	ansiRE   = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	bearerRE = regexp.MustCompile(`(?i)(bearer)[^\n]*`)
)

// summarize keeps the first lines of bun's output, without colours or secrets.
func summarize(s string) string {
	s = ansiRE.ReplaceAllString(s, "")
	s = bearerRE.ReplaceAllString(s, "$1 [redacted]")
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > bunOutputLines {
		lines = append(lines[:bunOutputLines], "...")
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "..."
		}
	}
	return strings.Join(lines, "\n")
}
