package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// isolate gives the test an empty HOME and no INTENTQ_* variables from the caller's shell.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	return home
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestDefaults(t *testing.T) {
	home := isolate(t)
	cfg, err := Load(flags(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != filepath.Join(home, ".intentq") {
		t.Errorf("data_dir = %q, want ~/.intentq expanded", cfg.DataDir)
	}
	if !cfg.EmbeddedServer() || cfg.TemporalAddress() != "127.0.0.1:7233" || cfg.UIAddress() != "http://127.0.0.1:8233" {
		t.Errorf("embedded defaults: embedded=%v address=%s ui=%s", cfg.EmbeddedServer(), cfg.TemporalAddress(), cfg.UIAddress())
	}
	if cfg.Temporal.Embedded.Retention != 30*24*time.Hour {
		t.Errorf("retention = %s, want 720h", cfg.Temporal.Embedded.Retention)
	}
	if cfg.Temporal.Namespace != "default" || cfg.Temporal.TaskQueue != "intentq" {
		t.Errorf("namespace/task queue = %s/%s", cfg.Temporal.Namespace, cfg.Temporal.TaskQueue)
	}
	r := cfg.Reminders
	if r.FirstAfter != 30*time.Second || r.RepeatEvery != 5*time.Minute || r.RetryAfter != time.Minute ||
		r.OrphanAfter != 24*time.Hour || r.SnippetChars != 40 {
		t.Errorf("reminders = %+v", r)
	}
	s, ok := cfg.Sessions[DefaultSessionName]
	if !ok || s.TmuxTarget != "secretary:0" || s.CLI != "claude" || s.Mode != ModeTmux || !s.Default {
		t.Errorf("default session = %+v (present %v)", s, ok)
	}
	for _, kind := range []string{"claude", "codex", "copilot", "kimi"} {
		if cfg.CLIs[kind].Command == "" {
			t.Errorf("built-in CLI %s missing", kind)
		}
	}
	if cfg.Ingest.Listen != "127.0.0.1:8787" {
		t.Errorf("ingest.listen = %s", cfg.Ingest.Listen)
	}
}

// TestPrecedence checks flags > env > file > defaults, key by key.
func TestPrecedence(t *testing.T) {
	home := isolate(t)
	file := writeFile(t, home, "c.yaml", `
temporal:
  namespace: from-file
  task_queue: from-file
  address: file:7233
log:
  level: warn
`)
	t.Setenv("INTENTQ_TEMPORAL_TASK_QUEUE", "from-env")
	t.Setenv("INTENTQ_TEMPORAL_ADDRESS", "env:7233")
	cfg, err := Load(flags(t, "--config", file, "--temporal-address", "flag:7233"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Temporal.Address; got != "flag:7233" {
		t.Errorf("address = %s, want the flag's", got)
	}
	if got := cfg.Temporal.TaskQueue; got != "from-env" {
		t.Errorf("task_queue = %s, want the env's", got)
	}
	if got := cfg.Temporal.Namespace; got != "from-file" {
		t.Errorf("namespace = %s, want the file's", got)
	}
	if got := cfg.Log.Level; got != "warn" {
		t.Errorf("log.level = %s, want the file's", got)
	}
	if got := cfg.Log.Format; got != "auto" {
		t.Errorf("log.format = %s, want the default", got)
	}
	if cfg.EmbeddedServer() {
		t.Error("an address is set: the embedded server must not run")
	}
}

func TestConfigFileFromEnv(t *testing.T) {
	home := isolate(t)
	file := writeFile(t, home, "c.yaml", "temporal: {namespace: via-env-path}\n")
	t.Setenv(EnvConfigFile, file)
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Temporal.Namespace != "via-env-path" {
		t.Errorf("namespace = %s", cfg.Temporal.Namespace)
	}
}

func TestEnvLists(t *testing.T) {
	isolate(t)
	t.Setenv("INTENTQ_TELEGRAM_ALLOWED_CHAT_IDS", "12,-100345")
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cfg.Telegram.AllowedChatIDs); got != "[12 -100345]" {
		t.Errorf("allowed_chat_ids = %s", got)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{name: "unknown file key", file: "temporal: {adress: x:1}\n", want: `unknown key "temporal.adress"`},
		{name: "unknown top key", file: "colour: blue\n", want: `unknown key "colour"`},
		{name: "unknown env", env: map[string]string{"INTENTQ_TEMPORAL_ADRESS": "x:1"}, want: "INTENTQ_TEMPORAL_ADRESS"},
		{name: "bad duration", file: "reminders: {first_after: soon}\n", want: "reminders.first_after"},
		{name: "bad duration env", env: map[string]string{"INTENTQ_REMINDERS_REPEAT_EVERY": "often"}, want: "reminders.repeat_every"},
		{name: "negative duration", file: "reminders: {retry_after: -1s}\n", want: "reminders.retry_after"},
		{name: "bad port type", file: "temporal: {embedded: {port: seven}}\n", want: "temporal.embedded.port"},
		{name: "port range", file: "temporal: {embedded: {port: 70000}}\n", want: "temporal.embedded.port"},
		{name: "same ports", file: "temporal: {embedded: {port: 9000, ui_port: 9000}}\n", want: "temporal.embedded.ui_port"},
		{name: "short retention", file: "temporal: {embedded: {retention: 1h}}\n", want: "temporal.embedded.retention"},
		{name: "log level", env: map[string]string{"INTENTQ_LOG_LEVEL": "loud"}, want: "log.level"},
		{name: "address", file: "temporal: {address: nohostport}\n", want: "temporal.address"},
		{name: "unknown cli", file: "sessions: {s1: {tmux_target: 'a:0', cli: emacs}}\n", want: "sessions.s1.cli"},
		{name: "bad mode", file: "sessions: {s1: {tmux_target: 'a:0', mode: telepathy}}\n", want: "sessions.s1.mode"},
		{name: "two defaults", file: "sessions: {a: {tmux_target: 'a:0', default: true}, b: {tmux_target: 'b:0', default: true}}\n", want: "more than one default"},
		{name: "chat twice", file: "sessions: {a: {tmux_target: 'a:0', chats: [5]}, b: {tmux_target: 'b:0', chats: [5]}}\n", want: "sessions.b.chats"},
		{name: "endpoint", file: "telegram: {api_endpoint: 'http://x/bot'}\n", want: "telegram.api_endpoint"},
		{name: "token without allowlist", env: map[string]string{"INTENTQ_TELEGRAM_TOKEN": "123:abc"}, want: "telegram.allowed_chat_ids"},
		{name: "allowed chat without session", file: "telegram: {token: 't:1', allowed_chat_ids: [5]}\nsessions: {a: {tmux_target: 'a:0', chats: [6]}}\n", want: "chat 5 is mapped to no session"},
		{name: "allowed user without default", file: "telegram: {token: 't:1', allowed_user_ids: [5]}\nsessions: {a: {tmux_target: 'a:0', chats: [6]}}\n", want: "telegram.allowed_user_ids"},
		{name: "ntfy url", file: "ntfy: {url: 'ftp://x', topic: t}\n", want: "ntfy.url"},
		{name: "secret twice", file: "ingest: {token: a, token_file: /nonexistent}\n", want: "ingest.token and ingest.token_file"},
		{name: "secret file missing", file: "ingest: {token_file: /nonexistent/token}\n", want: "ingest.token_file"},
		{name: "tls half", file: "temporal: {tls: {cert_file: /a}}\n", want: "temporal.tls"},
		{name: "remote embedded ip", file: "temporal: {embedded: {ip: 0.0.0.0}}\n", want: "temporal.embedded.allow_remote"},
		{name: "remote ingest", env: map[string]string{"INTENTQ_INGEST_LISTEN": "0.0.0.0:8787"}, want: "ingest.allow_remote"},
		{name: "ingest on every interface", env: map[string]string{"INTENTQ_INGEST_LISTEN": ":8787"}, want: "ingest.listen"},
		{name: "bad yaml", file: "temporal: [\n", want: "c.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := isolate(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := []string{}
			if tc.file != "" {
				args = append(args, "--config", writeFile(t, home, "c.yaml", tc.file))
			}
			_, err := Load(flags(t, args...))
			if err == nil {
				t.Fatalf("Load succeeded, want an error naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

func TestMissingExplicitFile(t *testing.T) {
	isolate(t)
	_, err := Load(flags(t, "--config", "/nonexistent/intentq.yaml"))
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/intentq.yaml") {
		t.Fatalf("err = %v, want one naming the file", err)
	}
}

func TestSecretsFromFileNeverPrinted(t *testing.T) {
	home := isolate(t)
	tokenFile := writeFile(t, home, "ingest.token", "s3cr3t-ingest\n")
	t.Setenv("INTENTQ_INGEST_TOKEN_FILE", tokenFile)
	t.Setenv("INTENTQ_TELEGRAM_TOKEN", "123:bot-secret")
	t.Setenv("INTENTQ_TELEGRAM_ALLOWED_USER_IDS", "42")
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Ingest.Token.Reveal() != "s3cr3t-ingest" {
		t.Errorf("ingest token = %q, want the file's content trimmed", cfg.Ingest.Token.Reveal())
	}

	core, logs := observer.New(zap.DebugLevel)
	zap.New(core).Info("config", zap.Any("config", cfg), zap.Stringer("token", cfg.Telegram.Token))
	js, _ := json.Marshal(cfg)
	printed := []string{fmt.Sprintf("%v %+v %#v", cfg, *cfg, *cfg), string(js)}
	for _, e := range logs.All() {
		printed = append(printed, fmt.Sprint(e.ContextMap()))
	}
	for _, out := range printed {
		for _, secret := range []string{"s3cr3t-ingest", "bot-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("secret %q printed in %q", secret, out)
			}
		}
	}
}

func TestUserSessionsReplaceDefaultAndCLIsMerge(t *testing.T) {
	home := isolate(t)
	file := writeFile(t, home, "c.yaml", `
sessions:
  ops: {tmux_target: "ops:1", cli: codex, chats: [7]}
clis:
  claude: {busy_patterns: [Brewing]}
  aider: {command: aider, reset: /reset}
`)
	cfg, err := Load(flags(t, "--config", file))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Sessions[DefaultSessionName]; ok || len(cfg.Sessions) != 1 {
		t.Errorf("sessions = %v, want only ops", cfg.Sessions)
	}
	if s := cfg.Sessions["ops"]; s.Mode != ModeTmux || s.CLI != "codex" {
		t.Errorf("ops = %+v", s)
	}
	c := cfg.CLIs["claude"]
	if c.Command != "claude" || c.Reset != "/clear" || fmt.Sprint(c.BusyPatterns) != "[Brewing]" {
		t.Errorf("claude = %+v, want the user's patterns over built-in command and reset", c)
	}
	if cfg.CLIs["aider"].Command != "aider" || cfg.CLIs["kimi"].Command != "kimi" {
		t.Errorf("clis = %v", cfg.CLIs)
	}
}

// TestExampleConfig keeps the commented example in the repository loadable.
func TestExampleConfig(t *testing.T) {
	isolate(t)
	cfg, err := Load(flags(t, "--config", "../intentq.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Temporal.Embedded.UIPort != 8233 {
		t.Errorf("example ui_port = %d", cfg.Temporal.Embedded.UIPort)
	}
}

// Every key is settable from the environment, keys inside maps included: the map key sits in
// the middle of the name and may itself hold "_".
func TestEnvMapKeys(t *testing.T) {
	home := isolate(t)
	file := writeFile(t, home, "c.yaml", `
sessions:
  night_shift: {tmux_target: "night:0", cli: codex}
`)
	t.Setenv("INTENTQ_CLIS_CLAUDE_COMMAND", "/opt/claude/bin/claude")
	t.Setenv("INTENTQ_CLIS_CLAUDE_INPUT_LINES", "3")
	t.Setenv("INTENTQ_SESSIONS_NIGHT_SHIFT_TMUX_TARGET", "night:2")
	t.Setenv("INTENTQ_SESSIONS_NIGHT_SHIFT_CHATS", "5,6")
	t.Setenv("INTENTQ_SESSIONS_NIGHT_SHIFT_ESCALATION_RESET_AFTER", "10m")
	t.Setenv("INTENTQ_POLICIES_CHANNELS_WEB_DENY", "Write,Edit")
	t.Setenv("INTENTQ_POLICIES_GLOBAL_DENY", "WebFetch")
	cfg, err := Load(flags(t, "--config", file))
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.CLIs["claude"]; c.Command != "/opt/claude/bin/claude" || c.Lines() != 3 || c.Reset != "/clear" {
		t.Errorf("claude = %+v", c)
	}
	s := cfg.Sessions["night_shift"]
	if s.TmuxTarget != "night:2" || s.CLI != "codex" || fmt.Sprint(s.Chats) != "[5 6]" || s.Escalation.ResetAfter != 10*time.Minute {
		t.Errorf("night_shift = %+v", s)
	}
	if got := fmt.Sprint(cfg.Policies.Channels["web"].Deny, cfg.Policies.Global.Deny); got != "[Write Edit] [WebFetch]" {
		t.Errorf("policies = %s", got)
	}

	t.Setenv("INTENTQ_CLIS_CLAUDE_NO_SUCH_FIELD", "x")
	if _, err := Load(flags(t, "--config", file)); err == nil || !strings.Contains(err.Error(), "INTENTQ_CLIS_CLAUDE_NO_SUCH_FIELD") {
		t.Errorf("unknown map field: %v", err)
	}
}

// Listeners beyond loopback are accepted only when the config says so.
func TestAllowRemote(t *testing.T) {
	isolate(t)
	t.Setenv("INTENTQ_TEMPORAL_EMBEDDED_IP", "0.0.0.0")
	t.Setenv("INTENTQ_TEMPORAL_EMBEDDED_ALLOW_REMOTE", "true")
	t.Setenv("INTENTQ_INGEST_LISTEN", "0.0.0.0:8787")
	t.Setenv("INTENTQ_INGEST_ALLOW_REMOTE", "true")
	cfg, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Temporal.Embedded.AllowRemote || !cfg.Ingest.AllowRemote {
		t.Errorf("allow_remote not loaded: %+v %+v", cfg.Temporal.Embedded, cfg.Ingest)
	}
	// An external cluster does not use temporal.embedded.ip.
	isolate(t)
	t.Setenv("INTENTQ_TEMPORAL_EMBEDDED_IP", "0.0.0.0")
	t.Setenv("INTENTQ_TEMPORAL_ADDRESS", "temporal:7233")
	if _, err := Load(nil); err != nil {
		t.Errorf("external cluster with a remote embedded.ip: %v", err)
	}
}

// A secret file others may read is refused, naming the chmod that fixes it.
func TestSecretFileMustBePrivate(t *testing.T) {
	home := isolate(t)
	tokenFile := writeFile(t, home, "ingest.token", "s3cr3t\n")
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("INTENTQ_INGEST_TOKEN_FILE", tokenFile)
	_, err := Load(nil)
	if err == nil || !strings.Contains(err.Error(), "ingest.token_file") || !strings.Contains(err.Error(), "chmod 600 "+tokenFile) {
		t.Fatalf("Load with a 0644 token file: %v, want an error naming ingest.token_file and the chmod", err)
	}
}
