package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/intentq/intentq/internal/agentcli"
)

// EnvPrefix starts every environment variable intentq reads.
const EnvPrefix = "INTENTQ"

// EnvConfigFile names the config file when --config is not given.
const EnvConfigFile = EnvPrefix + "_CONFIG"

// EnvHookStarted is when a hook began (Unix nanoseconds), set by intentq-hook for the starter it
// hands the hook to: the starter has what is left of the hook's time (hooks.Budget).
const EnvHookStarted = EnvPrefix + "_HOOK_STARTED"

// nonConfigEnv are INTENTQ_* variables that are not config keys and must not be reported as
// unknown ones.
var nonConfigEnv = map[string]bool{
	EnvConfigFile:           true,
	EnvPrefix + "_AGENT_ID": true, // the Stop hook's agent override (SPEC S1)
	EnvPrefix + "_BUN":      true, // the bun the plugin tests use
	EnvPrefix + "_CLAUDE":   true, // the Claude Code CLI the end-to-end tests run
	EnvHookStarted:          true,
}

// flagKeys maps the command-line flags shared by the worker and the starter to config keys.
var flagKeys = map[string]string{
	"data-dir":         "data_dir",
	"log-level":        "log.level",
	"log-format":       "log.format",
	"temporal-address": "temporal.address",
	"namespace":        "temporal.namespace",
	"task-queue":       "temporal.task_queue",
}

// RegisterFlags adds --config and the flags that override config keys to fs.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "config file (YAML); default $"+EnvConfigFile+", else ~/.intentq/config.yaml when present")
	fs.String("data-dir", "", "directory for the embedded server's database and history (data_dir)")
	fs.String("log-level", "", "log level: debug, info, warn, error (log.level)")
	fs.String("log-format", "", "log format: json, console, auto (log.format)")
	fs.String("temporal-address", "", "external Temporal frontend host:port; empty runs the embedded server (temporal.address)")
	fs.String("namespace", "", "Temporal namespace (temporal.namespace)")
	fs.String("task-queue", "", "Temporal task queue (temporal.task_queue)")
}

// Load reads the configuration: flags (when fs is not nil and a flag was set) over INTENTQ_*
// environment variables over the YAML file over defaults. It fails on unknown keys, invalid
// values and unreadable secret files, naming the key.
func Load(fs *pflag.FlagSet) (*Config, error) {
	v := viper.New()
	for key, value := range defaults() {
		v.SetDefault(key, value)
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	if fs != nil {
		for flagName, key := range flagKeys {
			if f := fs.Lookup(flagName); f != nil {
				if err := v.BindPFlag(key, f); err != nil {
					return nil, fmt.Errorf("config: bind flag --%s: %w", flagName, err)
				}
			}
		}
	}

	path, err := configPath(fs)
	if err != nil {
		return nil, err
	}
	if path != "" {
		v.SetConfigFile(path)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config: read %s: %w", path, err)
		}
	}

	if err := bindEnv(v, os.Environ()); err != nil {
		return nil, fmt.Errorf("config: environment: %w", err)
	}
	if err := checkKnownKeys(v.AllKeys()); err != nil {
		return nil, withFile(err, path)
	}
	if err := CheckEnv(os.Environ()); err != nil {
		return nil, err
	}

	var cfg Config
	if err := v.UnmarshalExact(&cfg); err != nil {
		return nil, withFile(fmt.Errorf("config: %w", cleanDecodeError(err)), path)
	}
	if err := cfg.finish(); err != nil {
		return nil, withFile(err, path)
	}
	if path != "" {
		if abs, err := filepath.Abs(path); err == nil {
			cfg.File = abs
		}
	}
	return &cfg, nil
}

