package main

import (
	"os"
	"path/filepath"
	"testing"

	intentqhooks "github.com/intentq/intentq/internal/doors/hooks"
)

// Issue 38: setup points the hooks it wrote from the starter's folder, and those whose program is
// gone, at intentq-hook when it sits beside the starter, back at the starter when it is gone, and
// leaves the person's own.
func TestRetargetFollowsTheHookProgram(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my bin")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	starter, hookBin, own := filepath.Join(dir, "starter"), filepath.Join(dir, intentqhooks.Binary), filepath.Join(t.TempDir(), "starter")
	for _, p := range []string{starter, hookBin, own} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	group := map[string]any{"hooks": []any{
		map[string]any{"type": "command", "command": shellQuote(starter) + " hook stop --cli codex"},
		map[string]any{"type": "command", "command": own + " hook stop"},
		map[string]any{"type": "command", "command": "'/gone/it'\\''s/starter' hook stop"},
		map[string]any{"type": "command", "command": "/gone/notify hook-ish stop"},
	}}
	command := func(i int) string { return group["hooks"].([]any)[i].(map[string]any)["command"].(string) }
	if !retarget(group, starter) || command(0) != shellQuote(hookBin)+" hook stop --cli codex" || command(1) != own+" hook stop" ||
		command(2) != shellQuote(hookBin)+" hook stop" || command(3) != "/gone/notify hook-ish stop" {
		t.Fatalf("to intentq-hook: %q", group["hooks"])
	}
	if retarget(group, starter) {
		t.Error("a second setup changed the hooks again")
	}
	if err := os.Remove(hookBin); err != nil {
		t.Fatal(err)
	}
	if !retarget(group, starter) || command(0) != shellQuote(starter)+" hook stop --cli codex" {
		t.Fatalf("back to the starter: %q", command(0))
	}
	// An intentq-hook this user cannot run is as good as none.
	if err := os.WriteFile(hookBin, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := hookProgram(starter); got != starter {
		t.Errorf("hook program with a non-executable intentq-hook beside the starter: %s", got)
	}
}
