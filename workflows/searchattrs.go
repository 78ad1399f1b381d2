package workflows

import (
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// Search attributes that intentq workflows publish, so that `starter pending` and the Web UI can
// filter on them (e.g. `IntentStatus = 'pending' AND IntentSession = 'secretary'`).
var (
	// IntentStatusKey is an intent's status: pending, linked, closed or ignored.
	IntentStatusKey = temporal.NewSearchAttributeKeyKeyword("IntentStatus")
	// IntentChatKey is the Telegram chat (or other door's chat) an intent came from.
	IntentChatKey = temporal.NewSearchAttributeKeyKeyword("IntentChat")
	// IntentSessionKey is the session an intent is delivered to.
	IntentSessionKey = temporal.NewSearchAttributeKeyKeyword("IntentSession")
	// IntentReceivedAtKey is when the message was received.
	IntentReceivedAtKey = temporal.NewSearchAttributeKeyTime("IntentReceivedAt")
	// AgentStateKey is a session's agent state as its hooks report it: working, idle, waiting.
	AgentStateKey = temporal.NewSearchAttributeKeyKeyword("AgentState")
)

// SearchAttributes lists the custom search attributes with their types, for registering them on
// a namespace (the embedded server does it at creation, the worker checks an external cluster).
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		IntentStatusKey.GetName():     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		IntentChatKey.GetName():       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		IntentSessionKey.GetName():    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		IntentReceivedAtKey.GetName(): enumspb.INDEXED_VALUE_TYPE_DATETIME,
		AgentStateKey.GetName():       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}
