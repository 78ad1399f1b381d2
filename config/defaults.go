package config

import "time"

// defaults are the values used when neither a flag, the environment nor the file sets a key.
// Sessions and CLIs are maps and are filled in after decoding (see applyMapDefaults), so that a
// user who defines their own sessions does not also get the default one.
func defaults() map[string]any {
	return map[string]any{
		"data_dir":   "~/.intentq",
		"log.level":  "info",
		"log.format": "auto",

		"temporal.address":            "",
		"temporal.namespace":          "default",
		"temporal.task_queue":         "intentq",
		"temporal.api_key":            "",
		"temporal.api_key_file":       "",
		"temporal.tls.enabled":        false,
		"temporal.tls.cert_file":      "",
		"temporal.tls.key_file":       "",
		"temporal.tls.ca_file":        "",
		"temporal.tls.server_name":    "",
		"temporal.embedded.ip":        "127.0.0.1",
		"temporal.embedded.port":      7233,
		"temporal.embedded.ui_port":   8233,
		"temporal.embedded.retention": 30 * 24 * time.Hour,
		"temporal.embedded.log_level": "warn",

		"ingest.listen":         "127.0.0.1:8787",
		"metrics.listen":        "127.0.0.1:9464",
		"ingest.token":          "",
		"ingest.token_file":     "",
		"ingest.max_text_bytes": 64 << 10,

		"telegram.token":            "",
		"telegram.token_file":       "",
		"telegram.api_endpoint":     "",
		"telegram.allowed_chat_ids": []int64{},
		"telegram.allowed_user_ids": []int64{},

		"ntfy.url":        "",
		"ntfy.topic":      "",
		"ntfy.token":      "",
		"ntfy.token_file": "",

		"reminders.first_after":   30 * time.Second,
		"reminders.repeat_every":  5 * time.Minute,
		"reminders.retry_after":   60 * time.Second,
		"reminders.orphan_after":  24 * time.Hour,
		"reminders.snippet_chars": 40,

		"scheduler.max_concurrent_sessions": 2,
		"scheduler.run_timeout":             30 * time.Minute,

		"delivery.busy_wait":        10 * time.Second,
		"delivery.busy_alert_after": 5 * time.Minute,
		"delivery.busy_lines":       8,

		"hooks.timeout":             5 * time.Second,
		"hooks.reply_tools":         []string{"mcp__plugin_telegram_telegram__reply", "mcp__telegram__reply"},
		"hooks.remind_tools":        []string{"Bash"},
		"hooks.remind_after":        3 * time.Minute,
		"hooks.remind_every":        5 * time.Minute,
		"hooks.exempt_roles":        []string{"coordinator"},
		"hooks.coordinator":         "coordinator",
		"hooks.completion_patterns": []string{},
		"hooks.error_patterns":      []string{},

		"claude.home":         "~/.claude",
		"claude.settings":     "~/.claude/secretary/settings.json",
		"claude.patch_plugin": false,
		"claude.bun":          "",
	}
}

// DefaultSessionName is the session configured when the file defines none.
const DefaultSessionName = "secretary"

func defaultSessions() map[string]Session {
	return map[string]Session{
		DefaultSessionName: {TmuxTarget: "secretary:0", CLI: "claude", Mode: ModeTmux, Default: true},
	}
}

// BuiltinCLIs is the adapter table for the agent CLIs intentq knows (SPEC N4). A user's entry
// for one of these kinds overrides field by field; other kinds may be added in the file.
func BuiltinCLIs() map[string]CLI {
	return map[string]CLI{
		"claude": {
			Command:      "claude",
			Reset:        "/clear",
			BusyPatterns: []string{"Working", "Thinking", "Planning", "Sending", "esc to interrupt"},
			// The input box (three lines) and the hint line under it.
			InputLines:   ptr(4),
			HeadlessArgs: []string{"-p", "--output-format", "json"},
		},
		"codex": {
			Command:      "codex",
			Reset:        "/new",
			BusyPatterns: []string{"Working", "esc to interrupt"},
		},
		"copilot": {
			Command:      "copilot",
			Reset:        "C-c",
			Relaunch:     true,
			BusyPatterns: []string{"Thinking", "Esc to cancel"},
		},
		"kimi": {
			// No reset by default: set clis.kimi.reset to enable phase 3 for Kimi.
			Command:      "kimi",
			BusyPatterns: []string{"Thinking", "Working"},
		},
	}
}

// Session modes.
const (
	ModeTmux     = "tmux"
	ModeHeadless = "headless"
)

func ptr[T any](v T) *T { return &v }
