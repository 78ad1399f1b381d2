package doctor

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/workflows"
)

// HostPollers are the machines whose workers polled a host's session task queue within
// activities.PollerFreshness (a worker's identity is intentq@<machine>/<pid>), and the
// identities.
func HostPollers(ctx context.Context, c client.Client, queue string) (machines, identities []string, err error) {
	if identities, err = activities.FreshPollers(ctx, c, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW); err != nil {
		return nil, nil, err
	}
	for _, id := range identities {
		if m := Machine(id); !slices.Contains(machines, m) {
			machines = append(machines, m)
		}
	}
	return machines, identities, nil
}

// WorkerIdentity is this process's identity as a worker: intentq@<machine>/<pid>.
func WorkerIdentity() string { return fmt.Sprintf("intentq@%s/%d", ThisMachine(), os.Getpid()) }

// ThisMachine is this machine's name as worker identities carry it.
func ThisMachine() string {
	host, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return host
}

// Machine is the machine part of a worker identity (WorkerIdentity; the identity itself when it
// is not one of intentq's).
func Machine(identity string) string {
	rest, ok := strings.CutPrefix(identity, "intentq@")
	if !ok {
		return identity
	}
	m, _, _ := strings.Cut(rest, "/")
	return m
}

// HostState is what the doctor found for one host that serves typing sessions: its sessions,
// the machines (and worker identities) that polled its session task queue within
// activities.PollerFreshness, or why it could not tell.
type HostState struct {
	Host       string
	Sessions   []string
	Machines   []string
	Identities []string
	Err        error
}

// Served: exactly one machine's worker polls the host's queue.
func (h HostState) Served() bool { return h.Err == nil && len(h.Machines) == 1 }

// Down: no worker polls the host's queue; its sessions' messages wait.
func (h HostState) Down() bool { return h.Err == nil && len(h.Machines) == 0 }

// HostStates reads, for every host that serves a typing session of cfg, which workers poll its
// session task queue, sorted by host.
func HostStates(ctx context.Context, c client.Client, cfg *config.Config) []HostState {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sessions := SessionHosts(cfg)
	var states []HostState
	for _, host := range slices.Sorted(maps.Keys(sessions)) {
		h := HostState{Host: host, Sessions: sessions[host]}
		h.Machines, h.Identities, h.Err = HostPollers(ctx, c, workflows.SessionHostQueue(cfg.Temporal.TaskQueue, host))
		states = append(states, h)
	}
	return states
}

// SessionHosts are the hosts that serve cfg's typing sessions, each with its sessions.
func SessionHosts(cfg *config.Config) map[string][]string {
	sessions := map[string][]string{}
	for _, name := range cfg.SessionNames() {
		if cfg.Sessions[name].Mode == config.ModeTmux {
			sessions[cfg.HostOf(name)] = append(sessions[cfg.HostOf(name)], name)
		}
	}
	return sessions
}

// Hosts says, for every host that serves a typing session of cfg, whether its worker polls the
// host's session task queue (issue 38): none, and its sessions' messages wait until it is back;
// workers on more than one machine, and two machines use one host name (their sessions would be
// split between two hook desks).
func Hosts(ctx context.Context, c client.Client, cfg *config.Config) Report {
	var r Report
	for _, h := range HostStates(ctx, c, cfg) {
		check := "host " + h.Host
		switch {
		case h.Err != nil:
			r = append(r, Result{Name: check, Detail: h.Err.Error()})
		case h.Down():
			r = append(r, Result{Name: check, Detail: HostDown(h), Hint: HostDownHint(h.Host)})
		case !h.Served():
			r = append(r, Result{Name: check, Detail: fmt.Sprintf("workers on %d machines serve host %s (%s)", len(h.Machines), h.Host, strings.Join(h.Identities, ", ")),
				Hint: "give each machine's worker its own host name (host:, and sessions.<name>.host)"})
		default:
			r = append(r, Result{Name: check, OK: true, Detail: fmt.Sprintf("%s served by %s", strings.Join(h.Sessions, ", "), strings.Join(h.Identities, ", "))})
		}
	}
	return r
}

// HostDown says that no worker serves a host and what waits for it.
func HostDown(h HostState) string {
	return fmt.Sprintf("no worker serves host %s: the messages of %s wait until one does", h.Host, strings.Join(h.Sessions, ", "))
}

// HostDownHint says what to do about a host no worker serves.
func HostDownHint(host string) string {
	return fmt.Sprintf("start the worker on %s (its config says host: %s)", host, host)
}

// SpeaksForHosts says whether the worker that serves host (serving: it does) is the one that
// tells the person about hosts whose worker is gone, so that they hear it once, not from every
// worker that notices: the worker of the first host, by name, that is served; when no session's
// host is, every worker that serves its own.
func SpeaksForHosts(states []HostState, host string, serving bool) bool {
	if !serving {
		return false
	}
	for _, h := range states {
		if h.Served() {
			return h.Host == host
		}
	}
	return true
}
