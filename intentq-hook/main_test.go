package main

import (
	"slices"
	"testing"

	"github.com/intentq/intentq/internal/doors/hooks"
)

// intentq-hook answers only a hook's command line itself; everything else is the starter's, and
// the config's flags go on to the starter's child as they were given.
func TestParseTakesOnlyAHooksCommandLine(t *testing.T) {
	fs, call, ok := parse([]string{"hook", "post-tool-use", "--cli", "codex", "--session", "ops", "--config", "/etc/iq.yaml", "--data-dir=/var/iq"})
	if !ok || call != (hooks.Call{Event: "post-tool-use", CLI: "codex", Session: "ops"}) {
		t.Fatalf("parse: %+v %v", call, ok)
	}
	if got := configArgs(fs); !slices.Equal(got, []string{"--config=/etc/iq.yaml", "--data-dir=/var/iq"}) {
		t.Errorf("config flags for the starter: %q", got)
	}
	if _, call, ok := parse([]string{"hook", "stop"}); !ok || call.CLI != "claude" {
		t.Errorf("a Claude Code hook by default: %+v %v", call, ok)
	}
	for _, args := range [][]string{
		nil,
		{"pending"},
		{"hook"},
		{"hook", "policy", "--guard", "x"},
		{"hook", "no-such-event"},
		{"hook", "stop", "extra"},
		{"hook", "stop", "--no-such-flag"},
		{"stop"},
	} {
		if _, _, ok := parse(args); ok {
			t.Errorf("%q taken as a hook it answers", args)
		}
	}
}
