package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/internal/base/trust"
)

// Issue 33 (5): `starter ui --open` hands xdg-open a private page's path, never the token: any
// local user reads every process's command line. The page (0600) sends the browser on to the
// login URL.
func TestUIOpenPutsNoTokenOnACommandLine(t *testing.T) {
	home, bin := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	argv := filepath.Join(t.TempDir(), "argv")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argv + ".tmp && mv " + argv + ".tmp " + argv + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dataDir := filepath.Join(home, ".intentq")
	tok, err := trust.EnsureToken(trust.TokenPath(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	cmd := newUI()
	cmd.SetArgs([]string{"--open"})
	cmd.SetOut(&strings.Builder{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0; time.Sleep(20 * time.Millisecond) {
		got, _ = os.ReadFile(argv)
		if time.Now().After(deadline) {
			t.Fatal("xdg-open was not run")
		}
	}
	if strings.Contains(string(got), tok) {
		t.Fatalf("the token is on xdg-open's command line: %q", got)
	}
	page := strings.TrimSpace(string(got))
	info, err := os.Stat(page)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("login page %q: %v %v", page, info, err)
	}
	body, _ := os.ReadFile(page)
	if !strings.Contains(string(body), "location.replace(") || !strings.Contains(string(body), tok) {
		t.Fatalf("login page: %s", body)
	}
}
