package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/workflows"
)

// ReplyWindow is how long the reply tool remembers an answer sent without reply_to: a call whose
// outcome the agent never learned (it ended in an error, or the server died) is retried against
// the same message within it, and a message answered within it is never taken for pending
// again, however late the list says it closed.
const ReplyWindow = time.Hour

// sentReply is one answer the reply tool sent, or set out to send, without reply_to. It is
// recorded (reserved) before anything is sent, with the message it answers (Intent; empty for a
// follow-up, sent under SendKey), and settled once the agent was told it went out.
type sentReply struct {
	Key        string    `json:"key"`
	Intent     string    `json:"intent,omitempty"`
	SendKey    string    `json:"send_key,omitempty"`
	MessageIDs []int     `json:"message_ids,omitempty"`
	Settled    bool      `json:"settled,omitempty"`
	At         time.Time `json:"at"`
}

// replyLedger keeps the answers sent without reply_to (issue 32): a call is reserved against its
// target before it is sent, so that the same call retried after an error goes to the same
// message (sent at most once) and never to the chat's next one; a settled call was seen by the
// agent, so the same text again is a new answer (two messages answered "OK" both get it). It
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

// ledger is the ledger of the session's answers.
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

// followUpKey names a follow-up's send: its parts are recorded under it, so a retry resumes
// after what went out.
func followUpKey(chat string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "follow-up/" + chat + "/" + hex.EncodeToString(b[:])
}

// load reads the entries within ReplyWindow.
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

// unsettled returns the call for key whose outcome the agent never learned.
func (l *replyLedger) unsettled(key string, now time.Time) (sentReply, bool) {
	for _, e := range l.load(now) {
		if e.Key == key && !e.Settled {
			return e, true
		}
	}
	return sentReply{}, false
}

// answered are the intents answered without reply_to within the window.
func (l *replyLedger) answered(now time.Time) map[string]bool {
	ids := map[string]bool{}
	for _, e := range l.load(now) {
		if e.Settled && e.Intent != "" {
			ids[e.Intent] = true
		}
	}
	return ids
}

// keep records e, replacing an unsettled entry of the same call.
func (l *replyLedger) keep(e sentReply) error {
	var entries []sentReply
	for _, old := range l.load(e.At) {
		if old.Key == e.Key && !old.Settled {
			continue
		}
		entries = append(entries, old)
	}
	entries = append(entries, e)
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
