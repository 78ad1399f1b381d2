// Package ingest is intentq's HTTP door on loopback: health, and (with a bearer token) the
// endpoints through which the patched Claude Code plugin and other local callers record
// messages.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
)

// Health reports whether the process behind the endpoint can do its job.
type Health func(ctx context.Context) error

// Options configure the ingest server.
type Options struct {
	// Addr is ingest.listen.
	Addr string
	// Token is the bearer token POST requests must carry; unset closes the POST endpoints.
	Token config.Secret
	// MaxTextBytes is ingest.max_text_bytes; bodies may be that plus room for the envelope.
	MaxTextBytes int
	Recorder     Recorder
	// Prompter serves POST /v1/sessions/{id}/prompts; nil: no headless sessions.
	Prompter Prompter
	Health   Health
	// Codec serves /codec/encode and /codec/decode (payload encryption on); nil: none.
	Codec  http.Handler
	Logger *zap.Logger
}

// Server is the ingest HTTP server.
type Server struct {
	http     *http.Server
	listener net.Listener
	done     chan error
	token    config.Secret
	maxBody  int64
	recorder Recorder
	prompter Prompter
	health   Health
	codec    http.Handler
	log      *zap.Logger
}

// Listen binds opts.Addr (config key ingest.listen) and serves until Shutdown.
func Listen(opts Options) (*Server, error) {
	l, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("ingest.listen: cannot listen on %s: %w", opts.Addr, err)
	}
	logger := opts.Logger.Named("ingest")
	s := &Server{
		listener: l,
		done:     make(chan error, 1),
		token:    opts.Token,
		maxBody:  int64(opts.MaxTextBytes) + envelopeBytes,
		recorder: opts.Recorder,
		prompter: opts.Prompter,
		health:   opts.Health,
		codec:    opts.Codec,
		log:      logger,
	}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          zap.NewStdLog(logger),
	}
	go func() {
		err := s.http.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.HandleFunc("POST /v1/intents", s.handleIntents)
	mux.HandleFunc("POST /v1/sessions/{id}/prompts", s.handlePrompts)
	if s.codec != nil {
		mux.Handle("/codec/", s.codec)
	}
	return mux
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := s.health(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unhealthy", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Shutdown stops accepting requests and waits for those in flight.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.http.Shutdown(ctx); err != nil {
		return fmt.Errorf("ingest: shutdown: %w", err)
	}
	return <-s.done
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
