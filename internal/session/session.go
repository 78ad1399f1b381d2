// Package session is the client side of the workflows `session/<name>`: the workflow's config
// derived from intentq's config, starting every configured session, and queueing a delivery.
// The workflows themselves are workflows.SessionWorkflow (typing into a pane) and
// workflows.HeadlessSessionWorkflow (running the CLI per prompt).
package session

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/agentcli"
	"github.com/intentq/intentq/internal/policy"
	"github.com/intentq/intentq/workflows"
)

// Queue asks the session to deliver req (the deliver signal). Doors queue a new intent's first
// delivery this way, in arrival order; the hooks commit context blocks to the history.
func Queue(ctx context.Context, c client.Client, session string, req workflows.DeliveryRequest) error {
	if err := c.SignalWorkflow(ctx, workflows.SessionWorkflowID(session), "", workflows.SignalDeliver, req); err != nil {
		return fmt.Errorf("queue %s on session %s: %w", req.ID, session, err)
	}
	return nil
}

// QueueAll asks the session to deliver reqs, in order, with one signal (a door's batch).
func QueueAll(ctx context.Context, c client.Client, session string, reqs []workflows.DeliveryRequest) error {
	if len(reqs) == 0 {
		return nil
	}
	if err := c.SignalWorkflow(ctx, workflows.SessionWorkflowID(session), "", workflows.SignalDeliverAll, reqs); err != nil {
		return fmt.Errorf("queue %d deliveries on session %s: %w", len(reqs), session, err)
	}
	return nil
}

// View asks a typing session for its state: the agent's state from its hooks, what waits,
// what hooks took and have not committed, and its counts.
func View(ctx context.Context, c client.Client, session string) (workflows.SessionView, error) {
	var v workflows.SessionView
	res, err := c.QueryWorkflow(ctx, workflows.SessionWorkflowID(session), "", workflows.QuerySession)
	if err != nil {
		return v, fmt.Errorf("query session %s: %w", session, err)
	}
	if err := res.Get(&v); err != nil {
		return v, fmt.Errorf("query session %s: %w", session, err)
	}
	return v, nil
}

// HasMessage asks session whether its agent has the intent's message (typed, handed over by a
// hook, or being typed): the intent hears of its delivery only when the session tells it, which
// under a burst is after the session's backlog is typed.
func HasMessage(ctx context.Context, c client.Client, session, intentID string) (bool, error) {
	res, err := c.QueryWorkflow(ctx, workflows.SessionWorkflowID(session), "", workflows.QueryHasMessage, intentID)
	if err != nil {
		return false, fmt.Errorf("ask session %s about %s: %w", session, intentID, err)
	}
	var has bool
	if err := res.Get(&has); err != nil {
		return false, fmt.Errorf("ask session %s about %s: %w", session, intentID, err)
	}
	return has, nil
}

// TmuxConfig is what the typing session `name` needs from cfg: its pane, the CLI's adapter
// (busy patterns, reset, input line), busy handling, escalation, history file and ntfy topic.
func TmuxConfig(cfg *config.Config, name string) workflows.SessionConfig {
	sc := cfg.Sessions[name]
	cli := cfg.CLIs[sc.CLI]
	interruptAfter, resetAfter, cooldown, interrupt, reset := cfg.EscalationFor(name)
	steps := workflows.ResetSteps{Command: cli.Reset}
	if cli.Relaunch {
		steps.Relaunch = cli.LaunchLine()
	}
	return workflows.SessionConfig{
		Name: name, TmuxTarget: sc.TmuxTarget, CLI: sc.CLI, Mode: sc.Mode, Human: sc.Human,
		BusyPatterns: cli.BusyPatterns,
		Busy:         cfg.Delivery,
		NewlineKey:   cli.NewlineKey,
		Push:         cfg.NtfyTopicFor(name) != "",
		HistoryPath:  cfg.HistoryPath(name),
		Escalation: workflows.EscalationPolicy{
			InterruptAfter: interruptAfter, ResetAfter: resetAfter, ResetCooldown: cooldown,
			Interrupt: interrupt, Reset: reset,
			StepEvery: policy.Or(sc.Escalation.StepEvery, cfg.Reminders.RepeatEvery),
		},
		Reset:          steps,
		InputLines:     cli.Lines(),
		DialogPatterns: cli.DialogPatterns,
		InputPrompt:    cli.InputPrompt,
		InterruptKeys:  strings.Fields(cli.InterruptKeys),
		StopKeys:       strings.Fields(cli.StopKeys),
		ClearKeys:      strings.Fields(cli.ClearKeys),
		// Codex shows a placeholder on its empty input line.
		InputPlaceholders: cli.InputPlaceholders,
		// Codex fires its SessionStart after /new only with the next prompt.
		SessionStartAtPrompt: cli.SessionStartAtPrompt,
		Host:                 cfg.HostOf(name),
	}
}

