package headless

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/toolpolicy"
)

// Runner is the worker's AgentRun activity: it runs only the headless sessions of cfg, each
// as cfg says (Resolve), and alerts through alert when a workflow names another.
func Runner(cfg *config.Config, alert func(ctx context.Context, title, message string)) *activities.AgentRunner {
	return &activities.AgentRunner{Resolve: Resolver(cfg), Alert: alert}
}

// Resolver resolves a run of a headless session from a channel into what runs, from the
// worker's config only (issue 23): the CLI's command and headless arguments
// (clis.<kind>), the tool policy's flags for the channel and session, the work folder
// (ChannelFolders), scheduler.run_timeout, a scrubbed environment (RunEnv, GitEnv), the kernel
// sandbox (Sandbox, unless scheduler.sandbox is off; a run that cannot be confined does not
// start), and, for CLIs that take a settings file (Claude Code), the PreToolUse hook that checks
// every tool call (`starter hook policy`). A session that is not
// in cfg with mode headless is an error wrapping activities.ErrNotHeadless.
func Resolver(cfg *config.Config) func(session, channel string) (activities.RunSpec, error) {
	return func(session, channel string) (activities.RunSpec, error) {
		s, ok := cfg.Sessions[session]
		if !ok || s.Mode != config.ModeHeadless || session == "" {
			return activities.RunSpec{}, fmt.Errorf("session %q: %w", session, activities.ErrNotHeadless)
		}
		cli, ok := cfg.CLIs[s.CLI]
		if !ok {
			return activities.RunSpec{}, fmt.Errorf("session %s: clis.%s is not configured", session, s.CLI)
		}
		if channel == "" {
			channel = toolpolicy.ChannelCLI
		}
		eff, err := cfg.Policies.Resolve(channel, session)
		if err != nil {
			return activities.RunSpec{}, fmt.Errorf("tool policy for %s on %s: %w", channel, session, err)
		}
		flags, err := toolFlags(eff, s.CLI)
		if err != nil {
			return activities.RunSpec{}, fmt.Errorf("tool policy for %s on %s (clis.%s): %w", channel, session, s.CLI, err)
		}
		dir, chHome, err := ChannelFolders(cfg, session, channel)
		if err != nil {
			return activities.RunSpec{}, err
		}
		home, _ := os.UserHomeDir()
		guardHome := home
		private := PrivatePaths(cfg, home)
		var starter string
		var starterErr error
		if cli.SettingsFlag != "" {
			starter, starterErr = starterProgram()
		}
		env := append(RunEnv(os.Environ(), s.CLI, cfg.Policies.Env(channel, session)), GitEnv()...)
		spec := activities.RunSpec{
			Command: cli.Command, Args: cli.HeadlessBaseArgs(), ToolFlags: flags,
			Dir: dir, Timeout: cfg.Scheduler.RunTimeout, Env: env,
		}
		if cfg.Scheduler.Sandbox != SandboxOff {
			bw, err := sandboxProgram()
			if err != nil {
				return activities.RunSpec{}, fmt.Errorf("session %s: %w", session, err)
			}
			sb := Sandbox{Program: bw.program, NoNestedUserns: bw.noNestedUserns, Work: dir, Writable: eff.Writes(), Home: chHome,
				PersonHome: home, Hide: slices.Clip(private), Show: showLogins(s.CLI, home, chHome),
				Programs: programFolders(cli.Command)}
			if starter != "" {
				sb.Programs = append(sb.Programs, programFolders(starter)...)
			}
			spec.Confine = sb.Wrap
			spec.Knows = func(id string) bool { return holdsConversation(s.CLI, chHome, id) }
			spec.Env = setEnv(setEnv(unsetEnv(spec.Env, "XDG_RUNTIME_DIR"), "HOME", chHome), "TMPDIR", "/tmp")
			guardHome = chHome
		}
		if eff.Writes() && !eff.AllowAll {
			spec.Quarantine = func() (func() ([]string, error), error) {
				return WatchPlants(dir, filepath.Join(filepath.Dir(chHome), "quarantine"))
			}
		}
		if cli.SettingsFlag != "" {
			if starterErr != nil {
				return activities.RunSpec{}, fmt.Errorf("session %s: %w", session, starterErr)
			}
			if guardHome != home {
				for _, p := range credentialStores {
					private = append(private, filepath.Join(guardHome, p))
				}
			}
			spec.SettingsFlag = cli.SettingsFlag
			spec.Hook = []string{starter, "hook", "policy"}
			spec.Guard = &toolpolicy.Guard{Policy: eff, Dir: dir, Home: guardHome, Private: private}
		}
		return spec, nil
	}
}

