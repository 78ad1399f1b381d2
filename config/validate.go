package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/intentq/intentq/internal/base/trust"
)

var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"auto", "json", "console"}
	modes      = []string{ModeTmux, ModeHeadless}
)

// Validate checks every value and returns all problems at once, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", key, fmt.Sprintf(format, args...)))
	}

	if c.DataDir == "" {
		bad("data_dir", "must not be empty")
	}
	if !oneOf(c.Log.Level, logLevels) {
		bad("log.level", "%q is not one of %s", c.Log.Level, strings.Join(logLevels, ", "))
	}
	if !oneOf(c.Log.Format, logFormats) {
		bad("log.format", "%q is not one of %s", c.Log.Format, strings.Join(logFormats, ", "))
	}

	t := c.Temporal
	if t.Namespace == "" {
		bad("temporal.namespace", "must not be empty")
	}
	if t.TaskQueue == "" {
		bad("temporal.task_queue", "must not be empty")
	}
	if t.WorkflowCache < 1 {
		bad("temporal.workflow_cache", "must be at least 1")
	}
	if t.Address != "" {
		if _, _, err := net.SplitHostPort(t.Address); err != nil {
			bad("temporal.address", "%q is not host:port", t.Address)
		}
	}
	if (t.TLS.CertFile == "") != (t.TLS.KeyFile == "") {
		bad("temporal.tls", "set both cert_file and key_file, or neither")
	}
	e := t.Embedded
	if ip := net.ParseIP(e.IP); ip == nil {
		bad("temporal.embedded.ip", "%q is not an IP address", e.IP)
	} else if c.EmbeddedServer() && !ip.IsLoopback() && !e.AllowRemote {
		bad("temporal.embedded.ip", "%s is not a loopback address: the Temporal frontend would be reachable from other machines, "+
			"with the access token sent in clear text; keep 127.0.0.1 (use an SSH tunnel), or set temporal.embedded.allow_remote: true", e.IP)
	}
	if e.Port < 1 || e.Port > 65535-1 {
		bad("temporal.embedded.port", "%d is not a port", e.Port)
	}
	if e.UIPort < 0 || e.UIPort > 65535 {
		bad("temporal.embedded.ui_port", "%d is not a port (0 turns the Web UI off)", e.UIPort)
	}
	if e.UIPort != 0 && e.UIPort == e.Port {
		bad("temporal.embedded.ui_port", "must differ from temporal.embedded.port")
	}
	if e.Retention < 24*time.Hour {
		bad("temporal.embedded.retention", "%s is shorter than Temporal's minimum of 24h", e.Retention)
	}
	if !oneOf(e.LogLevel, logLevels) {
		bad("temporal.embedded.log_level", "%q is not one of %s", e.LogLevel, strings.Join(logLevels, ", "))
	}
	if modes := []string{EncryptionAuto, EncryptionOn, EncryptionOff}; !oneOf(c.Temporal.Encryption.Mode, modes) {
		bad("temporal.encryption.mode", "%q is not one of %s", c.Temporal.Encryption.Mode, strings.Join(modes, ", "))
	}

	if host, port, err := net.SplitHostPort(c.Ingest.Listen); err != nil {
		bad("ingest.listen", "%q is not host:port", c.Ingest.Listen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		bad("ingest.listen", "%q has no valid port", c.Ingest.Listen)
	} else if !trust.LoopbackIP(host) && !c.Ingest.AllowRemote {
		bad("ingest.listen", "%q is not a loopback address: the ingest endpoint (and the codec) would be reachable from other machines; "+
			"keep 127.0.0.1, or set ingest.allow_remote: true (e.g. inside a container whose port is published on loopback)", c.Ingest.Listen)
	}
	if c.Ingest.MaxTextBytes < 4096 {
		bad("ingest.max_text_bytes", "%d is below Telegram's own 4096-character limit", c.Ingest.MaxTextBytes)
	}

	if ep := c.Telegram.APIEndpoint; ep != "" && strings.Count(ep, "%s") != 2 {
		bad("telegram.api_endpoint", "must contain %%s twice (token, method), e.g. http://127.0.0.1:8081/bot%%s/%%s")
	}
	if c.Telegram.Token.IsSet() && len(c.Telegram.AllowedChatIDs) == 0 && len(c.Telegram.AllowedUserIDs) == 0 {
		bad("telegram.allowed_chat_ids", "a bot token is set but nobody is allowed; list chat or user IDs")
	}

	if c.Telegram.Token.IsSet() {
		for _, chat := range c.Telegram.AllowedChatIDs {
			if _, err := c.SessionFor(fmt.Sprint(chat)); err != nil {
				bad("telegram.allowed_chat_ids", "%v", err)
			}
		}
		if len(c.Telegram.AllowedUserIDs) > 0 && !c.hasDefaultSession() {
			bad("telegram.allowed_user_ids", "allowed users may write from any chat, so one session must be marked default")
		}
	}

	if c.Ntfy.URL != "" {
		if u, err := url.Parse(c.Ntfy.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("ntfy.url", "%q is not an http(s) URL", c.Ntfy.URL)
		}
		if c.Ntfy.Topic == "" {
			bad("ntfy.topic", "must be set when ntfy.url is")
		}
	}

	r := c.Reminders
	for key, d := range map[string]time.Duration{
		"reminders.first_after":  r.FirstAfter,
		"reminders.repeat_every": r.RepeatEvery,
		"reminders.retry_after":  r.RetryAfter,
		"reminders.orphan_after": r.OrphanAfter,
	} {
		if d <= 0 {
			bad(key, "%s must be positive", d)
		}
	}
	if r.SnippetChars < 1 || r.SnippetChars > 4096 {
		bad("reminders.snippet_chars", "%d is not between 1 and 4096", r.SnippetChars)
	}

	if c.Delivery.BusyWait <= 0 {
		bad("delivery.busy_wait", "%s must be positive", c.Delivery.BusyWait)
	}
	if c.Delivery.BusyAlertAfter <= 0 {
		bad("delivery.busy_alert_after", "%s must be positive", c.Delivery.BusyAlertAfter)
	}
	if c.Delivery.BusyLines < 1 || c.Delivery.BusyLines > 200 {
		bad("delivery.busy_lines", "%d is not between 1 and 200", c.Delivery.BusyLines)
	}
	if c.Hooks.Timeout <= 0 || c.Hooks.Timeout > 10*time.Second {
		bad("hooks.timeout", "%s is not between 0 and 10s", c.Hooks.Timeout)
	}
	// The permission hook is installed with a timeout of an hour (hooks.ApprovalTimeout): it
	// must end itself well before.
	for _, w := range []struct {
		key string
		d   time.Duration
	}{{"hooks.approval_wait", c.Hooks.ApprovalWait}, {"hooks.codex_approval_wait", c.Hooks.CodexApprovalWait}} {
		if w.d <= 0 || w.d > 50*time.Minute {
			bad(w.key, "%s is not between 0 and 50m", w.d)
		}
	}
	for _, p := range append(append([]string{}, c.Hooks.CompletionPatterns...), c.Hooks.ErrorPatterns...) {
		if _, err := regexp.Compile(p); err != nil {
			bad("hooks", "pattern %q: %v", p, err)
		}
	}
	for kind, cli := range c.CLIs {
		if cli.Command == "" {
			bad("clis."+kind+".command", "must not be empty")
		}
		if n := cli.Lines(); n < 0 || n > 20 {
			bad("clis."+kind+".input_lines", "%d is not between 0 and 20", n)
		}
	}
	c.validateSessions(bad)

	if err := c.Policies.Validate(); err != nil {
		bad("policies", "%v", err)
	}
	if c.Scheduler.RunTimeout <= 0 {
		bad("scheduler.run_timeout", "%s must be positive", c.Scheduler.RunTimeout)
	}
	if c.Scheduler.Sandbox != "" && c.Scheduler.Sandbox != "bwrap" && c.Scheduler.Sandbox != "off" {
		bad("scheduler.sandbox", "%q is not bwrap or off", c.Scheduler.Sandbox)
	}
	if c.Nice < 0 || c.Nice > 19 {
		bad("nice", "%d must be between 0 (as started) and 19", c.Nice)
	}
	if c.Scheduler.MaxConcurrentSessions < 1 {
		bad("scheduler.max_concurrent_sessions", "%d must be at least 1", c.Scheduler.MaxConcurrentSessions)
	}

	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func (c *Config) validateSessions(bad func(key, format string, args ...any)) {
	if strings.ContainsAny(c.Host, "/@ \t") {
		bad("host", "a host name may not contain '/', '@' or spaces")
	}
	var defaults []string
	chatOwner := map[int64]string{}
	for _, name := range c.SessionNames() {
		s := c.Sessions[name]
		key := "sessions." + name
		if strings.ContainsAny(name, "/ ") || name == "" {
			bad(key, "a session name may not contain '/' or spaces")
		}
		if strings.ContainsAny(s.Host, "/@ \t") {
			bad(key+".host", "a host name may not contain '/', '@' or spaces")
		}
		if !oneOf(s.Mode, modes) {
			bad(key+".mode", "%q is not one of %s", s.Mode, strings.Join(modes, ", "))
		}
		if s.Mode == ModeHeadless && len(c.CLIs[s.CLI].HeadlessArgs) == 0 {
			bad(key+".mode", "headless needs clis.%s.headless_args (how to run it once per prompt)", s.CLI)
		}
		if s.Mode == ModeTmux && s.TmuxTarget == "" {
			bad(key+".tmux_target", "must be set for mode tmux (e.g. secretary:0)")
		}
		if _, ok := c.CLIs[s.CLI]; !ok {
			bad(key+".cli", "unknown CLI kind %q (known: %s)", s.CLI, strings.Join(c.cliKinds(), ", "))
		}
		if s.Default {
			defaults = append(defaults, name)
		}
		if e := s.Escalation; e.InterruptAfter < 0 || e.ResetAfter < 0 || e.ResetCooldown < 0 {
			bad(key+".escalation", "durations must not be negative")
		} else if e.InterruptAfter != 0 && e.ResetAfter != 0 && e.ResetAfter < e.InterruptAfter {
			bad(key+".escalation.reset_after", "%s is before interrupt_after %s", e.ResetAfter, e.InterruptAfter)
		}
		for _, chat := range s.Chats {
			if other, ok := chatOwner[chat]; ok {
				bad(key+".chats", "chat %d is already mapped to session %q", chat, other)
			}
			chatOwner[chat] = name
		}
	}
	if len(defaults) > 1 {
		bad("sessions", "more than one default session: %s", strings.Join(defaults, ", "))
	}
}

func (c *Config) hasDefaultSession() bool {
	for _, s := range c.Sessions {
		if s.Default {
			return true
		}
	}
	return false
}

func (c *Config) cliKinds() []string { return slices.Sorted(maps.Keys(c.CLIs)) }

func oneOf(s string, options []string) bool {
	for _, o := range options {
		if s == o {
			return true
		}
	}
	return false
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
