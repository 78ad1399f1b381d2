package hooks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Runnable names what keeps a hook's program from running (issue 38: setup and doctor ask it).
func TestRunnable(t *testing.T) {
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "exe"), filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o700))
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o600))
	require.NoError(t, Runnable(exe))
	require.ErrorContains(t, Runnable(filepath.Join(dir, "gone")), "does not exist")
	require.ErrorContains(t, Runnable(dir), "is not an executable file", "a folder")
	// No execute bit at all: not even root may run it.
	require.ErrorContains(t, Runnable(plain), "is not an executable file")
}
