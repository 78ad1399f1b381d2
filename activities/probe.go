// Package activities holds every side effect of intentq (tmux, ntfy, history files, plugin
// patching, Telegram, CLI runs). Activities never decide policy; workflows do.
package activities

import (
	"context"
	"os"
	"time"
)

// ProbeActivityName is the registered name of Prober.Probe.
const ProbeActivityName = "Probe"

// WorkerInfo identifies the worker process that answered a probe.
type WorkerInfo struct {
	Identity  string    `json:"identity"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
}

// Prober answers the doctor's end-to-end probe.
type Prober struct {
	Identity  string
	StartedAt time.Time
}

// Probe returns who this worker is. It has no side effects, so any number of runs is harmless.
func (p *Prober) Probe(context.Context) (WorkerInfo, error) {
	return WorkerInfo{Identity: p.Identity, PID: os.Getpid(), StartedAt: p.StartedAt}, nil
}
