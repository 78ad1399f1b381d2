package headless

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/agentcli"
	"github.com/intentq/intentq/internal/toolpolicy"
)

func TestRunEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "INTENTQ_TELEGRAM_TOKEN=1:x",
		"INTENTQ_INGEST_TOKEN=y", "ANTHROPIC_API_KEY=sk", "CLAUDE_CODE_USE_BEDROCK=1", "GITHUB_TOKEN=ghp", "AWS_SECRET_ACCESS_KEY=a",
		"FOO=1", "FOOBAR=2", "MY_X=3", "=weird"}
	names := func(env []string) string {
		var out []string
		for _, kv := range env {
			n, _, _ := strings.Cut(kv, "=")
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	if got := names(RunEnv(environ, "claude", []string{"FOO", "MY_*", "INTENTQ_*"})); got != "PATH HOME LANG LC_ALL TERM ANTHROPIC_API_KEY CLAUDE_CODE_USE_BEDROCK FOO MY_X" {
		t.Errorf("claude: %s", got)
	}
	if got := names(RunEnv(environ, "copilot", nil)); got != "PATH HOME LANG LC_ALL TERM GITHUB_TOKEN" {
		t.Errorf("copilot: %s", got)
	}
	if got := names(RunEnv(environ, "my-fork", nil)); !strings.Contains(got, "ANTHROPIC_API_KEY") || strings.Contains(got, "GITHUB") {
		t.Errorf("a custom kind gets Claude Code's variables: %s", got)
	}
	if env := RunEnv(nil, "claude", nil); env == nil || len(env) != 0 {
		t.Errorf("an empty environment must be empty, not nil (nil inherits the worker's): %#v", env)
	}
}

func resolverConfig(t *testing.T) *config.Config {
	t.Helper()
	clis := agentcli.Builtin()
	clis["fake"] = config.CLI{Command: "/bin/fake", HeadlessArgs: []string{"-p"}}
	return &config.Config{
		DataDir: t.TempDir(),
		CLIs:    clis,
		Sessions: map[string]config.Session{
			"batch":     {CLI: "claude", Mode: config.ModeHeadless},
			"plain":     {CLI: "fake", Mode: config.ModeHeadless},
			"kimi":      {CLI: "kimi", Mode: config.ModeHeadless},
			"secretary": {CLI: "claude", Mode: config.ModeTmux},
		},
		Scheduler: config.Scheduler{RunTimeout: 7 * time.Minute, Sandbox: SandboxBubblewrap},
		Policies:  toolpolicy.Policy{Sessions: map[string]toolpolicy.Rule{"plain": {Dir: "~/src/app", Env: []string{"FOO"}}}},
	}
}

// Issue 23: what runs comes from the worker's config: a session it does not have as headless
// is ErrNotHeadless; Claude Code runs get the PreToolUse hook with the run's guard.
func TestResolver(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "starter"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("INTENTQ_INGEST_TOKEN", "secret")
	t.Setenv("FOO", "1")
	cfg := resolverConfig(t)
	resolve := Resolver(cfg)
	for _, s := range []string{"evil", "secretary", ""} {
		if _, err := resolve(s, "cli"); !errors.Is(err, activities.ErrNotHeadless) {
			t.Errorf("session %q: err = %v, want ErrNotHeadless", s, err)
		}
	}
	spec, err := resolve("batch", "telegram")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cfg.DataDir, "headless", "batch", "telegram", "work")
	chHome := filepath.Join(cfg.DataDir, "headless", "batch", "telegram", "home")
	if spec.Command != "claude" || strings.Join(spec.Args, " ") != "-p --output-format json --setting-sources user" || spec.Dir != dir || spec.Timeout != 7*time.Minute {
		t.Errorf("spec = %+v", spec)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("work folder: %v %v", fi, err)
	}
	if !slices.Contains(spec.ToolFlags, "--disallowedTools") || spec.SettingsFlag != "--settings" ||
		strings.Join(spec.Hook[1:], " ") != "hook policy" || filepath.Base(spec.Hook[0]) != "starter" {
		t.Errorf("flags %q settings %q hook %q", spec.ToolFlags, spec.SettingsFlag, spec.Hook)
	}
	g := spec.Guard
	if g == nil || g.Dir != dir || g.Home != chHome || g.Policy.Channel != "telegram" || !slices.Contains(g.Private, cfg.DataDir) ||
		!slices.Contains(g.Private, filepath.Join(home, ".ssh")) || !slices.Contains(g.Private, filepath.Join(chHome, ".ssh")) {
		t.Fatalf("guard = %+v", g)
	}
	// Confined by the kernel: the telegram channel reads its work folder only; HOME is the
	// channel's own; git runs no repository program.
	if spec.Confine == nil || !slices.Contains(spec.Env, "HOME="+chHome) || !slices.Contains(spec.Env, "GIT_CONFIG_KEY_0=safe.bareRepository") {
		t.Fatalf("not confined: env %q", spec.Env)
	}
	prog, args := spec.Confine("claude", []string{"-p"})
	if filepath.Base(prog) != "bwrap" || !strings.Contains(strings.Join(args, " "), "--ro-bind "+dir+" "+dir) ||
		!strings.Contains(strings.Join(args, " "), "--bind "+chHome+" "+chHome) || !strings.Contains(strings.Join(args, " "), "--tmpfs "+cfg.DataDir) {
		t.Errorf("sandbox: %s %q", prog, args)
	}
	web, err := resolve("batch", "web")
	if err != nil {
		t.Fatal(err)
	}
	if web.Dir == spec.Dir || !strings.Contains(strings.Join(func() []string { _, a := web.Confine("claude", nil); return a }(), " "), "--bind "+web.Dir+" "+web.Dir) {
		t.Errorf("web shares telegram's folder or cannot write its own: %s", web.Dir)
	}
	for _, kv := range spec.Env {
		if strings.HasPrefix(kv, "INTENTQ_") || strings.HasPrefix(kv, "FOO=") {
			t.Errorf("the batch run sees %s", kv)
		}
	}
	// The configured folder and variables; a CLI without a settings file gets no hook.
	spec, err = resolve("plain", "")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Dir != filepath.Join(home, "src", "app") || spec.Guard != nil || !slices.Contains(spec.Env, "FOO=1") {
		t.Errorf("plain: %+v", spec)
	}
	if _, err := resolve("kimi", "telegram"); !errors.Is(err, toolpolicy.ErrUnenforceable) {
		t.Errorf("kimi with a read-only policy: %v", err)
	}
	// Without a starter to run as the hook, a Claude Code run does not start.
	t.Setenv("PATH", "/nonexistent")
	cfg.Scheduler.Sandbox = SandboxOff
	if _, err := resolve("batch", "cli"); err == nil || !strings.Contains(err.Error(), "starter") {
		t.Errorf("no starter: %v", err)
	}
	// Without bubblewrap, no run starts (fails closed), unless the person turned the sandbox off.
	cfg.Scheduler.Sandbox = SandboxBubblewrap
	if _, err := resolve("plain", "cli"); !errors.Is(err, ErrNoSandbox) {
		t.Errorf("no bwrap: %v, want ErrNoSandbox", err)
	}
}
