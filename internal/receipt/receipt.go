// Package receipt reads the header intentq types at the start of a message or a reminder, and
// keeps, per typed block, where it was typed: the session and the pane. The agent's
// UserPromptSubmit hook sees the block as its prompt; the header names the message (its
// receipt), and the record binds an agent the person started by hand to the session whose pane
// it runs in (issue 37). A leaf package: the typing activity and the hooks both read it.
package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/intentq/intentq/internal/base/private"
)

// Headers intentq types before a message or a reminder.
const (
	DeliveryHeader = "【新着メッセージ】msg_id="
	ReminderHeader = "【未対応メッセージ】msg_id="
)

// pastedContent opens the wrapper Claude Code puts around a bracketed paste in the prompt its
// UserPromptSubmit hook gets.
const pastedContent = "<pasted_content"

// Parse reads a prompt the agent received: when it begins with the header of a message or
// reminder intentq typed, it names that message (its chat and message IDs). Only the header at
// the very start counts: a message cannot claim another's receipt by quoting a header. A typed
// block of several lines reaches Claude Code's UserPromptSubmit hook as a bracketed paste:
// "\n\n<pasted_content id=\"…\">\n" before the text (2.1.330); the header after it counts.
func Parse(prompt string) (chat, msg string, ok bool) {
	if rest, ok := strings.CutPrefix(strings.TrimLeft(prompt, "\n"), pastedContent); ok {
		if attrs, after, ok := strings.Cut(rest, ">"); ok && !strings.Contains(attrs, "\n") && strings.HasPrefix(after, "\n") {
			prompt = after[1:]
		}
	}
	rest, ok := strings.CutPrefix(prompt, DeliveryHeader)
	if !ok {
		if rest, ok = strings.CutPrefix(prompt, ReminderHeader); !ok {
			return "", "", false
		}
	}
	msg, rest, ok = strings.Cut(rest, " chat=")
	if !ok || msg == "" || strings.ContainsAny(msg, " \n") {
		return "", "", false
	}
	end := strings.IndexAny(rest, " :\n")
	if end <= 0 {
		return "", "", false
	}
	return rest[:end], msg, true
}

// Typed is where a block was typed: by the worker of this data_dir, into the session's pane
// (its tmux pane id and server socket), at At.
type Typed struct {
	Session string    `json:"session"`
	Pane    string    `json:"pane"`
	Socket  string    `json:"socket,omitempty"`
	At      time.Time `json:"at"`
}

// Dir is where the typed blocks of data_dir are recorded.
func Dir(dataDir string) string { return filepath.Join(dataDir, "typed-blocks") }

// file is the record of the block headed by chat/msg's header.
func file(dir, chat, msg string) string {
	sum := sha256.Sum256([]byte(chat + "/" + msg))
	return filepath.Join(dir, hex.EncodeToString(sum[:16]))
}

// Record keeps where the block text was typed, when text begins with a header (else it does
// nothing): written before the block's Enter, so a hook that fires on it finds it.
func Record(dir, text string, t Typed) error {
	chat, msg, ok := Parse(text)
	if !ok || dir == "" {
		return nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	// Not fsynced: a power loss ends the pane and its agent too.
	if err := private.WriteFileAtomic(file(dir, chat, msg), b); err != nil {
		return fmt.Errorf("record the typed block of %s/%s: %w", chat, msg, err)
	}
	return nil
}

// ErrNotTyped says no typed block of this data_dir's worker begins with the prompt's header.
var ErrNotTyped = errors.New("no block typed by this worker begins with this prompt")

// Lookup is the record of the block the prompt begins with.
func Lookup(dir, prompt string) (Typed, error) {
	chat, msg, ok := Parse(prompt)
	if !ok {
		return Typed{}, ErrNotTyped
	}
	b, err := os.ReadFile(file(dir, chat, msg))
	if errors.Is(err, fs.ErrNotExist) {
		return Typed{}, ErrNotTyped
	}
	if err != nil {
		return Typed{}, fmt.Errorf("read the typed block of %s/%s: %w", chat, msg, err)
	}
	var t Typed
	if err := json.Unmarshal(b, &t); err != nil {
		return Typed{}, fmt.Errorf("read the typed block of %s/%s: %w", chat, msg, err)
	}
	return t, nil
}

// Claim marks the block the prompt begins with as the one that bound agent: true when it is
// now (or already was) agent's, false when it bound another agent before.
func Claim(dir, prompt, agent string) (bool, error) {
	chat, msg, ok := Parse(prompt)
	if !ok {
		return false, ErrNotTyped
	}
	claim := file(dir, chat, msg) + ".bound"
	f, err := os.OpenFile(claim, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		b, err := os.ReadFile(claim)
		if err != nil {
			return false, fmt.Errorf("read the claim on %s/%s: %w", chat, msg, err)
		}
		return strings.TrimSpace(string(b)) == agent, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim the typed block of %s/%s: %w", chat, msg, err)
	}
	_, err = f.WriteString(agent + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("claim the typed block of %s/%s: %w", chat, msg, err)
	}
	return true, nil
}
