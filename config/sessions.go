package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SessionFor names the session a chat's messages go to: the session that lists the chat, else
// the default session.
func (c *Config) SessionFor(chatID string) (string, error) {
	id, err := strconv.ParseInt(chatID, 10, 64)
	if err == nil {
		for _, name := range c.SessionNames() {
			for _, chat := range c.Sessions[name].Chats {
				if chat == id {
					return name, nil
				}
			}
		}
	}
	for _, name := range c.SessionNames() {
		if c.Sessions[name].Default {
			return name, nil
		}
	}
	return "", fmt.Errorf("chat %s is mapped to no session and no session is marked default (sessions.<name>.default)", chatID)
}

// ApprovalChat is the Telegram chat where session name's approvals are asked (issue 36): the
// first chat it lists, else the first allowed chat whose messages go to it; empty when approvals
// are off for it (sessions.<name>.approvals: false) or it has no chat (or no bot token).
func (c *Config) ApprovalChat(name string) string {
	s, ok := c.Sessions[name]
	if !ok || s.Approvals != nil && !*s.Approvals || c.Telegram.Token.Reveal() == "" {
		return ""
	}
	if len(s.Chats) > 0 {
		return strconv.FormatInt(s.Chats[0], 10)
	}
	for _, id := range c.Telegram.AllowedChatIDs {
		chat := strconv.FormatInt(id, 10)
		if to, err := c.SessionFor(chat); err == nil && to == name {
			return chat
		}
	}
	return ""
}

// SessionNames lists the configured sessions in name order.
func (c *Config) SessionNames() []string { return slices.Sorted(maps.Keys(c.Sessions)) }

// DefaultHost is the host a worker serves unless host says otherwise: the machine's name.
func DefaultHost() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "localhost"
	}
	return name
}

// HostOf is the host whose worker serves session name: sessions.<name>.host, else this
// worker's host.
func (c *Config) HostOf(name string) string {
	if h := c.Sessions[name].Host; h != "" {
		return h
	}
	return c.Host
}

// Local reports whether session name is served by this worker's host.
func (c *Config) Local(name string) bool { return c.HostOf(name) == c.Host }

// NtfyTopicFor is the topic a session's pushes go to, empty when ntfy is not configured.
func (c *Config) NtfyTopicFor(session string) string {
	if c.Ntfy.URL == "" {
		return ""
	}
	if t := c.Sessions[session].NtfyTopic; t != "" {
		return t
	}
	return c.Ntfy.Topic
}

// HistoryPath is the history file of a session: sessions.<name>.history, else
// data_dir/history/<name>.jsonl.
func (c *Config) HistoryPath(session string) string {
	if p := c.Sessions[session].History; p != "" {
		return expandHome(p)
	}
	return filepath.Join(c.DataDir, "history", session+".jsonl")
}

// EscalationFor resolves a session's ladder: thresholds as configured (zero: the workflow's
// defaults of 2m, 4m and 5m), the interrupt phase on unless switched off, and the reset phase
// (which wipes the agent's conversation) off unless escalation.reset turns it on (issue 35:
// until the person can say yes from the phone, a reset is theirs to opt into).
func (c *Config) EscalationFor(session string) (interruptAfter, resetAfter, cooldown time.Duration, interrupt, reset bool) {
	s := c.Sessions[session]
	e := s.Escalation
	interruptAfter, resetAfter, cooldown = e.InterruptAfter, e.ResetAfter, e.ResetCooldown
	interrupt = e.Interrupt == nil || *e.Interrupt
	if e.Reset != nil {
		reset = *e.Reset
	}
	return interruptAfter, resetAfter, cooldown, interrupt, reset
}

// HeadlessSessions lists the sessions in mode headless, in name order; only names when only is
// not empty (an unknown or non-headless name gives none).
func (c *Config) HeadlessSessions(only string) []string {
	var out []string
	for _, name := range c.SessionNames() {
		if c.Sessions[name].Mode == ModeHeadless && (only == "" || only == name) {
			out = append(out, name)
		}
	}
	return out
}

// SpoolDir is where the patched Telegram plugin spools every message before it posts it, and
// writes its canary and error records (the spool door drains it).
func (c *Config) SpoolDir() string { return filepath.Join(c.DataDir, "spool") }

// PluginTokenFile is the 0600 file the patched plugin reads the ingest token from at run time
// (never written into server.ts): ingest.token_file when set, else data_dir/plugin/ingest.token.
func (c *Config) PluginTokenFile() string {
	if c.Ingest.TokenFile != "" {
		return expandHome(c.Ingest.TokenFile)
	}
	return filepath.Join(c.DataDir, "plugin", "ingest.token")
}

// DefaultReplyHint is the hint a delivered message carries unless the session sets its own: the
// agent answers with intentq's MCP reply tool, which closes the intent.
const DefaultReplyHint = "answer with mcp__intentq__reply chat_id={chat} reply_to={msg}"

// ReplyHintFor is the session's reply hint for one message, empty when the session has none.
func (c *Config) ReplyHintFor(session, chatID, messageID string) string {
	hint := c.Sessions[session].ReplyHint
	switch hint {
	case "none":
		return ""
	case "":
		hint = DefaultReplyHint
	}
	return strings.NewReplacer("{chat}", chatID, "{msg}", messageID).Replace(hint)
}

// PollerStatusFile is where the Telegram poller keeps its conflict state for doctor.
func (c *Config) PollerStatusFile() string {
	return filepath.Join(c.DataDir, "telegram", "poller.json")
}