// ChannelFolders are the folders of a headless session's runs from one channel (issue 33):
// the work folder, policies.sessions.<name>.dir (or policies.global.dir) when configured, else
// data_dir/headless/<name>/<channel>/work, and the channel's own home for the CLI's state,
// data_dir/headless/<name>/<channel>/home; both created (0700). Channels never share a
// default work folder, so what one channel's run leaves is never read by another's.
func ChannelFolders(cfg *config.Config, session, channel string) (work, home string, err error) {
	root, err := filepath.Abs(filepath.Join(cfg.DataDir, "headless", session, channel))
	if err != nil {
		return "", "", fmt.Errorf("session %s: %w", session, err)
	}
	home = filepath.Join(root, "home")
	work = filepath.Join(root, "work")
	if d := cfg.Policies.Dir(session); d != "" {
		if work, err = expandHome(d); err != nil {
			return "", "", err
		}
		work = filepath.Clean(work)
	} else if err := os.MkdirAll(work, 0o700); err != nil {
		return "", "", fmt.Errorf("session %s: work folder: %w", session, err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", "", fmt.Errorf("session %s: the %s channel's home: %w", session, channel, err)
	}
	return work, home, nil
}

// conversationFiles are where each CLI kind keeps a conversation of id under its home: Claude
// Code .claude/projects/<folder>/<id>.jsonl, Codex .codex/sessions/<y>/<m>/<d>/rollout-...-<id>.jsonl.
func conversationFiles(home, id string) []string {
	return []string{
		filepath.Join(home, ".claude", "projects", "*", id+".jsonl"),
		filepath.Join(home, ".codex", "sessions", "*", "*", "*", "*"+id+"*.jsonl"),
	}
}

// holdsConversation reports whether a channel's home holds a CLI conversation of that id
// (conversationFiles); a kind whose files are not known there is given the benefit of the doubt.
func holdsConversation(kind, home, id string) bool {
	if kind != toolpolicy.KindClaude && kind != toolpolicy.KindCodex {
		return true
	}
	for _, pattern := range conversationFiles(home, id) {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return true
		}
	}
	return false
}

// unsetEnv removes one variable from an environment list.
func unsetEnv(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if n, _, _ := strings.Cut(kv, "="); n != name {
			out = append(out, kv)
		}
	}
	return out
}

// setEnv sets one variable in an environment list.
func setEnv(env []string, name, value string) []string {
	return append(unsetEnv(env, name), name+"="+value)
}

func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expand %s: %w", p, err)
	}
	return filepath.Join(home, p[1:]), nil
}

// credentialStores are the files and folders under the home folder that hold credentials,
// other agents' transcripts and state, shell and tool histories, browser and editor profiles: no
// headless run may read or write them, whatever its policy and work folder (the sandbox hides the
// whole home besides; these stay hidden where a work folder of ~ shows it). A run's CLI gets its
// own state in its channel's home, and its login shown there read-only (cliLogins).
var credentialStores = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker/config.json", ".netrc", ".git-credentials",
	".pgpass", ".config/gh", ".config/gcloud", ".password-store", ".local/share/keyrings", ".vault-token",
	".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
	".terraform.d", ".config/op",
	// Agents' transcripts, API keys and settings (MCP servers' environments).
	".claude", ".claude.json", ".claude.json.backup", ".codex", ".gemini", ".copilot", ".kimi", ".config/claude",
	".config/github-copilot", ".cursor", ".continue", ".aider.conf.yml",
	// Histories.
	".bash_history", ".zsh_history", ".histfile", ".python_history", ".node_repl_history", ".psql_history",
	".mysql_history", ".sqlite_history", ".lesshst", ".viminfo", ".local/share/fish", ".local/share/recently-used.xbel",
	// Browsers and editors (cookies, sessions, IDE lock tokens).
	".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/Code", ".vscode",
	".vscode-server", ".config/JetBrains", ".local/share/JetBrains",
}

