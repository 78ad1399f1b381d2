package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/intentq/intentq/workflows"
)

// Prompter queues prompts on headless sessions.
type Prompter interface {
	// Submit queues req on session; ErrUnknownSession when there is no such headless session.
	Submit(ctx context.Context, session string, req workflows.PromptRequest) (workflows.PromptRecord, error)
}

// ErrUnknownSession: the path names no headless session.
var ErrUnknownSession = errors.New("no such headless session")

// PromptChannel is the channel of every prompt the HTTP door queues: its tool policy (web) is
// what the door's token allows. A request cannot choose another (the cli channel allows every
// tool).
const PromptChannel = "web"

type promptBody struct {
	Text *string `json:"text"`
	Key  string  `json:"key"`
	// Channel may only repeat the door's own (PromptChannel).
	Channel string `json:"channel"`
}

// handlePrompts serves POST /v1/sessions/{id}/prompts: 202 with the prompt's record (the same
// key twice: the same record), 400, 401, 404, 413, 503.
func (s *Server) handlePrompts(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r) {
		return
	}
	if s.prompter == nil {
		writeJSON(w, http.StatusNotFound, errorBody("no headless sessions are configured"))
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var p promptBody
	if err := json.Unmarshal(body, &p); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("body: is not a JSON object: "+jsonReason(err)))
		return
	}
	if p.Text == nil || strings.TrimSpace(*p.Text) == "" {
		writeJSON(w, http.StatusBadRequest, errorBody("text: is missing or empty"))
		return
	}
	if ch := strings.ToLower(strings.TrimSpace(p.Channel)); ch != "" && ch != PromptChannel {
		writeJSON(w, http.StatusBadRequest, errorBody("channel: this door's prompts run under the "+PromptChannel+" policy; "+
			"a request cannot choose another (omit channel)"))
		return
	}
	session := r.PathValue("id")
	rec, err := s.prompter.Submit(r.Context(), session, workflows.PromptRequest{Key: p.Key, Channel: PromptChannel, Text: *p.Text})
	switch {
	case errors.Is(err, ErrUnknownSession):
		writeJSON(w, http.StatusNotFound, errorBody(err.Error()))
	case err != nil:
		s.log.Error("prompt not queued", zap.String("session", session), zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, errorBody("not queued, try again: "+err.Error()))
	default:
		s.log.Info("prompt queued", zap.String("session", session), zap.String("prompt", rec.ID), zap.String("channel", PromptChannel))
		writeJSON(w, http.StatusAccepted, rec)
	}
}