// Endpoints is the worker's directory of its typing sessions: for each, the pane, the programs
// that are its CLI, the keys intentq may press there, the relaunch line, the history file and the
// ntfy topic, all from cfg. The activities act only on what it names (a workflow's input is not
// trusted for any of it).
func Endpoints(cfg *config.Config) *activities.Directory {
	eps := map[string]activities.Endpoint{}
	for _, name := range cfg.SessionNames() {
		sc := cfg.Sessions[name]
		if sc.Mode == config.ModeHeadless {
			continue
		}
		conf := TmuxConfig(cfg, name)
		cli := cfg.CLIs[sc.CLI]
		keys := append([]string{}, workflows.InterruptKeys...)
		keys = append(keys, conf.InterruptKeys...)
		keys = append(keys, conf.StopKeys...)
		keys = append(keys, conf.ClearKeys...)
		keys = append(keys, "C-u") // the default clear key
		if !conf.Reset.Typed() {
			keys = append(keys, conf.Reset.Keys()...)
		}
		ep := activities.Endpoint{
			Target: sc.TmuxTarget, ProcessNames: cli.Processes(), Keys: keys,
			HistoryPath: conf.HistoryPath, NtfyTopic: cfg.NtfyTopicFor(name),
		}
		if conf.Reset.Relaunch != "" {
			ep.LaunchLine, ep.Shells = conf.Reset.Relaunch, agentcli.Shells
		}
		eps[name] = ep
	}
	return activities.NewDirectory(eps, cfg.Ntfy.Topic)
}

// HeadlessConfig is what the headless session `name` needs from cfg: the CLI and its arguments.
func HeadlessConfig(cfg *config.Config, name string) workflows.HeadlessConfig {
	cli := cfg.CLIs[cfg.Sessions[name].CLI]
	return workflows.HeadlessConfig{Name: name, Command: cli.Command, Timeout: cfg.Scheduler.RunTimeout,
		BaseArgs: cli.HeadlessBaseArgs()}
}

// Ensure starts the workflow `session/<name>` of every configured session (a typing session on
// this worker's host, or a headless one), and the global run semaphore, or hands running ones
// the current config. A typing session of another host is its host's worker's to start; typing
// false: this worker serves no typing session (another serves this host).
func Ensure(ctx context.Context, c client.Client, cfg *config.Config, typing bool) error {
	opts := client.StartWorkflowOptions{TaskQueue: cfg.Temporal.TaskQueue}
	if _, err := c.SignalWithStartWorkflow(ctx, workflows.SemaphoreID, workflows.SignalPermits, cfg.Scheduler.MaxConcurrentSessions,
		opts, workflows.SemaphoreWorkflowName, workflows.SemaphoreState{Permits: cfg.Scheduler.MaxConcurrentSessions}); err != nil {
		return fmt.Errorf("start %s: %w", workflows.SemaphoreID, err)
	}
	for _, name := range cfg.SessionNames() {
		id := workflows.SessionWorkflowID(name)
		if cfg.Sessions[name].Mode == config.ModeHeadless {
			hc := HeadlessConfig(cfg, name)
			if _, err := c.SignalWithStartWorkflow(ctx, id, workflows.SignalConfigure, hc,
				opts, workflows.HeadlessWorkflowName, workflows.HeadlessState{Config: hc}); err != nil {
				return fmt.Errorf("start headless session %s: %w", id, err)
			}
			continue
		}
		if !typing || !cfg.Local(name) {
			continue
		}
		conf := TmuxConfig(cfg, name)
		// Typing sessions run on their host's task queue (a session that runs already moves
		// there when it continues as new: the configure signal makes an older run do so).
		sopts := opts
		sopts.TaskQueue = workflows.SessionHostQueue(cfg.Temporal.TaskQueue, cfg.Host)
		if _, err := c.SignalWithStartWorkflow(ctx, id, workflows.SignalConfigure, conf,
			sopts, workflows.SessionWorkflowName, workflows.SessionInput{Version: workflows.SessionVersion, Config: conf}); err != nil {
			return fmt.Errorf("start session workflow %s: %w", id, err)
		}
	}
	return nil
}
