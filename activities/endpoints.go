package activities

import (
	"fmt"
	"slices"
	"sort"

	"go.temporal.io/sdk/temporal"
)

// ErrTypeUnknownSession refuses a request for a session (or a pane, history file or topic) that
// the worker's own config does not name. Not retryable.
const ErrTypeUnknownSession = "UnknownSession"

// ErrTypeNotAgent refuses typing into a pane whose foreground program is not the session's CLI
// (it exited and a shell shows, or another program runs there): text typed there could run as a
// command. Not retryable: the session waits and looks again.
const ErrTypeNotAgent = "NotAgent"

// Endpoint is what the worker's own config says about one session: where its pane is, what may
// run in front there, which keys intentq may press, where its history goes and where its pushes
// go. Workflows name sessions; activities act only on what an Endpoint names (a workflow's input
// is written by whoever can reach the Temporal namespace, not only by this worker).
type Endpoint struct {
	// Target is the session's tmux target.
	Target string
	// ProcessNames are the foreground programs that are the session's CLI (empty: not checked).
	ProcessNames []string
	// Keys are the tmux keys intentq may press in the pane (interrupt, clear, key-style reset).
	Keys []string
	// LaunchLine is what a relaunch types into the shell the pane shows after a key-style reset;
	// Shells the programs it may type it into. Empty: the session has no relaunch.
	LaunchLine string
	Shells     []string
	// HistoryPath is the session's history file; NtfyTopic where its pushes go (empty: none).
	HistoryPath string
	NtfyTopic   string
}

// Directory resolves session names to their endpoints, from the worker's config. A nil
// *Directory resolves nothing: activities built without one act on what their requests say
// (tests and tools that type where they are told); the worker always has one.
type Directory struct {
	byName map[string]Endpoint
	// topics are every topic the config names (the sessions' and the global one).
	topics []string
}

// NewDirectory is the directory of the given sessions; extraTopics are other topics the config
// names (the global ntfy topic), which requests from before session names may carry.
func NewDirectory(sessions map[string]Endpoint, extraTopics ...string) *Directory {
	d := &Directory{byName: map[string]Endpoint{}}
	for name, ep := range sessions {
		d.byName[name] = ep
		if ep.NtfyTopic != "" {
			d.topics = append(d.topics, ep.NtfyTopic)
		}
	}
	for _, t := range extraTopics {
		if t != "" {
			d.topics = append(d.topics, t)
		}
	}
	return d
}

// Lookup returns the endpoint of the session name, or a non-retryable ErrTypeUnknownSession
// error.
func (d *Directory) Lookup(name string) (Endpoint, error) {
	if ep, ok := d.byName[name]; ok && name != "" {
		return ep, nil
	}
	return Endpoint{}, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("session %q is not in this worker's config: nothing is done for it", name), ErrTypeUnknownSession, nil)
}

// Names are the configured sessions, sorted.
func (d *Directory) Names() []string {
	names := make([]string, 0, len(d.byName))
	for n := range d.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// resolve finds the endpoint a request means: by its session name, or, for a request from
// before session names (a workflow that scheduled it with an older build), by the value it
// carries, which must be one the config names (matches). With a nil directory, open is used.
func (d *Directory) resolve(name string, open Endpoint, matches func(Endpoint) bool) (Endpoint, error) {
	if d == nil {
		return open, nil
	}
	if name != "" {
		return d.Lookup(name)
	}
	for _, n := range d.Names() {
		if ep := d.byName[n]; matches(ep) {
			return ep, nil
		}
	}
	return Endpoint{}, temporal.NewNonRetryableApplicationError(
		"the request names no session of this worker's config, and what it names is not configured: refused", ErrTypeUnknownSession, nil)
}

// topicKnown reports whether the config names topic.
func (d *Directory) topicKnown(topic string) bool { return slices.Contains(d.topics, topic) }
