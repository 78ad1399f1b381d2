package headless

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A web run once planted a git repository's HEAD, config (core.fsmonitor) and
// objects/refs in a shared work folder, and the person's own `git status` there ran the command
// outside any sandbox. After the run, every plant it made is moved aside (at any depth, whatever
// CLI made it), an existing repository's config and hooks are put back as they were, and what
// was there before the run (the person's own repository and .envrc) and the run's ordinary
// files stay.
func TestWatchPlantsMovesWhatARunPlanted(t *testing.T) {
	work := t.TempDir()
	quarantine := filepath.Join(t.TempDir(), "quarantine")
	marker := filepath.Join(t.TempDir(), "PWNED")
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	write := func(rel, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(work, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	// The person's own: a repository and an .envrc.
	git(work, "init", "-q", ".")
	write(".envrc", "export A=1\n", 0o600)
	config, err := os.ReadFile(filepath.Join(work, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}

	sweep, err := WatchPlants(work, quarantine)
	if err != nil {
		t.Fatal(err)
	}
	// The run: a bare-repository trap in a subfolder, editor and agent settings, a nested
	// repository, a changed config and a new hook in the person's repository, and its work.
	trap := "[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch " + marker + "; echo\n"
	write("sub/HEAD", "ref: refs/heads/main\n", 0o600)
	write("sub/config", trap, 0o600)
	write("sub/objects/.keep", "", 0o600)
	write("sub/refs/heads/.keep", "", 0o600)
	write("Src/.VSCode/tasks.json", `{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}`, 0o600)
	write("deep/a/.git/config", trap, 0o600)
	write("deep/.mcp.json", "{}", 0o600)
	write(".git/config", string(config)+"[core]\n\tfsmonitor = touch "+marker+"; echo\n", 0o600)
	write(".git/hooks/pre-commit", "#!/bin/sh\ntouch "+marker+"\n", 0o700)
	write("notes.txt", "the run's answer\n", 0o600)

	moved, err := sweep()
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(moved, "\n")
	for _, rel := range []string{"sub/HEAD", "Src/.VSCode", "deep/a/.git", "deep/.mcp.json", ".git/hooks/pre-commit", ".git/config (put back"} {
		if !strings.Contains(all, rel) {
			t.Errorf("%s not moved aside or put back:\n%s", rel, all)
		}
	}
	for _, rel := range []string{"sub/HEAD", "Src/.VSCode", "deep/a/.git", "deep/.mcp.json", ".git/hooks/pre-commit"} {
		if _, err := os.Lstat(filepath.Join(work, rel)); err == nil {
			t.Errorf("%s is still in the work folder", rel)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(work, ".git", "config")); string(got) != string(config) {
		t.Errorf("the person's repository config is not as it was:\n%s", got)
	}
	for _, rel := range []string{".envrc", "notes.txt", "sub/config", ".git/HEAD"} {
		if _, err := os.Stat(filepath.Join(work, rel)); err != nil {
			t.Errorf("%s was taken: %v", rel, err)
		}
	}
	if fi, err := os.Stat(quarantine); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the quarantine is not a private folder: %v", err)
	}
	// The person's own git, no hardening: nothing runs, in the subfolder or the repository.
	git(filepath.Join(work, "sub"), "status")
	git(work, "status")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the person's git status ran a planted program")
	}
	// A second run that plants nothing moves nothing.
	sweep, err = WatchPlants(work, quarantine)
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := sweep(); err != nil || len(moved) != 0 {
		t.Errorf("a run that planted nothing: %v %q", err, moved)
	}
}
