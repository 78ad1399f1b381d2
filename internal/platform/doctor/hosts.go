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

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/workflows"
)

// HostPollers are the machines whose workers polled a host's session task queue within
// PollerFreshness (a worker's identity is intentq@<machine>/<pid>), and the identities.
func HostPollers(ctx context.Context, c client.Client, queue string) (machines, identities []string, err error) {
	if identities, err = freshPollers(ctx, c, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW); err != nil {
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

// Hosts says, for every host that serves a typing session of cfg, whether its worker polls the
// host's session task queue (issue 38): none, and its sessions' messages wait until it is back;
// workers on more than one machine, and two machines use one host name (their sessions would be
// split between two hook desks).
func Hosts(ctx context.Context, c client.Client, cfg *config.Config) Report {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sessions := map[string][]string{}
	for _, name := range cfg.SessionNames() {
		if cfg.Sessions[name].Mode == config.ModeTmux {
			sessions[cfg.HostOf(name)] = append(sessions[cfg.HostOf(name)], name)
		}
	}
	var r Report
	for _, host := range slices.Sorted(maps.Keys(sessions)) {
		queue := workflows.SessionHostQueue(cfg.Temporal.TaskQueue, host)
		check := "host " + host
		machines, identities, err := HostPollers(ctx, c, queue)
		switch {
		case err != nil:
			r = append(r, Result{Name: check, Detail: err.Error()})
		case len(machines) == 0:
			r = append(r, Result{Name: check, Detail: fmt.Sprintf("no worker serves host %s: the messages of %s wait until one does", host, strings.Join(sessions[host], ", ")),
				Hint: fmt.Sprintf("start the worker on %s (its config says host: %s)", host, host)})
		case len(machines) > 1:
			r = append(r, Result{Name: check, Detail: fmt.Sprintf("workers on %d machines serve host %s (%s)", len(machines), host, strings.Join(identities, ", ")),
				Hint: "give each machine's worker its own host name (host:, and sessions.<name>.host)"})
		default:
			r = append(r, Result{Name: check, OK: true, Detail: fmt.Sprintf("%s served by %s", strings.Join(sessions[host], ", "), strings.Join(identities, ", "))})
		}
	}
	return r
}
