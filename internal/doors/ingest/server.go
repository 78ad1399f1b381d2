// Package ingest is intentq's HTTP door on loopback: health, and (with a bearer token) the
// endpoints through which the patched Claude Code plugin and other local callers record
// messages, and the payload codec (with the access token).
//
// On loopback every request's Host must name a loopback host and the listener's port
// (trust.HostAllowed: a web page reaching 127.0.0.1 through DNS rebinding is refused, 403).
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/trust"
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
	// Codec serves /codec/encode and /codec/decode (payload encryption on); nil: none. It is
	// served behind trust.Guard: the access token as a bearer header or as the login cookie
	// (the embedded Web UI's login sets it; `starter ui` prints the URL), CORS and Origin for
	// CodecOrigins.
	Codec http.Handler
	// AccessToken is what the codec requires (trust.EnsureToken); empty refuses every call.
	AccessToken string
	// CodecOrigins may call the codec from a browser (a Web UI on another port).
	CodecOrigins []string
	// AllowRemote is ingest.allow_remote: the listener is meant for other machines (or a
	// container's published port), so the Host check is off; the tokens still apply.
	AllowRemote bool
	Logger      *zap.Logger
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
	guard    trust.Guard
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
	s.guard = trust.Guard{Port: l.Addr().(*net.TCPAddr).Port, Token: opts.AccessToken, Cookie: true,
		Origins: opts.CodecOrigins, AnyHost: opts.AllowRemote}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          zap.NewStdLog(logger),
		// The codec's login cookie counts only on connections of this user's (trust.Guard).
		ConnContext: trust.ConnContext,
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
		mux.Handle("/codec/", s.codecRoutes())
	}
	if s.guard.AnyHost || s.guard.Port == 0 { // no listener (routes driven directly)
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !trust.HostAllowed(r.Host, s.guard.Port) {
			http.Error(w, "forbidden: this server answers only to its loopback address (Host "+strconv.Quote(r.Host)+")", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// codecRoutes is the codec behind the guard. A CORS preflight (no credentials by definition)
// is answered before it, for the configured origins only; GET /codec/ tells a browser that
// opened the login URL (`starter ui`) that it is logged in.
func (s *Server) codecRoutes() http.Handler {
	guarded := s.guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/codec/" {
			_, _ = w.Write([]byte("intentq codec: this browser is logged in; a Web UI on 127.0.0.1 can decrypt through this endpoint\n"))
			return
		}
		s.codec.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && slices.Contains(s.guard.Origins, r.Header.Get("Origin")) {
			s.codec.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
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
