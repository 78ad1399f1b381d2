// Package config holds intentq's whole configuration as one typed struct, loaded by viper from a
// YAML file, INTENTQ_* environment variables and command-line flags (flags > env > file >
// defaults). Unknown keys and invalid values are errors that name the key.
package config

import (
	"net"
	"path/filepath"
	"time"

	"github.com/intentq/intentq/internal/agentcli"
	"github.com/intentq/intentq/internal/policy"
	"github.com/intentq/intentq/internal/toolpolicy"
)

// Config is everything the worker and the starter can be told.
type Config struct {
	// File is the config file Load read (absolute), or "" when there was none: a headless run
	// never sees it (it may hold tokens inline).
	File string `mapstructure:"-"`
	// DataDir holds the embedded server's database, history files and backups.
	DataDir string `mapstructure:"data_dir"`
	// Host names the machine this worker serves (default: its host name): it types only into
	// the panes of the sessions on this host and answers their hooks (issue 38).
	Host string `mapstructure:"host"`
	// Nice is the worker's CPU niceness (0: as it was started; 1..19): a worker busy with a burst
	// yields the cores to the agents it serves and to their hooks, which the agents wait for. The
	// headless runs it starts inherit it; agents in tmux panes do not (tmux starts them).
	Nice      int                `mapstructure:"nice"`
	Log       Log                `mapstructure:"log"`
	Temporal  Temporal           `mapstructure:"temporal"`
	Ingest    Ingest             `mapstructure:"ingest"`
	Telegram  Telegram           `mapstructure:"telegram"`
	Ntfy      Ntfy               `mapstructure:"ntfy"`
	Reminders Reminders          `mapstructure:"reminders"`
	Sessions  map[string]Session `mapstructure:"sessions"`
	CLIs      map[string]CLI     `mapstructure:"clis"`
	Scheduler Scheduler          `mapstructure:"scheduler"`
	Delivery  Delivery           `mapstructure:"delivery"`
	Hooks     Hooks              `mapstructure:"hooks"`
	Metrics   Metrics            `mapstructure:"metrics"`
	// Policies are the tool policies of headless runs (SPEC P5), by scope.
	Policies toolpolicy.Policy `mapstructure:"policies"`
	Claude   Claude            `mapstructure:"claude"`
}

// Log sets how the processes log.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `mapstructure:"level"`
	// Format is json, console, or auto (console when stderr is a terminal, else json).
	Format string `mapstructure:"format"`
}

// Temporal says which Temporal cluster to use, or how to run the embedded one.
type Temporal struct {
	// Address of an external frontend (host:port). Empty: the worker runs the embedded server.
	Address   string `mapstructure:"address"`
	Namespace string `mapstructure:"namespace"`
	TaskQueue string `mapstructure:"task_queue"`
	// WorkflowCache is how many workflows a worker keeps in memory between their tasks (the
	// sessions and the intents active lately); the others are replayed from their (short)
	// histories when they wake. It bounds the worker's memory with thousands of pending intents.
	WorkflowCache int `mapstructure:"workflow_cache"`
	// APIKey authenticates to Temporal Cloud (or any cluster that takes API keys).
	APIKey     Secret   `mapstructure:"api_key"`
	APIKeyFile string   `mapstructure:"api_key_file"`
	TLS        TLS      `mapstructure:"tls"`
	Embedded   Embedded `mapstructure:"embedded"`
	// Encryption encrypts every payload before it reaches the cluster (issue 13).
	Encryption Encryption `mapstructure:"encryption"`
}

