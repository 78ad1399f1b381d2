package activities

// Registered names of the activities workflows call by name.
const (
	// TmuxInjectName is Tmux.Inject.
	TmuxInjectName = "TmuxInject"
	// NtfyPublishName is Ntfy.Publish.
	NtfyPublishName = "NtfyPublish"
)

// TmuxCaptureName is Tmux.Capture.
const TmuxCaptureName = "TmuxCapture"

// TmuxSendKeysName is Tmux.SendKeys.
const TmuxSendKeysName = "TmuxSendKeys"
