package config

import (
	"encoding/json"
	"fmt"

	"github.com/intentq/intentq/internal/base/trust"
)

// Secret is a credential (bot token, ingest token, ntfy token, API key). Every way of printing
// it (fmt, JSON, YAML, zap) shows a placeholder; Reveal is the only way to the value.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value, for the one place that must send it.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether the secret has a value.
func (s Secret) IsSet() bool { return s != "" }

// String hides the value from fmt and from zap.Stringer.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString hides the value from %#v.
func (s Secret) GoString() string { return s.String() }

// MarshalJSON hides the value from JSON output.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText hides the value from text encoders (YAML, zap reflection).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// resolveSecret fills *value from file when only the file is given. Setting both is an error,
// because the user cannot tell which one wins. The file must be private (trust.ReadSecretFile:
// no access for group or others, else an error naming the chmod that fixes it).
func resolveSecret(key string, value *Secret, file string) error {
	if file == "" {
		return nil
	}
	if value.IsSet() {
		return fmt.Errorf("config: set only one of %s and %s_file", key, key)
	}
	v, err := trust.ReadSecretFile(expandHome(file))
	if err != nil {
		return fmt.Errorf("config: %s_file: %w", key, err)
	}
	*value = Secret(v)
	return nil
}