// Encryption keeps message text off the cluster: every payload intentq writes to Temporal is
// encrypted (AES-256-GCM) with the newest key of a keyring; the key's id travels with it.
type Encryption struct {
	// Mode is auto (on when temporal.address names an external cluster), on or off.
	Mode string `mapstructure:"mode"`
	// KeyFile is the keyring: lines `<id>:<base64 key>`, newest last (starter keygen appends
	// one); it must be private (0600). Empty: data_dir/encryption.keys.
	KeyFile string `mapstructure:"key_file"`
	// Key is one keyring line instead of the file (e.g. INTENTQ_TEMPORAL_ENCRYPTION_KEY).
	Key Secret `mapstructure:"key"`
	// CodecOrigins may call the worker's codec endpoint (/codec/encode, /codec/decode on the
	// ingest listener) from a browser: the Web UI's address. They still need the access token.
	CodecOrigins []string `mapstructure:"codec_origins"`
	// AcceptPlain lets workers, starter and the codec decode payloads that are not encrypted
	// (recorded before encryption was turned on). Off: such payloads are refused, since anyone
	// who can write to the namespace could have written them.
	AcceptPlain bool `mapstructure:"accept_plain"`
}

// Encryption modes.
const (
	EncryptionAuto = "auto"
	EncryptionOn   = "on"
	EncryptionOff  = "off"
)

// EncryptionOn reports whether payloads are encrypted: mode on, or auto with an external cluster.
func (c *Config) EncryptionOn() bool {
	switch c.Temporal.Encryption.Mode {
	case EncryptionOn:
		return true
	case EncryptionOff:
		return false
	}
	return !c.EmbeddedServer()
}

// EncryptionKeyFile is the keyring's path: temporal.encryption.key_file, else data_dir/encryption.keys.
func (c *Config) EncryptionKeyFile() string {
	if c.Temporal.Encryption.KeyFile != "" {
		return c.Temporal.Encryption.KeyFile
	}
	return filepath.Join(c.DataDir, "encryption.keys")
}

// TLS configures the client connection to an external Temporal frontend.
type TLS struct {
	Enabled bool `mapstructure:"enabled"`
	// CertFile and KeyFile are the client certificate for mTLS (both or neither).
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// CAFile verifies the server; empty uses the system roots.
	CAFile     string `mapstructure:"ca_file"`
	ServerName string `mapstructure:"server_name"`
}

// Embedded configures the in-process Temporal server and Web UI.
type Embedded struct {
	// IP is where the gRPC frontend listens; anything but loopback needs AllowRemote.
	IP string `mapstructure:"ip"`
	// AllowRemote accepts a non-loopback IP: the frontend (which requires the access token, sent
	// in clear text) is then reachable from other machines. The Web UI stays on loopback.
	AllowRemote bool `mapstructure:"allow_remote"`
	Port        int  `mapstructure:"port"`
	UIPort      int  `mapstructure:"ui_port"`
	// Retention is how long closed workflows are kept.
	Retention time.Duration `mapstructure:"retention"`
	// LogLevel is the embedded server's own log level (quiet by default).
	LogLevel string `mapstructure:"log_level"`
}

// Ingest configures the HTTP ingest endpoint used by the patched plugin.
type Ingest struct {
	Listen string `mapstructure:"listen"`
	// AllowRemote accepts a non-loopback ingest.listen (e.g. 0.0.0.0 inside a container whose
	// port is published on the host's loopback); its Host check is then off, the tokens remain.
	AllowRemote bool   `mapstructure:"allow_remote"`
	Token       Secret `mapstructure:"token"`
	TokenFile   string `mapstructure:"token_file"`
	// MaxTextBytes caps the text accepted from the ingest and CLI doors.
	MaxTextBytes int `mapstructure:"max_text_bytes"`
}

// Telegram configures the Bot API poller.
type Telegram struct {
	Token     Secret `mapstructure:"token"`
	TokenFile string `mapstructure:"token_file"`
	// APIEndpoint is telegram-bot-api's endpoint format, e.g. http://127.0.0.1:8081/bot%s/%s.
	APIEndpoint    string  `mapstructure:"api_endpoint"`
	AllowedChatIDs []int64 `mapstructure:"allowed_chat_ids"`
	AllowedUserIDs []int64 `mapstructure:"allowed_user_ids"`
	// AckReaction is put on a message once it is recorded, so the sender sees it arrived
	// (empty: none); DoneReaction once its intent closes (empty: none).
	AckReaction  string `mapstructure:"ack_reaction"`
	DoneReaction string `mapstructure:"done_reaction"`
	// CancelReaction replaces the reaction on a message the person took back (ignored or
	// cancelled) before it reached the agent (empty: none).
	CancelReaction string `mapstructure:"cancel_reaction"`
	// DeliveredReaction replaces AckReaction once the message is in the agent's context (its
	// hook took it, or its receipt confirmed it typed); FailedReaction when a delivery failed
	// (issue 36: the reaction shows where the message is). Empty: none.
	DeliveredReaction string `mapstructure:"delivered_reaction"`
	FailedReaction    string `mapstructure:"failed_reaction"`
}