// Fallback is the configuration to report a failed Load with: the file and the environment's
// data_dir and ntfy keys when those load, else the defaults. It changes the process environment
// (it drops the INTENTQ_* variables it does not trust), so only a process that is about to end
// because its config failed should call it: a hook telling the person why it did nothing.
func Fallback(fs *pflag.FlagSet) *Config {
	keep := map[string]bool{EnvConfigFile: true, envName("data_dir"): true}
	for _, key := range []string{"ntfy.url", "ntfy.topic", "ntfy.token", "ntfy.token_file"} {
		keep[envName(key)] = true
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") && !keep[name] {
			_ = os.Unsetenv(name)
		}
	}
	if cfg, err := Load(fs); err == nil {
		return cfg
	}
	for name := range keep {
		_ = os.Unsetenv(name)
	}
	_ = os.Setenv(EnvConfigFile, os.DevNull)
	if cfg, err := Load(nil); err == nil {
		return cfg
	}
	return &Config{DataDir: expandHome("~/.intentq")}
}

func withFile(err error, path string) error {
	if path == "" {
		return err
	}
	return fmt.Errorf("%w (file %s)", err, path)
}

// FilePath is the config file Load reads for fs (absolute), or "" when there is none.
func FilePath(fs *pflag.FlagSet) (string, error) {
	p, err := configPath(fs)
	if err != nil || p == "" {
		return p, err
	}
	return filepath.Abs(p)
}

// configPath picks the config file: --config, then INTENTQ_CONFIG, then ~/.intentq/config.yaml
// when it exists. A file named explicitly must exist.
func configPath(fs *pflag.FlagSet) (string, error) {
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && f.Value.String() != "" {
			return expandHome(f.Value.String()), nil
		}
	}
	if p := os.Getenv(EnvConfigFile); p != "" {
		return expandHome(p), nil
	}
	p := expandHome("~/.intentq/config.yaml")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", nil
}

// finish resolves secrets and paths, fills map defaults and validates.
func (c *Config) finish() error {
	for _, s := range []struct {
		key   string
		value *Secret
		file  string
	}{
		{"temporal.api_key", &c.Temporal.APIKey, c.Temporal.APIKeyFile},
		{"ingest.token", &c.Ingest.Token, c.Ingest.TokenFile},
		{"telegram.token", &c.Telegram.Token, c.Telegram.TokenFile},
		{"ntfy.token", &c.Ntfy.Token, c.Ntfy.TokenFile},
	} {
		if err := resolveSecret(s.key, s.value, s.file); err != nil {
			return err
		}
	}
	c.DataDir = expandHome(c.DataDir)
	if c.Host == "" {
		c.Host = DefaultHost()
	}
	c.Claude.Home = expandHome(c.Claude.Home)
	c.Claude.Settings = expandHome(c.Claude.Settings)
	c.Claude.Bun = expandHome(c.Claude.Bun)
	c.Temporal.TLS.CertFile = expandHome(c.Temporal.TLS.CertFile)
	c.Temporal.TLS.KeyFile = expandHome(c.Temporal.TLS.KeyFile)
	c.Temporal.TLS.CAFile = expandHome(c.Temporal.TLS.CAFile)
	c.Temporal.Encryption.KeyFile = expandHome(c.Temporal.Encryption.KeyFile)
	c.applyMapDefaults()
	return c.Validate()
}

