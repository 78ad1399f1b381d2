package session

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/intentq/intentq/config"
)

// SPEC N1, N2, N4: a session's workflow config is the adapter of its CLI kind with the
// session's own escalation and the delivery settings.
func TestN4TmuxConfigFromConfig(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("INTENTQ_CONFIG", "")
	cfg, err := config.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	// A key-style reset with a relaunch (a CLI that quits on C-c and is started again).
	copilot := cfg.CLIs["copilot"]
	copilot.Model, copilot.Reset, copilot.Relaunch = "gpt-5", "C-c", true
	cfg.CLIs["copilot"] = copilot
	cfg.Sessions["pilot"] = config.Session{TmuxTarget: "pilot:0", CLI: "copilot", Mode: config.ModeTmux, ProtectContext: true}
	cfg.Delivery.BusyWait = 3 * time.Second

	sc := TmuxConfig(cfg, "pilot")
	if sc.Reset.Command != "C-c" || sc.Reset.Relaunch != "copilot --model gpt-5" {
		t.Errorf("reset = %+v", sc.Reset)
	}
	if sc.BusyWait != 3*time.Second || sc.BusyLines != cfg.Delivery.BusyLines {
		t.Errorf("busy = %+v", sc.Busy)
	}
	if !reflect.DeepEqual(sc.BusyPatterns, copilot.BusyPatterns) {
		t.Errorf("busy patterns = %q", sc.BusyPatterns)
	}
	if sc.Escalation.Reset || !sc.Escalation.Interrupt {
		t.Errorf("protect_context must switch the reset off and keep the interrupt: %+v", sc.Escalation)
	}

	// Issue 23: the worker's directory names the pane, the keys, the launch line and the shells
	// it may be typed into, from the config alone.
	ep, err := Endpoints(cfg).Lookup("pilot")
	if err != nil || ep.Target != "pilot:0" || ep.LaunchLine != "copilot --model gpt-5" || len(ep.Shells) == 0 ||
		!slices.Contains(ep.Keys, "C-c") || !slices.Contains(ep.Keys, "C-u") {
		t.Errorf("pilot endpoint = %+v (%v)", ep, err)
	}
	if _, err := Endpoints(cfg).Lookup("nosuch"); err == nil {
		t.Error("an unknown session resolved")
	}

	claude := TmuxConfig(cfg, config.DefaultSessionName)
	if claude.Reset.Command != "/clear" || claude.Reset.Relaunch != "" || claude.InputLines != 4 || !reflect.DeepEqual(claude.ClearKeys, []string{"C-u"}) {
		t.Errorf("claude session = %+v", claude)
	}
}