// Ntfy configures push notifications to the person's phone.
type Ntfy struct {
	URL       string `mapstructure:"url"`
	Topic     string `mapstructure:"topic"`
	Token     Secret `mapstructure:"token"`
	TokenFile string `mapstructure:"token_file"`
}

// Reminders is the reminder policy of pending intents (SPEC I5, I6, I7); its type and defaults
// live in package policy.
type Reminders = policy.Reminders

// Session is one agent session that intents are delivered to.
type Session struct {
	TmuxTarget string `mapstructure:"tmux_target"`
	// CLI is a key of Config.CLIs (claude, codex, copilot, kimi or a custom one).
	CLI string `mapstructure:"cli"`
	// Mode is tmux (type into a live pane) or headless (run the CLI per prompt).
	Mode  string  `mapstructure:"mode"`
	Chats []int64 `mapstructure:"chats"`
	// Default receives allowed chats that no session lists.
	Default   bool   `mapstructure:"default"`
	NtfyTopic string `mapstructure:"ntfy_topic"`
	// Human marks the person's own (coordinator) pane: intentq never types into it.
	Human bool `mapstructure:"human"`
	// History is the session's history file (JSON Lines); empty: data_dir/history/<name>.jsonl.
	History string `mapstructure:"history"`
	// ReplyHint tells the agent, in every delivered message, how to answer; {chat} and {msg}
	// are the message's IDs. Empty: DefaultReplyHint; "none": no hint.
	ReplyHint string `mapstructure:"reply_hint"`
	// Escalation is the session's nudge ladder (SPEC N1).
	Escalation Escalation `mapstructure:"escalation"`
	// ProtectContext keeps the reset phase off unless escalation.reset says otherwise (the
	// default since issue 35; kept for configs that name it).
	ProtectContext bool `mapstructure:"protect_context"`
	// Labels: important or audit keep the session's records beyond the namespace's retention
	// (exported to data_dir/archive).
	Labels []string `mapstructure:"labels"`
	// Host is the machine whose worker serves the session (its pane, history and hooks);
	// empty: this worker's host.
	Host string `mapstructure:"host"`
	// Approvals sends the person a card in the session's Telegram chat when its agent asks for
	// a permission, answered from the phone (issue 36); unset: on when the session has a chat.
	Approvals *bool `mapstructure:"approvals"`
}

// Escalation is how hard reminders push by how long a message has gone unanswered (SPEC N1).
type Escalation struct {
	// InterruptAfter starts phase 2 (Escape twice and C-c, then the nudge); default 2m.
	InterruptAfter time.Duration `mapstructure:"interrupt_after"`
	// ResetAfter starts phase 3 (the CLI's reset command, then the nudge); default 4m.
	ResetAfter time.Duration `mapstructure:"reset_after"`
	// ResetCooldown allows one reset per this long; otherwise phase 2; default 5m.
	ResetCooldown time.Duration `mapstructure:"reset_cooldown"`
	// Interrupt and Reset switch phases 2 and 3 (Interrupt default on, Reset default off).
	Interrupt *bool `mapstructure:"interrupt"`
	Reset     *bool `mapstructure:"reset"`
	// StepEvery allows one interrupt or reset per this long for the whole session, whatever
	// intents are overdue (default reminders.repeat_every).
	StepEvery time.Duration `mapstructure:"step_every"`
}

