package mcp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/workflows"
)

// ReplyWindow is how long an answer sent without reply_to is remembered: the same call again
// (the agent repeats a tool call whose result it lost) within it sends nothing and closes
// nothing, it answers with what the first call did.
const ReplyWindow = time.Hour

// sentReply is one answer the reply tool sent without naming the message it answers.
type sentReply struct {
	Key        string    `json:"key"`
	Intent     string    `json:"intent,omitempty"`
	MessageIDs []int     `json:"message_ids"`
	At         time.Time `json:"at"`
}

// replyLedger keeps the answers sent without reply_to, keyed by the agent's call (the chat and
// the text): a repeat is never re-resolved to the chat's next pending intent (issue 24). It
// lives in data_dir (private), one file per session, so a restarted MCP server still knows.
type replyLedger struct {
	mu   sync.Mutex
	path string // empty: in memory only
	mem  []sentReply
}

// ledgers are the process's ledgers by file.
var (
	ledgersMu sync.Mutex
	ledgers   = map[string]*replyLedger{}
)

// ledgerFor is the ledger of the session's answers.
func (s Settings) ledger() *replyLedger {
	path := ""
	if s.Config != nil && s.Config.DataDir != "" {
		path = filepath.Join(s.Config.DataDir, "replies", s.Session+".json")
	}
	ledgersMu.Lock()
	defer ledgersMu.Unlock()
	l, ok := ledgers[path+"\x00"+s.Session]
	if !ok {
		l = &replyLedger{path: path}
		ledgers[path+"\x00"+s.Session] = l
	}
	return l
}

// callKey is the key of a reply call without reply_to.
func callKey(chat, text string) string { return workflows.ReplyKey(chat + "\x00" + text) }

// load reads the file (entries within ReplyWindow).
func (l *replyLedger) load(now time.Time) []sentReply {
	entries := l.mem
	if l.path != "" {
		if b, err := os.ReadFile(l.path); err == nil {
			var fromFile []sentReply
			if json.Unmarshal(b, &fromFile) == nil {
				entries = fromFile
			}
		}
	}
	var live []sentReply
	for _, e := range entries {
		if now.Sub(e.At) < ReplyWindow {
			live = append(live, e)
		}
	}
	return live
}

// find returns the answer sent for key within ReplyWindow.
func (l *replyLedger) find(key string, now time.Time) (sentReply, bool) {
	for _, e := range l.load(now) {
		if e.Key == key {
			return e, true
		}
	}
	return sentReply{}, false
}

// record keeps e.
func (l *replyLedger) record(e sentReply) error {
	entries := append(l.load(e.At), e)
	l.mem = entries
	if l.path == "" {
		return nil
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return fmt.Errorf("reply ledger: %w", err)
	}
	if err := private.WriteFile(l.path, b); err != nil {
		return fmt.Errorf("reply ledger: %w", err)
	}
	return nil
}
