package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/intentq/intentq/internal/base/version"
)

// --version and the version command print the build's line and need no config, no worker and
// no Temporal; --json gives the same three parts.
func TestVersion(t *testing.T) {
	want := version.Line("starter") + "\n"
	for _, args := range [][]string{{"--version"}, {"version", "--config", "/nonexistent/intentq.yaml"}} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("starter %q: %v", args, err)
		}
		if out.String() != want {
			t.Errorf("starter %q printed %q, want %q", args, out.String(), want)
		}
	}
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version", "--json"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var got version.Info
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got != version.Get() {
		t.Errorf("version --json = %s (%v), want %+v", out.String(), err, version.Get())
	}
}
