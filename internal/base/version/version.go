// Package version names the build of intentq's binaries: the release and the commit, set by the
// linker (-ldflags "-X ...") when the Makefile or GoReleaser builds them, read from the Go
// module's build information otherwise.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at build time:
//
//	-X github.com/intentq/intentq/internal/base/version.Version=0.5.0
//	-X github.com/intentq/intentq/internal/base/version.Commit=abc1234
var (
	// Version is the release the binary was built as; empty: the module's version when it was
	// installed as a module (go install ...@v0.5.0: 0.5.0), else Dev.
	Version string
	// Commit is the commit the binary was built from; empty: the build's vcs.revision (go build
	// in a checkout stamps it), else unknown.
	Commit string
)

// Dev is the version of a build that names none.
const Dev = "dev"

// Info is one build's version.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}

// Get is this binary's version.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, bi)
}

// resolve fills what the linker did not set from the build information (nil: none).
func resolve(version, commit string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, Go: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			info.Go = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = strings.TrimPrefix(bi.Main.Version, "v")
		}
		if info.Commit == "" {
			var dirty bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					info.Commit = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if len(info.Commit) > 7 {
				info.Commit = info.Commit[:7]
			}
			if info.Commit != "" && dirty {
				info.Commit += "-dirty"
			}
		}
	}
	if info.Version == "" {
		info.Version = Dev
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the line --version prints: "intentq worker 0.5.0 (commit abc1234, go1.26.8)".
func (i Info) String(program string) string {
	return fmt.Sprintf("intentq %s %s (commit %s, %s)", program, i.Version, i.Commit, i.Go)
}

// Line is this binary's version line for program (worker, starter, intentq-hook).
func Line(program string) string { return Get().String(program) }

// Asked reports whether a command line asks only for the version: `--version`, `-version` or
// `version`, alone.
func Asked(args []string) bool {
	if len(args) != 1 {
		return false
	}
	switch args[0] {
	case "--version", "-version", "version":
		return true
	}
	return false
}
