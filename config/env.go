package config

import (
	"reflect"
	"sort"
	"strings"

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

// mapSection is a map in Config: its key path and the keys of one element.
type mapSection struct {
	path   string
	fields []string // longest first, so "tmux_target" is tried before "target"
}

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
				maps = append(maps, mapSection{path: key, fields: leaves(f.Type.Elem(), "")})
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
		prefix := envName(m.path) + "_"
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		for _, field := range m.fields {
			suffix := "_" + strings.ToUpper(strings.ReplaceAll(field, ".", "_"))
			if key, ok := strings.CutSuffix(rest, suffix); ok && key != "" {
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
	plain, maps := configLayout()
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
	plain, maps := configLayout()
	for _, key := range plain {
		if envName(key) == name {
			return true
		}
	}
	_, ok := mapKeyFromEnv(name, maps)
	return ok
}
