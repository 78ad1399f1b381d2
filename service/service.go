// Package service assembles the long-running intentq process: the embedded Temporal server and
// Web UI (unless an external cluster is configured), the Temporal worker, and the ingest HTTP
// endpoint. The worker binary is a thin shell around Start and Stop.
package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/intentq/intentq/activities"
	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/embedded"
	"github.com/intentq/intentq/ingest"
	"github.com/intentq/intentq/logging"
	"github.com/intentq/intentq/tclient"
	"github.com/intentq/intentq/workflows"
)

// Service is a running intentq process.
type Service struct {
	cfg    *config.Config
	log    *zap.Logger
	server *embedded.Server
	client client.Client
	worker worker.Worker
	ingest *ingest.Server
}

// Start brings everything up in dependency order and returns once all parts serve. On error,
// whatever was started is stopped again.
func Start(ctx context.Context, cfg *config.Config, logger *zap.Logger) (svc *Service, err error) {
	s := &Service{cfg: cfg, log: logger}
	defer func() {
		if err != nil {
			s.Stop(context.Background())
		}
	}()

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
			Logger:           serverLog,
		})
		if err != nil {
			return nil, err
		}
	}

	s.client, err = tclient.Dial(ctx, cfg, logger.Named("sdk"))
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

	identity := workerIdentity()
	s.worker = worker.New(s.client, cfg.Temporal.TaskQueue, worker.Options{
		Identity:          identity,
		WorkerStopTimeout: 10 * time.Second,
	})
	Register(s.worker, Deps{Identity: identity})
	if err := s.worker.Start(); err != nil {
		return nil, fmt.Errorf("start worker on task queue %q: %w", cfg.Temporal.TaskQueue, err)
	}

	s.ingest, err = ingest.Listen(cfg.Ingest.Listen, s.health, logger)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Deps are what the registered activities need from the process.
type Deps struct {
	Identity string
}

// Register adds every intentq workflow and activity to a worker.
func Register(r worker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.Probe, workflow.RegisterOptions{Name: "Probe"})
	prober := &activities.Prober{Identity: deps.Identity, StartedAt: time.Now()}
	r.RegisterActivityWithOptions(prober.Probe, activity.RegisterOptions{Name: activities.ProbeActivityName})
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
		fields = append(fields, zap.String("ui", s.server.UIURL()))
	}
	return fields
}

// Client is the service's Temporal client.
func (s *Service) Client() client.Client { return s.client }

// health answers /healthz: Temporal must answer.
func (s *Service) health(ctx context.Context) error {
	if _, err := s.client.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	return nil
}

// Stop shuts down in reverse order: the worker drains running tasks, then the ingest endpoint,
// the client, the Web UI and the server.
func (s *Service) Stop(ctx context.Context) {
	if s.worker != nil {
		s.worker.Stop()
		s.worker = nil
	}
	if s.ingest != nil {
		if err := s.ingest.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("ingest shutdown", zap.Error(err))
		}
		s.ingest = nil
	}
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	if s.server != nil {
		if err := s.server.Stop(); err != nil {
			s.log.Warn("embedded server shutdown", zap.Error(err))
		}
		s.server = nil
	}
}

func workerIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("intentq@%s/%d", host, os.Getpid())
}
