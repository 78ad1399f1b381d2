// Package service assembles the long-running intentq process: the embedded Temporal server and
// Web UI (unless an external cluster is configured), the Temporal worker, and the ingest HTTP
// endpoint. The worker binary is a thin shell around Start and Stop.
package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/encryption"
	"github.com/intentq/intentq/internal/base/instance"
	"github.com/intentq/intentq/internal/base/logging"
	"github.com/intentq/intentq/internal/base/metrics"
	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/base/tclient"
	"github.com/intentq/intentq/internal/base/trust"
	"github.com/intentq/intentq/internal/doors/hookdesk"
	"github.com/intentq/intentq/internal/doors/hookdesk/desksocket"
	"github.com/intentq/intentq/internal/doors/hooks/hooktemporal"
	"github.com/intentq/intentq/internal/doors/ingest"
	"github.com/intentq/intentq/internal/doors/spool"
	"github.com/intentq/intentq/internal/doors/telegram"
	"github.com/intentq/intentq/internal/headless"
	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/internal/platform/archive"
	"github.com/intentq/intentq/internal/platform/doctor"
	"github.com/intentq/intentq/internal/platform/embedded"
	"github.com/intentq/intentq/internal/platform/plugin"
	"github.com/intentq/intentq/internal/platform/watchdog"
	"github.com/intentq/intentq/internal/receipt"
	"github.com/intentq/intentq/internal/redact"
	"github.com/intentq/intentq/internal/session"
	"github.com/intentq/intentq/workflows"
)

// Service is a running intentq process.
type Service struct {
	cfg *config.Config
	log *zap.Logger
	// lock holds data_dir for this worker; hostLock the serving of its host's typing sessions
	// (nil: another worker on this machine serves them).
	lock     *instance.Lock
	hostLock *instance.Lock
	server   *embedded.Server
	client   client.Client
	// worker runs everything but the typing sessions, which sessionWorker runs on their host's
	// task queue; legacySessions serves the sessions' queue from before hosts for one release.
	worker         worker.Worker
	sessionWorker  worker.Worker
	legacySessions worker.Worker
	// telegramWorker sends answers and reactions: only a worker with the bot token has one.
	telegramWorker worker.Worker
	ingest         *ingest.Server
	// desk serves the hook desk's socket (nil when it could not); stopDesk ends the desk's
	// sender, deskDone closes when it has.
	desk     *desksocket.Server
	stopDesk context.CancelFunc
	deskDone chan struct{}
	// stopPoller ends the Telegram poller; pollerDone closes when it has.
	stopPoller context.CancelFunc
	pollerDone chan struct{}
	// stopSpool ends the spool drainer; spoolDone closes when it has.
	stopSpool context.CancelFunc
	spoolDone chan struct{}
	// stopWatchdog ends the watchdog; watchdogDone closes when it has.
	stopWatchdog context.CancelFunc
	watchdogDone chan struct{}
	watchdog     *watchdog.Watchdog
	metrics      *metrics.Server
	// token is the access token (data_dir/access.token): the embedded server, its Web UI and
	// the codec require it.
	token string
}

// Option changes how Start runs the service (tests play faults through them).
type Option func(*options)

// options are what the Options set.
type options struct {
	interceptors []interceptor.WorkerInterceptor
}

// WithWorkerInterceptors adds interceptors to the service's workers, after its own.
func WithWorkerInterceptors(i ...interceptor.WorkerInterceptor) Option {
	return func(o *options) { o.interceptors = append(o.interceptors, i...) }
}

