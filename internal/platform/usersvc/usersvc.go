// Package usersvc installs intentq's worker as a user service that the operating system keeps
// running (a systemd user unit on Linux, a launchd agent on macOS), and beside it a watchdog
// timer that runs `starter doctor --notify` every few minutes: a watchdog that does not share
// the worker's fate, so a dead worker still tells the phone. Secrets stay in their files; the
// units carry paths only.
package usersvc

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"howett.net/plist"
)

// Names of the units and agents.
const (
	WorkerUnit   = "intentq-worker.service"
	WatchdogUnit = "intentq-watchdog.service"
	WatchdogTime = "intentq-watchdog.timer"
	WorkerLabel  = "dev.intentq.worker"
	WatchLabel   = "dev.intentq.watchdog"
)

// DefaultEvery is how often the watchdog runs.
const DefaultEvery = 5 * time.Minute

// Spec is what the service files say.
type Spec struct {
	// Worker and Starter are the absolute paths of the binaries.
	Worker, Starter string
	// Config is the config file passed with --config; empty passes none.
	Config string
	// DataDir is passed with --data-dir; launchd's log files go under it.
	DataDir string
	// Home is the user's home directory, where the files go.
	Home string
	// UID is the user's id (launchctl's gui/<uid> domain).
	UID int
	// Every is how often the watchdog runs (default DefaultEvery).
	Every time.Duration
}

// File is one file of a plan.
type File struct {
	Path    string
	Content []byte
}

// Plan is what installing or removing the service does: the files, and the commands that enable
// (after writing) or disable (before removing) them.
type Plan struct {
	Files   []File
	Enable  [][]string
	Disable [][]string
}

// For is the plan for an operating system (runtime.GOOS): linux (systemd) or darwin (launchd).
func For(goos string, s Spec) (Plan, error) {
	if s.Every <= 0 {
		s.Every = DefaultEvery
	}
	for name, p := range map[string]string{"worker": s.Worker, "starter": s.Starter, "data_dir": s.DataDir, "home": s.Home} {
		if !filepath.IsAbs(p) {
			return Plan{}, fmt.Errorf("%s path %q is not absolute", name, p)
		}
	}
	switch goos {
	case "linux":
		return systemd(s), nil
	case "darwin":
		return launchd(s)
	default:
		return Plan{}, fmt.Errorf("no user service manager intentq knows on %s (systemd on Linux, launchd on macOS)", goos)
	}
}

// args are the flags every command gets: the config file and data_dir.
func (s Spec) args() []string {
	var out []string
	if s.Config != "" {
		out = append(out, "--config", s.Config)
	}
	return append(out, "--data-dir", s.DataDir)
}

func (s Spec) workerArgs() []string {
	return append(append([]string{s.Worker}, s.args()...), "--log-format", "json")
}

func (s Spec) watchdogArgs() []string {
	return append(append([]string{s.Starter, "doctor", "--notify"}, s.args()...), "--log-format", "json")
}

func systemd(s Spec) Plan {
	dir := filepath.Join(s.Home, ".config", "systemd", "user")
	worker := fmt.Sprintf(`[Unit]
Description=intentq worker: every message to an agent session recorded, delivered, reminded and answered
After=network-online.target

[Service]
Type=simple
ExecStart=%s
Restart=always
RestartSec=5
UMask=0077
# Logs go to the journal: journalctl --user -u %s

[Install]
WantedBy=default.target
`, execLine(s.workerArgs()), WorkerUnit)
	watchdog := fmt.Sprintf(`[Unit]
Description=intentq watchdog: tells the phone when the worker or its server is gone

[Service]
Type=oneshot
ExecStart=%s
# doctor exits 1 when a check fails; that is a report, not a failure of this unit.
SuccessExitStatus=1
UMask=0077
`, execLine(s.watchdogArgs()))
	timer := fmt.Sprintf(`[Unit]
Description=Run the intentq watchdog every %s

[Timer]
OnBootSec=%s
OnUnitActiveSec=%s
Unit=%s

[Install]
WantedBy=timers.target
`, s.Every, seconds(s.Every), seconds(s.Every), WatchdogUnit)
	return Plan{
		Files: []File{
			{Path: filepath.Join(dir, WorkerUnit), Content: []byte(worker)},
			{Path: filepath.Join(dir, WatchdogUnit), Content: []byte(watchdog)},
			{Path: filepath.Join(dir, WatchdogTime), Content: []byte(timer)},
		},
		Enable: [][]string{
			{"systemctl", "--user", "daemon-reload"},
			{"systemctl", "--user", "enable", "--now", WorkerUnit, WatchdogTime},
		},
		Disable: [][]string{
			{"systemctl", "--user", "disable", "--now", WorkerUnit, WatchdogTime},
		},
	}
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d/time.Second)) + "s" }

// execLine quotes a command line for ExecStart: every argument in double quotes, with
// backslashes, quotes, dollars and percents escaped as systemd reads them.
func execLine(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		a = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", "$$", "%", "%%").Replace(a)
		quoted[i] = `"` + a + `"`
	}
	return strings.Join(quoted, " ")
}

func launchd(s Spec) (Plan, error) {
	dir := filepath.Join(s.Home, "Library", "LaunchAgents")
	logs := filepath.Join(s.DataDir, "logs")
	worker := map[string]any{
		"Label":             WorkerLabel,
		"ProgramArguments":  s.workerArgs(),
		"RunAtLoad":         true,
		"KeepAlive":         true,
		"ThrottleInterval":  5,
		"Umask":             0o077,
		"StandardOutPath":   filepath.Join(logs, "worker.log"),
		"StandardErrorPath": filepath.Join(logs, "worker.log"),
	}
	watchdog := map[string]any{
		"Label":             WatchLabel,
		"ProgramArguments":  s.watchdogArgs(),
		"RunAtLoad":         true,
		"StartInterval":     int(s.Every / time.Second),
		"Umask":             0o077,
		"StandardOutPath":   filepath.Join(logs, "watchdog.log"),
		"StandardErrorPath": filepath.Join(logs, "watchdog.log"),
	}
	var files []File
	for _, a := range []struct {
		label string
		doc   map[string]any
	}{{WorkerLabel, worker}, {WatchLabel, watchdog}} {
		var buf bytes.Buffer
		enc := plist.NewEncoderForFormat(&buf, plist.XMLFormat)
		enc.Indent("\t")
		if err := enc.Encode(a.doc); err != nil {
			return Plan{}, fmt.Errorf("render %s: %w", a.label, err)
		}
		files = append(files, File{Path: filepath.Join(dir, a.label+".plist"), Content: buf.Bytes()})
	}
	domain := "gui/" + strconv.Itoa(s.UID)
	return Plan{
		Files: files,
		Enable: [][]string{
			{"mkdir", "-p", logs},
			{"launchctl", "bootstrap", domain, files[0].Path},
			{"launchctl", "bootstrap", domain, files[1].Path},
		},
		Disable: [][]string{
			{"launchctl", "bootout", domain + "/" + WorkerLabel},
			{"launchctl", "bootout", domain + "/" + WatchLabel},
		},
	}, nil
}