func (c *Config) applyMapDefaults() {
	if len(c.Sessions) == 0 {
		c.Sessions = defaultSessions()
	}
	builtin := agentcli.Builtin()
	if c.CLIs == nil {
		c.CLIs = map[string]CLI{}
	}
	for kind, def := range builtin {
		user, ok := c.CLIs[kind]
		if !ok {
			c.CLIs[kind] = def
			continue
		}
		if user.Command == "" {
			user.Command = def.Command
		}
		if user.Reset == "" {
			user.Reset = def.Reset
		}
		if user.BusyPatterns == nil {
			user.BusyPatterns = def.BusyPatterns
		}
		if user.NewlineKey == "" {
			user.NewlineKey = def.NewlineKey
		}
		if user.ClearKeys == "" {
			user.ClearKeys = def.ClearKeys
		}
		if user.InputLines == nil {
			user.InputLines = def.InputLines
		}
		if user.HeadlessArgs == nil {
			user.HeadlessArgs = def.HeadlessArgs
		}
		if user.SettingsFlag == "" {
			user.SettingsFlag = def.SettingsFlag
		}
		if user.ChannelsFlag == "" {
			user.ChannelsFlag = def.ChannelsFlag
		}
		if user.DialogPatterns == nil {
			user.DialogPatterns = def.DialogPatterns
		}
		if user.InputPrompt == "" {
			user.InputPrompt = def.InputPrompt
		}
		if user.InterruptKeys == "" {
			user.InterruptKeys = def.InterruptKeys
		}
		if user.StopKeys == "" {
			user.StopKeys = def.StopKeys
		}
		if user.LaunchArgs == nil {
			user.LaunchArgs = def.LaunchArgs
		}
		if user.InputPlaceholders == nil {
			user.InputPlaceholders = def.InputPlaceholders
		}
		// A fact of the built-in program (how it gives a Stop reason to the model).
		user.StopReasonTwice = user.StopReasonTwice || def.StopReasonTwice
		user.SessionStartAtPrompt = user.SessionStartAtPrompt || def.SessionStartAtPrompt
		// The built-in process names hold for the built-in program, also named by its path.
		if fields := strings.Fields(user.Command); user.ProcessNames == nil && len(fields) > 0 && filepath.Base(fields[0]) == def.Command {
			user.ProcessNames = def.ProcessNames
		}
		c.CLIs[kind] = user
	}
	for kind, cli := range c.CLIs {
		if cli.ClearKeys == "" {
			cli.ClearKeys = "C-u"
			c.CLIs[kind] = cli
		}
	}
	for name, s := range c.Sessions {
		if s.Mode == "" {
			s.Mode = ModeTmux
		}
		if s.CLI == "" {
			s.CLI = "claude"
		}
		c.Sessions[name] = s
	}
}

// checkKnownKeys reports every key that does not name a field of Config.
func checkKnownKeys(keys []string) error {
	var unknown []string
	for _, k := range keys {
		if !knownKey(reflect.TypeOf(Config{}), strings.Split(k, ".")) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("config: unknown key %s", strings.Join(quoteAll(unknown), ", "))
}

// knownKey walks t by mapstructure tags; a map consumes one path segment (its key).
func knownKey(t reflect.Type, path []string) bool {
	if len(path) == 0 {
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, f := range taggedFields()[t] {
			if strings.EqualFold(f.tag, path[0]) {
				return knownKey(f.typ, path[1:])
			}
		}
		return false
	case reflect.Map:
		return knownKey(t.Elem(), path[1:])
	default:
		return false
	}
}

// taggedField is a struct field as knownKey reads it: its mapstructure tag and its type.
type taggedField struct {
	tag string
	typ reflect.Type
}

// taggedFields are the fields of Config and of every struct type within it (every struct type
// knownKey can reach from Config: through struct fields and map elements), read once per
// process: checkKnownKeys looks up every key of the config, defaults included, and reading a
// field's tag parses it anew each time.
var taggedFields = sync.OnceValue(func() map[reflect.Type][]taggedField {
	out := map[reflect.Type][]taggedField{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			if _, seen := out[t]; seen {
				return
			}
			fields := make([]taggedField, 0, t.NumField())
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				fields = append(fields, taggedField{tag: f.Tag.Get("mapstructure"), typ: f.Type})
			}
			out[t] = fields
			for _, f := range fields {
				walk(f.typ)
			}
		}
	}
	walk(reflect.TypeOf(Config{}))
	return out
})

// CheckEnv rejects INTENTQ_* variables that match no config key, so a typo is not silently
// ignored (keys inside maps included, see env.go).
func CheckEnv(environ []string) error {
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || nonConfigEnv[name] || knownEnv(name) {
			continue
		}
		unknown = append(unknown, name)
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("config: unknown environment variable %s (config keys map to %s_ + the key in upper case with . as _)",
		strings.Join(unknown, ", "), EnvPrefix)
}

// cleanDecodeError drops mapstructure's preamble so the message starts with the key.
func cleanDecodeError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "decoding failed due to the following error(s):")
	msg = strings.TrimSpace(msg)
	msg = strings.ReplaceAll(msg, "\n\n", "; ")
	return errors.New(msg)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// expandHome turns a leading ~ into the user's home directory.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}
