package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestLinkerValuesWin(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ffffffffffffffff"}}}
	got := resolve("0.5.0", "abc1234", bi)
	if want := (Info{Version: "0.5.0", Commit: "abc1234", Go: "go1.26.8"}); got != want {
		t.Errorf("resolve = %+v, want %+v", got, want)
	}
	if line := got.String("worker"); line != "intentq worker 0.5.0 (commit abc1234, go1.26.8)" {
		t.Errorf("line = %q", line)
	}
}

// Without -X: a checkout's build names its commit (and says when the tree was changed), a
// module install its version, and a build with neither is "dev" at an unknown commit.
func TestBuildInfoFallback(t *testing.T) {
	checkout := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}}}
	if got := resolve("", "", checkout); got.Version != Dev || got.Commit != "0123456-dirty" {
		t.Errorf("checkout build = %+v, want dev at 0123456-dirty", got)
	}
	installed := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.5.0"}}
	if got := resolve("", "", installed); got.Version != "0.5.0" || got.Commit != "unknown" {
		t.Errorf("module install = %+v, want 0.5.0 at an unknown commit", got)
	}
	if got := resolve("", "", nil); got != (Info{Version: Dev, Commit: "unknown", Go: runtime.Version()}) {
		t.Errorf("no build info = %+v", got)
	}
}

func TestThisBinary(t *testing.T) {
	line := Line("starter")
	if !strings.HasPrefix(line, "intentq starter ") || !strings.Contains(line, "(commit ") || !strings.Contains(line, runtime.Version()) {
		t.Errorf("Line = %q", line)
	}
}

func TestAsked(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		if !Asked(args) {
			t.Errorf("%q does not ask for the version", args)
		}
	}
	for _, args := range [][]string{nil, {}, {"hook", "stop"}, {"version", "x"}, {"--versions"}, {"-v"}} {
		if Asked(args) {
			t.Errorf("%q taken as asking for the version", args)
		}
	}
}
