// Command worker is intentq's long-running process: the Temporal worker, the ingest endpoint,
// and, unless temporal.address is set, an embedded Temporal server with the Web UI.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/logging"
	"github.com/intentq/intentq/internal/base/private"
	"github.com/intentq/intentq/internal/platform/gomaxprocs"
	"github.com/intentq/intentq/internal/platform/niceness"
	"github.com/intentq/intentq/internal/service"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "intentq worker:", err)
		os.Exit(1)
	}
}

func run() error {
	private.Umask()
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	cfg, err := config.Load(fs)
	if err != nil {
		return err
	}
	logger, err := logging.New(cfg.Log)
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()
	procs := gomaxprocs.Spare()
	if cfg.Nice > 0 {
		// Before the embedded server and the SDK start their threads: they inherit it.
		if err := niceness.Lower(cfg.Nice); err != nil {
			logger.Warn("the worker runs at its starting CPU priority", zap.Int("nice", cfg.Nice), zap.Error(err))
		}
	}

	// The first SIGINT/SIGTERM cancels ctx and starts a graceful shutdown; stop() then restores
	// the default handlers, so a second signal ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	svc, err := service.Start(ctx, cfg, logger)
	if err != nil {
		return err
	}
	logger.Info("ready", append(svc.Fields(), zap.Duration("startup", time.Since(started)), zap.Int("gomaxprocs", procs))...)

	<-ctx.Done()
	stop()
	logger.Info("shutting down: draining the worker, then the UI and the server; signal again to force")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc.Stop(shutdownCtx)
	logger.Info("stopped")
	return nil
}
