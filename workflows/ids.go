package workflows

import (
	"fmt"
	"strings"

	"github.com/intentq/intentq/internal/hookapi"
)

// Workflow ID prefixes. IDs carry meaning, so the Web UI and `starter show` read naturally, and
// every caller derives the same ID from the same message: the ID is the dedupe key (SPEC I1).
const (
	IntentIDPrefix  = hookapi.IntentIDPrefix
	SessionIDPrefix = "session/"
)

// maxIDPartLen bounds chat and message IDs (Telegram's are 64-bit integers; other doors get room).
const maxIDPartLen = 64

// IntentID is the workflow ID of the intent for one message: `intent/<chat_id>/<message_id>`.
func IntentID(chatID, messageID string) string { return hookapi.IntentID(chatID, messageID) }

// sessionQueueSuffix ends the name of the task queue the typing sessions run on.
const sessionQueueSuffix = "-sessions"

// SessionTaskQueue is the task queue the typing sessions ran on before they had hosts, beside
// the worker's task queue `queue` (issue 26); a session still there moves to its host's queue
// (SessionHostQueue) at its next continue-as-new.
func SessionTaskQueue(queue string) string {
	queue, _, _ = strings.Cut(queue, "@")
	if strings.HasSuffix(queue, sessionQueueSuffix) {
		return queue
	}
	return queue + sessionQueueSuffix
}

// TelegramTaskQueue is the task queue of the Telegram activities (answers, reactions) beside
// the worker's task queue `queue`: only a worker that has the bot token polls it, so a send
// never runs, and fails for good, on a worker without the token; it waits for one that has it
// (issue 38).
func TelegramTaskQueue(queue string) string {
	queue, _, _ = strings.Cut(queue, "@")
	return strings.TrimSuffix(queue, sessionQueueSuffix) + "-telegram"
}

// SessionHostQueue is the task queue of the typing sessions that live on host, beside the
// worker's task queue `queue` (e.g. intentq-sessions@laptop): only that host's worker polls it,
// so a session's workflow tasks and its activities (the pane, the history file, the hook desk)
// all run on its machine (issue 38).
func SessionHostQueue(queue, host string) string {
	return SessionTaskQueue(queue) + "@" + host
}

// SessionWorkflowID is the workflow ID of a session: `session/<name>`.
func SessionWorkflowID(name string) string { return SessionIDPrefix + name }

// ParseIntentID splits an intent workflow ID into chat and message IDs. It also accepts the
// short form `<chat_id>/<message_id>`.
func ParseIntentID(id string) (chatID, messageID string, err error) {
	rest := strings.TrimPrefix(id, IntentIDPrefix)
	chatID, messageID, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", fmt.Errorf("%q is not an intent ID (intent/<chat_id>/<message_id>)", id)
	}
	if err := CheckIDPart("chat_id", chatID); err != nil {
		return "", "", err
	}
	if err := CheckIDPart("message_id", messageID); err != nil {
		return "", "", err
	}
	return chatID, messageID, nil
}

// CheckIDPart validates a chat or message ID: 1-64 printable ASCII characters, no '/', backslash, '"' or
// spaces. IDs become workflow IDs and visibility values, so they stay plain ASCII (and the
// embedded server's visibility cannot find a value that holds a backslash or a double quote).
func CheckIDPart(field, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", field)
	}
	if len(v) > maxIDPartLen {
		return fmt.Errorf("%s is longer than %d bytes", field, maxIDPartLen)
	}
	for _, r := range v {
		if r == '/' || r == '\\' || r == '"' || r <= ' ' || r > '~' {
			return fmt.Errorf("%s %+q contains %+q; use ASCII letters, digits, - _ . :", field, v, r)
		}
	}
	return nil
}