// Metrics configures the Prometheus endpoint of the worker.
type Metrics struct {
	// Listen is host:port of /metrics (loopback by default); empty turns it off.
	Listen string `mapstructure:"listen"`
}

// Hooks configures the Claude Code hooks (`starter hook ...`, SPEC I3, S1, S2, S4).
type Hooks struct {
	// Timeout bounds every hook (at most 10s); on timeout the hook allows.
	Timeout time.Duration `mapstructure:"timeout"`
	// ReplyTools are tool names whose use closes an intent (the Telegram plugin's reply tool).
	ReplyTools []string `mapstructure:"reply_tools"`
	// RemindTools are tool names after which old pending intents are recalled.
	RemindTools []string      `mapstructure:"remind_tools"`
	RemindAfter time.Duration `mapstructure:"remind_after"`
	RemindEvery time.Duration `mapstructure:"remind_every"`
	// ExemptRoles are agents the stop hook always lets stop.
	ExemptRoles []string `mapstructure:"exempt_roles"`
	// Coordinator is the agent whose inbox gets report_completed and error_report messages.
	Coordinator string `mapstructure:"coordinator"`
	// CompletionPatterns and ErrorPatterns extend the built-in patterns (regular expressions).
	CompletionPatterns []string `mapstructure:"completion_patterns"`
	ErrorPatterns      []string `mapstructure:"error_patterns"`
	// ApprovalWait is how long the permission hook of Claude Code waits for the phone's answer
	// (its terminal dialog can answer meanwhile); CodexApprovalWait that of Codex, whose prompt
	// waits for the hook (the terminal cannot answer meanwhile), so it is short.
	ApprovalWait      time.Duration `mapstructure:"approval_wait"`
	CodexApprovalWait time.Duration `mapstructure:"codex_approval_wait"`
}

// Delivery is how sessions watch a busy pane before typing (SPEC N2); its type and defaults
// live in package policy.
type Delivery = policy.Busy

// CLI describes how to drive one agent CLI kind (SPEC N4); the adapter table is package agentcli.
type CLI = agentcli.CLI

// Scheduler configures headless agent runs.
type Scheduler struct {
	// MaxConcurrentSessions limits runs at once across all workers (SPEC P2).
	MaxConcurrentSessions int `mapstructure:"max_concurrent_sessions"`
	// RunTimeout bounds one run of the CLI.
	RunTimeout time.Duration `mapstructure:"run_timeout"`
	// Sandbox is what confines a run: "bwrap" (the default: bubblewrap, and a run that cannot
	// be confined does not start) or "off" (unconfined, by the person's choice).
	Sandbox string `mapstructure:"sandbox"`
}

// Claude says where the secretary's Claude Code lives.
type Claude struct {
	Home     string `mapstructure:"home"`
	Settings string `mapstructure:"settings"`
	// PatchPlugin: the worker patches the Telegram plugin at start and the watchdog re-applies
	// the patch when it vanishes (a plugin upgrade).
	PatchPlugin bool `mapstructure:"patch_plugin"`
	// Bun is the bun executable for the patch's syntax check; empty: PATH.
	Bun string `mapstructure:"bun"`
}

// Embedded reports whether the worker should run the in-process Temporal server.
func (c *Config) EmbeddedServer() bool { return c.Temporal.Address == "" }

// TemporalAddress is the frontend address clients dial: the external one, or the embedded one.
func (c *Config) TemporalAddress() string {
	if c.Temporal.Address != "" {
		return c.Temporal.Address
	}
	return joinHostPort(c.Temporal.Embedded.IP, c.Temporal.Embedded.Port)
}

// UIAddress is the embedded Web UI's base URL, empty when an external cluster is used. The UI
// listens on loopback whatever temporal.embedded.ip says (it answers only to loopback names).
func (c *Config) UIAddress() string {
	if !c.EmbeddedServer() {
		return ""
	}
	ip := c.Temporal.Embedded.IP
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() {
		ip = "127.0.0.1"
	}
	return "http://" + joinHostPort(ip, c.Temporal.Embedded.UIPort)
}
