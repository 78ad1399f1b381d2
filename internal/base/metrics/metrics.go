// Package metrics exposes the worker's metrics for Prometheus on a loopback port (SPEC P10):
// the Temporal SDK's own metrics and intentq's counters (intentq_intents_recorded,
// intentq_reminders_sent/failed, intentq_deliveries, intentq_runs, intentq_run_cost_micro_usd),
// which workflows record through workflow.GetMetricsHandler.
package metrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
)

// Server serves /metrics.
type Server struct {
	Handler client.MetricsHandler
	http    *http.Server
	closer  func() error
	addr    string
}

// Listen starts the metrics endpoint on addr (config key metrics.listen).
func Listen(addr string) (*Server, error) {
	// A registry of its own: several servers (tests, embedded setups) may live in one process.
	reporter := tallyprom.NewReporter(tallyprom.Options{Registerer: prom.NewRegistry()})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &tallyprom.DefaultSanitizerOpts,
	}, time.Second)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		_ = closer.Close()
		return nil, fmt.Errorf("metrics.listen: cannot listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reporter.HTTPHandler())
	s := &Server{Handler: handler{scope}, http: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, closer: closer.Close, addr: l.Addr().String()}
	go func() { _ = s.http.Serve(l) }() // ends with Shutdown
	return s, nil
}

// Addr is where the endpoint listens.
func (s *Server) Addr() string { return s.addr }

// Shutdown stops the endpoint.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if cerr := s.closer(); err == nil {
		err = cerr
	}
	return err
}

// handler adapts a tally scope to the Temporal SDK's metrics handler.
type handler struct{ scope tally.Scope }

func (h handler) WithTags(tags map[string]string) client.MetricsHandler {
	return handler{h.scope.Tagged(tags)}
}
func (h handler) Counter(name string) client.MetricsCounter { return h.scope.Counter(name) }
func (h handler) Gauge(name string) client.MetricsGauge     { return h.scope.Gauge(name) }
func (h handler) Timer(name string) client.MetricsTimer     { return h.scope.Timer(name) }