// Start brings everything up in dependency order and returns once all parts serve. On error,
// whatever was started is stopped again.
func Start(ctx context.Context, cfg *config.Config, logger *zap.Logger, opts ...Option) (svc *Service, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Service{cfg: cfg, log: logger}
	defer func() {
		if err != nil {
			s.Stop(context.Background())
		}
	}()

	// One worker per data_dir, decided before anything in it is opened: a second worker would
	// answer hooks from its own copy of the desk's journals and type from its own markers.
	if s.lock, err = instance.Acquire(cfg.DataDir); err != nil {
		return nil, err
	}
	// Process-wide, and fixed by the first SDK worker of the process: the embedded server's own
	// system workers start before intentq's, so the size is set before the server starts (set
	// later, the SDK's default of 10,000 held every pending intent of a big backlog in memory).
	worker.SetStickyWorkflowCacheSize(cfg.Temporal.WorkflowCache)
	// The access token: created at the first start (0600), refused when others may read it,
	// made anew (and said so) when a crash or a disk error left it empty or damaged.
	var renewal *trust.TokenRenewal
	if s.token, renewal, err = trust.EnsureTokenNoting(trust.TokenPath(cfg.DataDir)); err != nil {
		return nil, err
	}
	if renewal != nil {
		logger.Warn("the access token was empty or damaged (a write that never reached the disk); a new one replaces it: "+
			"restart the clients holding the old one (starter mcp, a second worker using it as api_key_file), and log the browser in again (starter ui)",
			zap.String("path", renewal.Path), zap.String("found", renewal.Found))
	}
	codec, err := codecHandler(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.EmbeddedServer() {
		serverLog, err := logging.Quiet(logger.Named("temporal"), cfg.Temporal.Embedded.LogLevel)
		if err != nil {
			return nil, fmt.Errorf("temporal.embedded.log_level: %w", err)
		}
		e := cfg.Temporal.Embedded
		s.server, err = embedded.Start(ctx, embedded.Options{
			DataDir:          cfg.DataDir,
			IP:               e.IP,
			Port:             e.Port,
			UIPort:           e.UIPort,
			Namespace:        cfg.Temporal.Namespace,
			Retention:        e.Retention,
			SearchAttributes: workflows.SearchAttributes(),
			Token:            s.token,
			Codec:            codec,
			Logger:           serverLog,
		})
		if err != nil {
			return nil, err
		}
	}

	// Everything under data_dir holds message text or secrets: private, also what an older
	// version or the server created before the umask was set.
	if err := private.Fix(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}

	var dialOpts []func(*client.Options)
	if cfg.Metrics.Listen != "" {
		if s.metrics, err = metrics.Listen(cfg.Metrics.Listen); err != nil {
			return nil, err
		}
		dialOpts = append(dialOpts, func(o *client.Options) { o.MetricsHandler = s.metrics.Handler })
	}
	s.client, err = tclient.Dial(ctx, cfg, logger.Named("sdk"), dialOpts...)
	if err != nil {
		return nil, err
	}
	spec := tclient.NamespaceSpec{Name: cfg.Temporal.Namespace, SearchAttributes: workflows.SearchAttributes()}
	if cfg.EmbeddedServer() {
		spec.Retention = cfg.Temporal.Embedded.Retention
	}
	if err := tclient.EnsureNamespace(ctx, s.client, spec); err != nil {
		return nil, err
	}

	identity := doctor.WorkerIdentity()
	// A delivery typed by a worker that died before reporting it is not typed again by the next.
	// The activities act only on what this config names for a session (its pane, keys, history
	// file, topic), never on what a workflow's input says.
	sessions := session.Endpoints(cfg)
	tmux := &activities.Tmux{TypedDir: filepath.Join(cfg.DataDir, "typed"), ReceiptsDir: receipt.Dir(cfg.DataDir), Sessions: sessions}
	if err := tmux.PruneTyped(48 * time.Hour); err != nil {
		logger.Warn("typing markers", zap.Error(err))
	}
	// Each part of an answer is recorded before the next goes out (a retry resumes after it).
	telegramSender := &activities.Telegram{Token: cfg.Telegram.Token.Reveal(), Endpoint: cfg.Telegram.APIEndpoint, SentDir: filepath.Join(cfg.DataDir, "sent")}
	if err := telegramSender.PruneSent(48 * time.Hour); err != nil {
		logger.Warn("sent records", zap.Error(err))
	}
	// One worker serves a host's typing sessions (their workflow tasks, panes and hook desk):
	// a second one naming the same host serves only the shared task queue (issue 38).
	var hostErr error
	s.hostLock, hostErr = instance.AcquireHost(cfg.DataDir, instance.HostKey{Address: cfg.TemporalAddress(), Namespace: cfg.Temporal.Namespace, TaskQueue: cfg.Temporal.TaskQueue, Host: cfg.Host})
	if hostErr != nil {
		var inUse *instance.HostInUseError
		if !errors.As(hostErr, &inUse) {
			return nil, hostErr
		}
		logger.Warn("this worker serves only the shared task queue (intents, headless runs, Telegram); its hooks take through Temporal", zap.String("host", cfg.Host), zap.Error(hostErr))
	} else if machines, _, err := doctor.HostPollers(ctx, s.client, workflows.SessionHostQueue(cfg.Temporal.TaskQueue, cfg.Host)); err == nil {
		// A worker on another machine that gave itself this host name serves it already.
		if i := slices.IndexFunc(machines, func(m string) bool { return m != doctor.ThisMachine() }); i >= 0 {
			logger.Error("a worker on another machine serves this host's sessions; this one serves only the shared task queue: give each machine its own host name",
				zap.String("host", cfg.Host), zap.String("other_machine", machines[i]))
			_ = s.hostLock.Release()
			s.hostLock = nil
		}
	}
	// The hook desk: the agents' hooks take, commit and report through the worker itself.
	desk, err := hookdesk.Open(desksocket.Dir(cfg.DataDir), func(ctx context.Context, id, signal string, arg any) error {
		return s.client.SignalWorkflow(ctx, id, "", signal, arg)
	}, logger.Named("desk"))
	if err != nil {
		return nil, err
	}
	if s.hostLock == nil {
		desk.Refuse()
	} else if s.desk, err = desksocket.Listen(desksocket.SocketPath(cfg.DataDir), desk, hooktemporal.Temporal{Client: s.client, Config: cfg}, s.token, logger.Named("desk")); err != nil {
		logger.Warn("hook desk not served; hooks take through Temporal", zap.Error(err))
		desk.Refuse()
	}
	// Commits hooks made while no worker ran reach their sessions before any workflow runs here:
	// a session reads them before it looks at a lease or types (issue 32).
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	if err := desk.Flush(fctx); err != nil {
		logger.Error("hook desk: recorded commits not passed on before the workflows run; they follow as soon as Temporal takes them", zap.Error(err))
	}
	fcancel()
	deskCtx, stopDesk := context.WithCancel(context.Background())
	s.stopDesk, s.deskDone = stopDesk, make(chan struct{})
	go func() {
		defer close(s.deskDone)
		desk.Run(deskCtx)
	}()
	failures := &watchdog.FailureWindow{Window: 10 * time.Minute, Limit: 10}
	options := worker.Options{
		Identity:          identity,
		WorkerStopTimeout: 10 * time.Second,
		Interceptors:      append([]interceptor.WorkerInterceptor{AlarmingFailures(failures)}, o.interceptors...),
	}
	deps := Deps{
		Identity: identity,
		Tmux:     tmux,
		Ntfy:     &activities.Ntfy{URL: cfg.Ntfy.URL, Token: cfg.Ntfy.Token.Reveal(), Sessions: sessions},
		Telegram: telegramSender,
		History:  &activities.History{Sessions: sessions},
		Signals:  &activities.Signals{Client: s.client, Namespace: cfg.Temporal.Namespace},
		Desk:     desk,
		// Headless runs: only this config's sessions, as it says; refusals alert.
		Runner: headless.Runner(cfg, func(ctx context.Context, title, message string) {
			push(ctx, cfg, activities.Push{Title: title, Message: message, Priority: 5, Tags: []string{"rotating_light"}})
		}),
	}
	// The typing sessions (and their activities: the pane, the history file, the hook desk) on
	// their host's task queue, which only this host's worker polls (issue 38), apart from the
	// shared one, so a hook's take is answered at once while a burst's intents keep the other
	// busy (issue 26). The queue the sessions shared before hosts is still served for one
	// release: a session there moves to its host's queue at the configure signal below.
	s.worker = worker.New(s.client, cfg.Temporal.TaskQueue, options)
	workers := map[string]worker.Worker{cfg.Temporal.TaskQueue: s.worker}
	if s.hostLock != nil {
		sessionOptions := options
		sessionOptions.MaxConcurrentWorkflowTaskPollers = SessionPollers
		sessionOptions.MaxConcurrentActivityTaskPollers = SessionPollers
		sessionOptions.StickyScheduleToStartTimeout = SessionStickyWait
		s.sessionWorker = worker.New(s.client, workflows.SessionHostQueue(cfg.Temporal.TaskQueue, cfg.Host), sessionOptions)
		s.legacySessions = worker.New(s.client, workflows.SessionTaskQueue(cfg.Temporal.TaskQueue), options)
		workers[workflows.SessionHostQueue(cfg.Temporal.TaskQueue, cfg.Host)] = s.sessionWorker
		workers[workflows.SessionTaskQueue(cfg.Temporal.TaskQueue)] = s.legacySessions
	}
	if cfg.Telegram.Token.IsSet() {
		// Answers and reactions run only where the bot token is (issue 38).
		s.telegramWorker = worker.New(s.client, workflows.TelegramTaskQueue(cfg.Temporal.TaskQueue), options)
		RegisterTelegram(s.telegramWorker, deps)
		if err := s.telegramWorker.Start(); err != nil {
			return nil, fmt.Errorf("start worker on task queue %q: %w", workflows.TelegramTaskQueue(cfg.Temporal.TaskQueue), err)
		}
	}
	for queue, w := range workers {
		Register(w, deps)
		if err := w.Start(); err != nil {
			return nil, fmt.Errorf("start worker on task queue %q: %w", queue, err)
		}
	}
	if err := session.Ensure(ctx, s.client, cfg, s.hostLock != nil); err != nil {
		return nil, err
	}

	rec := intent.New(s.client, cfg)
	// Before the doors open: messages started but not queued when the last worker died reach
	// their sessions first, in the order they arrived.
	// The doors wait until it is complete; a session that still cannot be read after
	// recoverFor is named loudly (its intents then ask again on their own, later).
	recoverStart := time.Now()
	for attempt := 1; ; attempt++ {
		n, err := rec.Recover(ctx)
		if err == nil {
			if n > 0 {
				logger.Info("undelivered messages queued again", zap.Int("count", n), zap.Duration("took", time.Since(recoverStart)))
			}
			break
		}
		if time.Since(recoverStart) > recoverFor || ctx.Err() != nil {
			logger.Error("recovery of undelivered messages incomplete; the doors open, and those sessions' messages wait for their intents to ask again", zap.Error(err))
			push(ctx, cfg, activities.Push{Title: "intentq: recovery incomplete", Message: redact.Secrets(err.Error()), Priority: 4, Tags: []string{"warning"}})
			break
		}
		logger.Warn("recovery of undelivered messages incomplete; trying again before the doors open", zap.Int("attempt", attempt), zap.Error(err))
		time.Sleep(time.Duration(min(attempt, 5)) * time.Second)
	}
	// The plugin's spool: what it took while no worker ran is recorded before the doors open,
	// then the spool is drained whenever it grows.
	drainer := &spool.Drainer{Dir: cfg.SpoolDir(), Recorder: rec, Logger: logger.Named("spool"),
		OnErrors: func(ctx context.Context, errs []spool.Event) { pluginErrorAlert(ctx, cfg, errs) }}
	if st, err := drainer.Drain(ctx); err != nil {
		logger.Warn("spool not drained at start; tried again in the background", zap.Error(err))
	} else if st.Recorded > 0 {
		logger.Info("spool drained at start", zap.Int("recorded", st.Recorded), zap.Int("files", st.Files))
	}
	spoolCtx, cancelSpool := context.WithCancel(context.Background())
	s.stopSpool, s.spoolDone = cancelSpool, make(chan struct{})
	go func() {
		defer close(s.spoolDone)
		if err := drainer.Run(spoolCtx, 30*time.Second); err != nil {
			logger.Error("spool drainer stopped", zap.Error(err))
		}
	}()

	if codec != nil {
		k, err := tclient.Keyring(cfg)
		if err != nil {
			return nil, err
		}
		logger.Info("payloads are encrypted; codec endpoint for the Web UI (access token required)", zap.String("key_id", k.Current()), zap.String("endpoint", codecEndpoint(cfg)))
	}
	s.ingest, err = ingest.Listen(ingest.Options{
		Codec:        codec,
		AccessToken:  s.token,
		CodecOrigins: cfg.Temporal.Encryption.CodecOrigins,
		AllowRemote:  cfg.Ingest.AllowRemote,
		Addr:         cfg.Ingest.Listen,
		Token:        cfg.Ingest.Token,
		MaxTextBytes: cfg.Ingest.MaxTextBytes,
		Recorder:     rec,
		Prompter:     prompter{client: s.client, cfg: cfg},
		Health:       s.health,
		Logger:       logger,
	})
	if err != nil {
		return nil, err
	}

	if cfg.Claude.PatchPlugin {
		if out, err := plugin.Ensure(cfg); err != nil {
			logger.Error("plugin patch failed; the watchdog retries and alerts", zap.Error(err))
		} else {
			logger.Info("plugin patch in place", zap.String("file", out.Target.ServerTS), zap.Bool("changed", out.Patch.Changed))
		}
	}
	s.startWatchdog(cfg, failures, logger)

	if cfg.Telegram.Token.IsSet() {
		ctl := control{client: s.client, cfg: cfg, log: logger.Named("control"), now: time.Now}
		poller := telegram.New(telegram.Options{
			Token:        cfg.Telegram.Token,
			Endpoint:     cfg.Telegram.APIEndpoint,
			AllowedChats: cfg.Telegram.AllowedChatIDs,
			AllowedUsers: cfg.Telegram.AllowedUserIDs,
			Recorder:     rec,
			Logger:       logger,
			StatusFile:   cfg.PollerStatusFile(),
			Alert: func(ctx context.Context, title, message string) {
				push(ctx, cfg, activities.Push{Title: title, Message: message, Priority: 5, Tags: []string{"warning"}})
			},
			Control: ctl,
			Reply: func(ctx context.Context, chat, replyTo, text, key string) error {
				_, err := telegramSender.Send(ctx, activities.SendRequest{ChatID: chat, ReplyTo: replyTo, Text: text, Key: key})
				return err
			},
			Edit:     ctl.edit(rec),
			SenderOf: telegramSender.SenderOf,
		})
		pollCtx, cancel := context.WithCancel(context.Background())
		s.stopPoller = cancel
		s.pollerDone = make(chan struct{})
		go func() {
			defer close(s.pollerDone)
			_ = poller.Run(pollCtx)
		}()
	}
	return s, nil
}

// AlarmingFailures counts into window the failed attempts the watchdog alerts on: typing into a
// pane. Failed pushes are not among them: during an ntfy outage the sessions' alert desks hold
// what ntfy did not take and summarise it once it answers, so the person hears one voice, not the
// desk's summary beside a watchdog alarm about the same outage (issue 24).
func AlarmingFailures(window *watchdog.FailureWindow) interceptor.WorkerInterceptor {
	return watchdog.CountFailures(window, activities.TmuxInjectName)
}

// SessionPollers is how many polls the host's session worker keeps open for each kind of task.
// The SDK polls a worker's sticky queue first whenever it has a backlog, so a session whose
// workflow task once waited longer than the sticky timeout (5 s) and moved to the normal queue
// waited there while the others kept the sticky queue busy: with the SDK's 2 polls, 14 of 50
// sessions got their first message of a burst after 55 s instead of 9-14 s. More polls drain the
// sticky queue and meet new tasks as they come (no backlog written to the database).
const SessionPollers = 8

// SessionStickyWait is how long a session's workflow task waits on this worker's sticky queue
// before the server moves it to the host's queue (the SDK's default is 5 s). During a burst that
// keeps both cores busy a sticky task waited longer than 5 s, moved, and its session starved
// behind the sticky backlog until the burst was over: the slowest session's first message came at
// 72-75 s in 2 of 3 runs of the 50-session burst (with 8 polls), at 18-21 s in 3 of 3 with 10 s.
// The price is the wait of a task that was on the queue of a worker killed (SIGKILL): up to 10 s
// before another poll takes it.
const SessionStickyWait = 10 * time.Second

// startWatchdog runs the in-process watchdog (SPEC I9): a worker polling the task queue, and
// reminder activities failing more than 10 times in 10 minutes.
func (s *Service) startWatchdog(cfg *config.Config, failures *watchdog.FailureWindow, logger *zap.Logger) {
	s.watchdog = &watchdog.Watchdog{
		Checks: []watchdog.Check{
			{Name: "worker", Run: func(ctx context.Context) (string, error) {
				for _, queue := range []string{cfg.Temporal.TaskQueue, workflows.SessionHostQueue(cfg.Temporal.TaskQueue, cfg.Host)} {
					if r := doctor.WorkerPolling(ctx, s.client, queue); !r.OK {
						return r.Detail, nil
					}
				}
				return "", nil
			}},
			// Typing failures only (AlarmingFailures).
			failures.Check("reminders", "reminder deliveries"),
		},
		Ntfy:   &activities.Ntfy{URL: cfg.Ntfy.URL, Token: cfg.Ntfy.Token.Reveal()},
		Topic:  cfg.Ntfy.Topic,
		Logger: logger.Named("watchdog"),
	}
	s.watchdog.Checks = append(s.watchdog.Checks, watchdog.Check{Name: "archive", Run: func(ctx context.Context) (string, error) {
		// Records of sessions labelled important or audit outlive the namespace's retention.
		if _, err := archive.Export(ctx, s.client, cfg); err != nil {
			return "export to " + filepath.Join(cfg.DataDir, "archive") + " failed: " + err.Error(), nil
		}
		return "", nil
	}})
	if cfg.Claude.PatchPlugin {
		s.watchdog.Checks = append(s.watchdog.Checks, watchdog.Check{Name: "plugin patch", Run: func(context.Context) (string, error) {
			return repatch(cfg)
		}})
	}
	s.watchdog.Checks = append(s.watchdog.Checks, s.hostChecks(cfg)...)
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWatchdog, s.watchdogDone = cancel, make(chan struct{})
	go func() {
		defer close(s.watchdogDone)
		// The first look waits a minute: a worker that has just started has not polled yet.
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
		s.watchdog.Run(ctx)
	}()
}

// hostChecks are the watchdog's checks of the hosts that serve typing sessions, one per host
// (issue 38): a host whose worker is gone is told once, naming the sessions whose messages
// wait, and again when it is back, by the one worker that speaks for all
// (doctor.SpeaksForHosts); the checks share one reading of the task queues per round.
func (s *Service) hostChecks(cfg *config.Config) []watchdog.Check {
	var mu sync.Mutex
	var read time.Time
	var states []doctor.HostState
	look := func(ctx context.Context) []doctor.HostState {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(read) > 10*time.Second {
			states, read = doctor.HostStates(ctx, s.client, cfg), time.Now()
		}
		return states
	}
	var checks []watchdog.Check
	for _, host := range slices.Sorted(maps.Keys(doctor.SessionHosts(cfg))) {
		checks = append(checks, watchdog.Check{Name: "host " + host, Run: func(ctx context.Context) (string, error) {
			states := look(ctx)
			if !doctor.SpeaksForHosts(states, cfg.Host, s.hostLock != nil) {
				return "", watchdog.ErrNotMine
			}
			for _, h := range states {
				switch {
				case h.Host != host:
				case h.Err != nil:
					return "", fmt.Errorf("host %s: %w", host, h.Err)
				case h.Down():
					return doctor.HostDown(h) + "; " + doctor.HostDownHint(host), nil
				}
			}
			return "", nil
		}})
	}
	return checks
}

// repatch finds a vanished plugin patch (a plugin upgrade replaced server.ts) and applies it
// again; the problem says what was found, or why it could not be fixed.
func repatch(cfg *config.Config) (string, error) {
	t, state, err := plugin.Check(cfg)
	if err == nil && state == plugin.StatePatched {
		return "", nil
	}
	before := state
	if err != nil {
		before = "unreadable (" + err.Error() + ")"
	}
	if _, err := plugin.Ensure(cfg); err != nil {
		return fmt.Sprintf("patch of %s is %s and could not be re-applied: %v", t.ServerTS, before, err), nil
	}
	return fmt.Sprintf("patch of %s was %s; re-applied", t.ServerTS, before), nil
}

// recoverFor bounds how long the doors wait for the recovery of undelivered messages.
const recoverFor = 2 * time.Minute

// Deps are what the registered activities need from the process.
type Deps struct {
	Identity string
	Tmux     *activities.Tmux
	Ntfy     *activities.Ntfy
	Telegram *activities.Telegram
	// History appends to the sessions' history files; nil: files named by the requests.
	History *activities.History
	// Runner runs the headless sessions of the worker's config; nil: none runs.
	Runner *activities.AgentRunner
	// Signals sends the sessions' answers to their intents.
	Signals *activities.Signals
	// Desk holds the sessions' standing offers for their hooks; nil: none (takes go through
	// the workflows).
	Desk *hookdesk.Desk
}

// Register adds every intentq workflow and activity to a worker.
func Register(r worker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.Probe, workflow.RegisterOptions{Name: "Probe"})
	r.RegisterWorkflowWithOptions(workflows.IntentWorkflow, workflow.RegisterOptions{Name: workflows.IntentWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.SessionWorkflow, workflow.RegisterOptions{Name: workflows.SessionWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.InboxWorkflow, workflow.RegisterOptions{Name: workflows.InboxWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.HeadlessSessionWorkflow, workflow.RegisterOptions{Name: workflows.HeadlessWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.SemaphoreWorkflow, workflow.RegisterOptions{Name: workflows.SemaphoreWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.ApprovalWorkflow, workflow.RegisterOptions{Name: workflows.ApprovalWorkflowName})
	prober := &activities.Prober{Identity: deps.Identity, StartedAt: time.Now()}
	r.RegisterActivityWithOptions(prober.Probe, activity.RegisterOptions{Name: activities.ProbeActivityName})
	r.RegisterActivityWithOptions(deps.Tmux.Inject, activity.RegisterOptions{Name: activities.TmuxInjectName})
	r.RegisterActivityWithOptions(deps.Tmux.Capture, activity.RegisterOptions{Name: activities.TmuxCaptureName})
	r.RegisterActivityWithOptions(deps.Tmux.SendKeys, activity.RegisterOptions{Name: activities.TmuxSendKeysName})
	history := deps.History
	if history == nil {
		history = &activities.History{}
	}
	r.RegisterActivityWithOptions(history.Append, activity.RegisterOptions{Name: activities.HistoryAppendName})
	r.RegisterActivityWithOptions(history.AppendAll, activity.RegisterOptions{Name: activities.HistoryAppendAllName})
	runner := deps.Runner
	if runner == nil {
		runner = &activities.AgentRunner{}
	}
	r.RegisterActivityWithOptions(runner.Run, activity.RegisterOptions{Name: activities.AgentRunName})
	r.RegisterActivityWithOptions(deps.Ntfy.Publish, activity.RegisterOptions{Name: activities.NtfyPublishName})
	r.RegisterActivityWithOptions(deps.Signals.SignalAll, activity.RegisterOptions{Name: activities.SignalAllName})
	r.RegisterActivityWithOptions(deps.Signals.HostServed, activity.RegisterOptions{Name: activities.HostServedName})
	if deps.Desk != nil {
		r.RegisterActivityWithOptions(deps.Desk.Publish, activity.RegisterOptions{Name: workflows.DeskPublishName})
		r.RegisterActivityWithOptions(deps.Desk.Withdraw, activity.RegisterOptions{Name: workflows.DeskWithdrawName})
		r.RegisterActivityWithOptions(deps.Desk.KnowInbox, activity.RegisterOptions{Name: workflows.DeskInboxName})
	} else {
		r.RegisterActivityWithOptions(workflows.NoDeskPublish, activity.RegisterOptions{Name: workflows.DeskPublishName})
		r.RegisterActivityWithOptions(workflows.NoDeskWithdraw, activity.RegisterOptions{Name: workflows.DeskWithdrawName})
		r.RegisterActivityWithOptions(workflows.NoDeskInbox, activity.RegisterOptions{Name: workflows.DeskInboxName})
	}
}

// RegisterTelegram adds the Telegram activities (answers, reactions) to a worker of the task
// queue only workers with the bot token poll (workflows.TelegramTaskQueue).
func RegisterTelegram(r worker.Registry, deps Deps) {
	r.RegisterActivityWithOptions(deps.Telegram.Send, activity.RegisterOptions{Name: activities.TelegramSendName})
	r.RegisterActivityWithOptions(deps.Telegram.React, activity.RegisterOptions{Name: activities.TelegramReactName})
	r.RegisterActivityWithOptions(deps.Telegram.Edit, activity.RegisterOptions{Name: activities.TelegramEditName})
}

// Fields describe where the service can be reached, for the `ready` log line.
func (s *Service) Fields() []zap.Field {
	fields := []zap.Field{
		zap.String("temporal", s.cfg.TemporalAddress()),
		zap.Bool("embedded", s.server != nil),
		zap.String("namespace", s.cfg.Temporal.Namespace),
		zap.String("task_queue", s.cfg.Temporal.TaskQueue),
		zap.String("ingest", "http://"+s.ingest.Addr()),
	}
	if s.server != nil && s.server.UIURL() != "" {
		// The login URL: it sets the browser's cookie (the token is in it, as Jupyter's is).
		fields = append(fields, zap.String("ui", trust.LoginURL(s.server.UIURL(), s.token)))
	}
	if s.metrics != nil {
		fields = append(fields, zap.String("metrics", "http://"+s.metrics.Addr()+"/metrics"))
	}
	return fields
}

// prompter queues prompts from the HTTP door on configured headless sessions.
type prompter struct {
	client client.Client
	cfg    *config.Config
}

func (p prompter) Submit(ctx context.Context, session string, req workflows.PromptRequest) (workflows.PromptRecord, error) {
	rec, err := headless.Submit(ctx, p.client, p.cfg, session, req, false)
	if errors.Is(err, headless.ErrNotHeadless) {
		return rec, fmt.Errorf("%w: %q", ingest.ErrUnknownSession, session)
	}
	return rec, err
}

// MetricsURL is the Prometheus endpoint, empty when metrics.listen is off.
func (s *Service) MetricsURL() string {
	if s.metrics == nil {
		return ""
	}
	return "http://" + s.metrics.Addr() + "/metrics"
}

// Watchdog is the service's watchdog (nil before Start completes).
func (s *Service) Watchdog() *watchdog.Watchdog { return s.watchdog }

// Client is the service's Temporal client.
func (s *Service) Client() client.Client { return s.client }

// health answers /healthz: Temporal must answer.
func (s *Service) health(ctx context.Context) error {
	if _, err := s.client.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	return nil
}

// Stop shuts down in reverse order: the doors stop taking messages (Telegram poller, ingest),
// the worker drains running tasks, then the client, the Web UI and the server stop.
func (s *Service) Stop(ctx context.Context) {
	if s.stopWatchdog != nil {
		s.stopWatchdog()
		<-s.watchdogDone
		s.stopWatchdog = nil
	}
	if s.stopPoller != nil {
		s.stopPoller()
		<-s.pollerDone
		s.stopPoller = nil
	}
	if s.stopSpool != nil {
		s.stopSpool()
		<-s.spoolDone
		s.stopSpool = nil
	}
	if s.ingest != nil {
		if err := s.ingest.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("ingest shutdown", zap.Error(err))
		}
		s.ingest = nil
	}
	if s.desk != nil {
		_ = s.desk.Close()
		s.desk = nil
	}
	if s.sessionWorker != nil {
		s.sessionWorker.Stop()
		s.sessionWorker = nil
	}
	if s.legacySessions != nil {
		s.legacySessions.Stop()
		s.legacySessions = nil
	}
	if s.telegramWorker != nil {
		s.telegramWorker.Stop()
		s.telegramWorker = nil
	}
	if s.worker != nil {
		s.worker.Stop()
		s.worker = nil
	}
	if s.stopDesk != nil {
		s.stopDesk()
		<-s.deskDone
		s.stopDesk = nil
	}
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	if s.metrics != nil {
		_ = s.metrics.Shutdown(ctx)
		s.metrics = nil
	}
	if s.server != nil {
		if err := s.server.Stop(); err != nil {
			s.log.Warn("embedded server shutdown", zap.Error(err))
		}
		s.server = nil
	}
	if s.hostLock != nil {
		_ = s.hostLock.Release()
		s.hostLock = nil
	}
	if s.lock != nil {
		_ = s.lock.Release()
		s.lock = nil
	}
}

// pluginErrorAlert tells the person, once per batch, that the patched plugin block failed for
// messages: those messages were not recorded by the plugin door (IDs and the error only).
func pluginErrorAlert(ctx context.Context, cfg *config.Config, errs []spool.Event) {
	first := errs[0]
	msg := fmt.Sprintf("the patched Telegram plugin block failed %d time(s); first: chat=%s message=%s: %s. Those messages were not recorded: run starter patch-plugin, and ask the sender to resend.",
		len(errs), string(first.ChatID), string(first.MessageID), first.Error)
	push(ctx, cfg, activities.Push{Title: "intentq: plugin block failed", Message: redact.Secrets(msg), Priority: 5, Tags: []string{"rotating_light"}})
}

// push sends an alert from the worker process itself (not a workflow) to the configured topic;
// best effort.
func push(ctx context.Context, cfg *config.Config, p activities.Push) {
	if cfg.Ntfy.URL == "" || cfg.Ntfy.Topic == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	p.Topic = cfg.Ntfy.Topic
	_ = (&activities.Ntfy{URL: cfg.Ntfy.URL, Token: cfg.Ntfy.Token.Reveal()}).Publish(ctx, p)
}

// codecEndpoint is where a Web UI decrypts payloads when encryption is on: the embedded UI's
// own origin, and the ingest listener for other UIs and tools; both require the access token.
func codecEndpoint(cfg *config.Config) string {
	if !cfg.EncryptionOn() {
		return ""
	}
	if cfg.EmbeddedServer() && cfg.Temporal.Embedded.UIPort != 0 {
		return cfg.UIAddress() + embedded.CodecPath + " (and http://" + cfg.Ingest.Listen + "/codec)"
	}
	return "http://" + cfg.Ingest.Listen + "/codec"
}

// codecHandler is the payload codec the Web UI and tools decrypt through (nil: encryption off).
// It refuses payloads that are not encrypted unless temporal.encryption.accept_plain is set;
// the listeners put it behind the access token.
func codecHandler(cfg *config.Config) (http.Handler, error) {
	if !cfg.EncryptionOn() {
		return nil, nil
	}
	k, err := tclient.Keyring(cfg)
	if err != nil {
		return nil, err
	}
	codec := k.Strict()
	if cfg.Temporal.Encryption.AcceptPlain {
		codec = k
	}
	return encryption.CodecHandler(codec, cfg.Temporal.Encryption.CodecOrigins), nil
}

// Token is the access token the service's server, Web UI and codec require.
func (s *Service) Token() string { return s.token }
