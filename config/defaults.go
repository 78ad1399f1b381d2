package config

import (
	"time"

	"github.com/intentq/intentq/internal/policy"
)

// defaults are the values used when neither a flag, the environment nor the file sets a key.
// Sessions and CLIs are maps and are filled in after decoding (see applyMapDefaults), so that a
// user who defines their own sessions does not also get the default one.
func defaults() map[string]any {
	return map[string]any{
		"data_dir":   "~/.intentq",
		"host":       "",
		"nice":       5,
		"log.level":  "info",
		"log.format": "auto",

		"temporal.address":                  "",
		"temporal.namespace":                "default",
		"temporal.task_queue":               "intentq",
		"temporal.workflow_cache":           1000,
		"temporal.api_key":                  "",
		"temporal.api_key_file":             "",
		"temporal.tls.enabled":              false,
		"temporal.tls.cert_file":            "",
		"temporal.tls.key_file":             "",
		"temporal.tls.ca_file":              "",
		"temporal.tls.server_name":          "",
		"temporal.embedded.ip":              "127.0.0.1",
		"temporal.embedded.allow_remote":    false,
		"temporal.embedded.port":            7233,
		"temporal.embedded.ui_port":         8233,
		"temporal.embedded.retention":       30 * 24 * time.Hour,
		"temporal.embedded.log_level":       "warn",
		"temporal.encryption.mode":          EncryptionAuto,
		"temporal.encryption.key_file":      "",
		"temporal.encryption.key":           "",
		"temporal.encryption.codec_origins": []string{"http://127.0.0.1:8233", "http://localhost:8233"},
		"temporal.encryption.accept_plain":  false,

		"ingest.listen":         "127.0.0.1:8787",
		"ingest.allow_remote":   false,
		"metrics.listen":        "127.0.0.1:9464",
		"ingest.token":          "",
		"ingest.token_file":     "",
		"ingest.max_text_bytes": 64 << 10,

		"telegram.token":              "",
		"telegram.token_file":         "",
		"telegram.api_endpoint":       "",
		"telegram.allowed_chat_ids":   []int64{},
		"telegram.allowed_user_ids":   []int64{},
		"telegram.ack_reaction":       "👀",
		"telegram.cancel_reaction":    "🕊",
		"telegram.done_reaction":      "👌",
		"telegram.delivered_reaction": "✍",
		"telegram.failed_reaction":    "😢",

		"ntfy.url":        "",
		"ntfy.topic":      "",
		"ntfy.token":      "",
		"ntfy.token_file": "",

		"reminders.first_after":   policy.DefaultReminders.FirstAfter,
		"reminders.repeat_every":  policy.DefaultReminders.RepeatEvery,
		"reminders.retry_after":   policy.DefaultReminders.RetryAfter,
		"reminders.orphan_after":  policy.DefaultReminders.OrphanAfter,
		"reminders.snippet_chars": policy.DefaultReminders.SnippetChars,

		"scheduler.max_concurrent_sessions": policy.DefaultMaxConcurrentRuns,
		"scheduler.run_timeout":             policy.DefaultRunTimeout,
		"scheduler.sandbox":                 "bwrap",

		"delivery.busy_wait":           policy.DefaultBusy.BusyWait,
		"delivery.busy_alert_after":    policy.DefaultBusy.BusyAlertAfter,
		"delivery.busy_lines":          policy.DefaultBusy.BusyLines,
		"delivery.waits_for_you_after": policy.DefaultBusy.WaitsForYouAfter,

		"hooks.timeout":             5 * time.Second,
		"hooks.reply_tools":         []string{"mcp__plugin_telegram_telegram__reply", "mcp__telegram__reply"},
		"hooks.remind_tools":        []string{"Bash"},
		"hooks.remind_after":        3 * time.Minute,
		"hooks.remind_every":        5 * time.Minute,
		"hooks.exempt_roles":        []string{"coordinator"},
		"hooks.coordinator":         "coordinator",
		"hooks.completion_patterns": []string{},
		"hooks.error_patterns":      []string{},
		"hooks.approval_wait":       10 * time.Minute,
		"hooks.codex_approval_wait": 2 * time.Minute,

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

// Session modes.
const (
	ModeTmux     = "tmux"
	ModeHeadless = "headless"
)
