package config

import (
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/viper"
)

// Every config key is also an environment variable: INTENTQ_ + the key path in upper case with
// "." as "_". Keys inside maps carry the map key in the middle, in any case, and are read in
// lower case: INTENTQ_SESSIONS_SECRETARY_TMUX_TARGET is sessions.secretary.tmux_target,
// INTENTQ_CLIS_CLAUDE_COMMAND is clis.claude.command, INTENTQ_POLICIES_CHANNELS_WEB_DENY is
// policies.channels.web.deny. A map key may hold "_" (sessions.night_shift); the field is
// matched at the end of the name, the longest field first.

// envName is the environment variable of a config key.
func envName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// mapSection is a map in Config: its key path and the keys of one element, and the parts of
// their environment variables' names (env: the path's name and "_"; envFields: "_" and each
// field's name, in the order of fields).
type mapSection struct {
	path      string
	fields    []string // longest first, so "tmux_target" is tried before "target"
	env       string
	envFields []string
}

// newMapSection is the map section at path whose elements have fields.
func newMapSection(path string, fields []string) mapSection {
	m := mapSection{path: path, fields: fields, env: envName(path) + "_"}
	for _, field := range fields {
		m.envFields = append(m.envFields, "_"+strings.ToUpper(strings.ReplaceAll(field, ".", "_")))
	}
	return m
}

// layout is configLayout, walked once per process: every Load binds the environment with it and
// checks each INTENTQ_* variable against it, and a hook is a new process that loads once (issue
// 38: walking Config by reflection once per variable was a tenth of a hook's CPU).
var layout = sync.OnceValues(configLayout)

// plainEnv is the environment variable of each key outside maps (envName), once per process.
var plainEnv = sync.OnceValue(func() map[string]bool {
	plain, _ := layout()
	names := make(map[string]bool, len(plain))
	for _, key := range plain {
		names[envName(key)] = true
	}
	return names
})

// configLayout lists the keys of Config outside maps, and its map sections.
func configLayout() (plain []string, maps []mapSection) {
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("mapstructure")
			if tag == "" || tag == "-" {
				continue
			}
			key := prefix + tag
			switch {
			case f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(Secret("")):
				walk(f.Type, key+".")
			case f.Type.Kind() == reflect.Map:
				maps = append(maps, newMapSection(key, leaves(f.Type.Elem(), "")))
			default:
				plain = append(plain, key)
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	return plain, maps
}

// leaves are the key paths of the fields of a map element, longest first.
func leaves(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			out = append(out, leaves(f.Type, prefix+tag+".")...)
			continue
		}
		out = append(out, prefix+tag)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// mapKeyFromEnv reads an environment variable name as a key inside a map section
// ("INTENTQ_CLIS_CLAUDE_COMMAND" -> "clis.claude.command"); ok is false for other names.
func mapKeyFromEnv(name string, maps []mapSection) (string, bool) {
	for _, m := range maps {
		rest, ok := strings.CutPrefix(name, m.env)
		if !ok {
			continue
		}
		for i, field := range m.fields {
			if key, ok := strings.CutSuffix(rest, m.envFields[i]); ok && key != "" {
				return m.path + "." + strings.ToLower(key) + "." + field, true
			}
		}
	}
	return "", false
}

// bindEnv makes every config key readable from the environment: the plain keys through viper's
// AutomaticEnv (bound, so keys with no default are seen too), the keys inside maps by reading
// each INTENTQ_* variable that names one.
func bindEnv(v *viper.Viper, environ []string) error {
	plain, maps := layout()
	for _, key := range plain {
		if err := v.BindEnv(key); err != nil {
			return err
		}
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if key, ok := mapKeyFromEnv(name, maps); ok && value != "" {
			v.Set(key, value)
		}
	}
	return nil
}

// knownEnv reports whether an INTENTQ_* variable names a config key.
func knownEnv(name string) bool {
	if plainEnv()[name] {
		return true
	}
	_, maps := layout()
	_, ok := mapKeyFromEnv(name, maps)
	return ok
}