// PrivatePaths are what no headless run may touch: intentq's data_dir (tokens, keys, every
// message's history) and secret files, and the credential stores in home.
func PrivatePaths(cfg *config.Config, home string) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if p, err := expandHome(p); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				out = append(out, abs)
			}
		}
	}
	add(cfg.DataDir)
	add(cfg.File)
	add(cfg.EncryptionKeyFile())
	// The person's tmux server's socket folder when it is not under /tmp (hidden whole).
	add(os.Getenv("TMUX_TMPDIR"))
	for _, p := range []string{cfg.Temporal.APIKeyFile, cfg.Temporal.TLS.KeyFile, cfg.Ingest.TokenFile, cfg.Telegram.TokenFile, cfg.Ntfy.TokenFile} {
		add(p)
	}
	if home != "" {
		for _, p := range credentialStores {
			out = append(out, filepath.Join(home, p))
		}
	}
	return out
}

// starterProgram finds the starter binary the hook runs: next to this worker, else on PATH.
func starterProgram() (string, error) {
	var beside string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		if filepath.Base(exe) == "starter" {
			return exe, nil
		}
		beside = filepath.Join(filepath.Dir(exe), "starter")
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("starter"); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("the tool policy hook runs `starter hook policy`, but there is no starter binary next to the worker (%s) or on PATH: nothing runs without it", beside)
}

// Variables every run gets when the worker has them: what a CLI needs to find its programs,
// its home and settings, the language, the terminal, and the way out (proxies, CAs).
var (
	runEnvNames = []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR", "TZ", "TMPDIR",
		"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
	}
	runEnvPrefixes = []string{"LC_"}
	// cliEnv are each kind's API variables (names, or prefixes ending in *); other kinds get
	// Claude Code's, whose flags they take.
	cliEnv = map[string][]string{
		toolpolicy.KindClaude:  {"ANTHROPIC_*", "CLAUDE_*"},
		toolpolicy.KindCodex:   {"OPENAI_*", "CODEX_*"},
		toolpolicy.KindCopilot: {"COPILOT_*", "GH_TOKEN", "GITHUB_TOKEN", "GH_HOST"},
		toolpolicy.KindKimi:    {"KIMI_*", "MOONSHOT_*"},
	}
)

// RunEnv is a run's environment, taken from the worker's (environ): the few variables a CLI
// needs (PATH, HOME, LANG, LC_*, TERM, TMPDIR, proxies, ...), the API variables of its kind
// (ANTHROPIC_* and CLAUDE_* for Claude Code), and the names in extra (policies.*.env, NAME or
// PREFIX_*). Nothing else: no INTENTQ_* variable ever (tokens, keys), no other secret the
// worker's environment holds.
func RunEnv(environ []string, kind string, extra []string) []string {
	api, ok := cliEnv[kind]
	if !ok {
		api = cliEnv[toolpolicy.KindClaude]
	}
	patterns := append(append([]string(nil), api...), extra...)
	keep := func(name string) bool {
		if strings.HasPrefix(strings.ToUpper(name), "INTENTQ") {
			return false
		}
		for _, n := range runEnvNames {
			if name == n {
				return true
			}
		}
		for _, p := range runEnvPrefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		for _, p := range patterns {
			if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || name == p {
				return true
			}
		}
		return false
	}
	out := []string{}
	for _, kv := range environ {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" && keep(name) {
			out = append(out, kv)
		}
	}
	return out
}

// toolFlags renders the policy as the flags of a CLI kind; a kind Flags does not know gets
// Claude Code's flags, a kind that cannot enforce the policy is an error.
func toolFlags(eff toolpolicy.Effective, kind string) ([]string, error) {
	flags, err := eff.FlagsFor(kind)
	switch {
	case errors.Is(err, toolpolicy.ErrUnenforceable):
		return nil, err
	case err != nil:
		return eff.Flags(kind), nil // a custom kind: Claude Code's flags
	}
	return flags, nil
}
