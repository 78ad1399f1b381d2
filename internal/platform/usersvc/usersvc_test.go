package usersvc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"howett.net/plist"
)

// spec is a Spec with real executables (systemd-analyze checks that ExecStart exists) under a
// path with a space and a percent sign, which the unit must quote.
func spec(t *testing.T) Spec {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "my bin%")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"worker", "starter"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	return Spec{Worker: filepath.Join(dir, "worker"), Starter: filepath.Join(dir, "starter"),
		Config: filepath.Join(home, ".intentq", "config.yaml"), DataDir: filepath.Join(home, ".intentq"), Home: home, UID: 1000}
}

// The systemd units say what the issue asks (Restart=always, the config path and data_dir, logs
// to the journal, a 5-minute watchdog timer running doctor --notify), carry no secret, and pass
// systemd's own checker.
func TestSystemdUnitsVerify(t *testing.T) {
	s := spec(t)
	plan, err := For("linux", s)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Files) != 3 {
		t.Fatalf("files = %v", plan.Files)
	}
	var paths []string
	for _, f := range plan.Files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.Path, f.Content, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, f.Path)
		if !strings.HasPrefix(f.Path, filepath.Join(s.Home, ".config", "systemd", "user")) {
			t.Errorf("%s is not a user unit", f.Path)
		}
		for _, secret := range []string{"TOKEN", "token=", "Environment="} {
			if strings.Contains(string(f.Content), secret) {
				t.Errorf("%s carries %q", f.Path, secret)
			}
		}
	}
	worker, watchdog, timer := string(plan.Files[0].Content), string(plan.Files[1].Content), string(plan.Files[2].Content)
	for _, want := range []string{"Restart=always", `"--config" "` + s.Config + `"`, `"--data-dir" "` + s.DataDir + `"`, "my bin%%", "WantedBy=default.target"} {
		if !strings.Contains(worker, want) {
			t.Errorf("worker unit lacks %q:\n%s", want, worker)
		}
	}
	if !strings.Contains(watchdog, `"doctor" "--notify"`) || !strings.Contains(timer, "OnUnitActiveSec=300s") {
		t.Errorf("watchdog:\n%s\ntimer:\n%s", watchdog, timer)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not installed (Debian: apt-get install systemd; .ci/run installs it)")
	}
	out, err := exec.Command(analyze, append([]string{"verify"}, paths...)...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "intentq-") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The launchd agents parse as property lists with KeepAlive and RunAtLoad for the worker, a
// StartInterval for the watchdog, and log files under data_dir.
func TestLaunchdAgentsParse(t *testing.T) {
	s := spec(t)
	s.Every = 2 * time.Minute
	plan, err := For("darwin", s)
	if err != nil {
		t.Fatal(err)
	}
	var worker, watchdog struct {
		Label             string
		ProgramArguments  []string
		RunAtLoad         bool
		KeepAlive         bool
		StartInterval     int
		StandardErrorPath string
	}
	for i, v := range []any{&worker, &watchdog} {
		if _, err := plist.Unmarshal(plan.Files[i].Content, v); err != nil {
			t.Fatalf("%s: %v\n%s", plan.Files[i].Path, err, plan.Files[i].Content)
		}
	}
	if worker.Label != WorkerLabel || !worker.KeepAlive || !worker.RunAtLoad || worker.ProgramArguments[0] != s.Worker ||
		!strings.HasPrefix(worker.StandardErrorPath, filepath.Join(s.DataDir, "logs")) {
		t.Errorf("worker agent = %+v", worker)
	}
	if watchdog.StartInterval != 120 || strings.Join(watchdog.ProgramArguments[1:3], " ") != "doctor --notify" {
		t.Errorf("watchdog agent = %+v", watchdog)
	}
	if got := strings.Join(plan.Enable[1], " "); got != "launchctl bootstrap gui/1000 "+plan.Files[0].Path {
		t.Errorf("enable = %q", got)
	}
}

func TestRefusesRelativePathsAndOtherSystems(t *testing.T) {
	s := spec(t)
	s.Worker = "bin/worker"
	if _, err := For("linux", s); err == nil {
		t.Error("a relative worker path was accepted")
	}
	if _, err := For("windows", spec(t)); err == nil {
		t.Error("windows has no user service intentq knows")
	}
}
