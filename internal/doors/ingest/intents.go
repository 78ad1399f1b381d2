package ingest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/intentq/intentq/internal/intent"
	"github.com/intentq/intentq/workflows"
)

// Recorder records messages; *intent.Recorder is the real one.
type Recorder interface {
	Record(ctx context.Context, m intent.Message) (intent.Result, error)
}

// envelopeBytes is room for the JSON around the text (IDs, user, escapes).
const envelopeBytes = 16 << 10

// intentRequest is the body of POST /v1/intents, as the patched plugin sends it. chat_id and
// message_id may be strings or numbers; ts is unix seconds (or milliseconds) or RFC 3339.
type intentRequest struct {
	ChatID    json.RawMessage `json:"chat_id"`
	MessageID json.RawMessage `json:"message_id"`
	Text      *string         `json:"text"`
	User      string          `json:"user"`
	TS        json.RawMessage `json:"ts"`
}

// DecodeIntent parses a POST /v1/intents body into a message. Errors name the field and never
// quote the text.
func DecodeIntent(body []byte) (intent.Message, error) {
	var req intentRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return intent.Message{}, &intent.InvalidError{Field: "body", Reason: "is not a JSON object: " + jsonReason(err)}
	}
	// dec.More alone misses a stray '}' or ']' after the object; Token reports EOF only when
	// nothing but whitespace follows.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return intent.Message{}, &intent.InvalidError{Field: "body", Reason: "has data after the JSON object"}
	}
	chat, err := idField("chat_id", req.ChatID)
	if err != nil {
		return intent.Message{}, err
	}
	msg, err := idField("message_id", req.MessageID)
	if err != nil {
		return intent.Message{}, err
	}
	if req.Text == nil {
		return intent.Message{}, &intent.InvalidError{Field: "text", Reason: "is missing"}
	}
	sent, err := tsField(req.TS)
	if err != nil {
		return intent.Message{}, err
	}
	return intent.Message{ChatID: chat, MessageID: msg, Text: *req.Text, User: req.User, Source: workflows.SourceIngest, SentAt: sent}, nil
}

// jsonReason keeps the decoder's position information but not the offending bytes.
func jsonReason(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("syntax error at byte %d", syntax.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return "got " + typ.Value // the body itself is not an object; don't name the Go type
	case errors.As(err, &typ):
		return fmt.Sprintf("field %s must be %s, not %s", typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.EOF):
		return "empty body"
	default:
		return "malformed"
	}
}

func idField(name string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", &intent.InvalidError{Field: name, Reason: "is missing"}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if i, err := n.Int64(); err == nil {
			return strconv.FormatInt(i, 10), nil
		}
	}
	return "", &intent.InvalidError{Field: name, Reason: "must be a string or an integer"}
}

func tsField(raw json.RawMessage) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, nil
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err == nil {
		if n < 0 || math.IsNaN(n) || n > 1e15 {
			return time.Time{}, &intent.InvalidError{Field: "ts", Reason: "is out of range"}
		}
		if n > 1e12 { // milliseconds
			return time.UnixMilli(int64(n)).UTC(), nil
		}
		sec, frac := math.Modf(n)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, &intent.InvalidError{Field: "ts", Reason: "must be unix seconds, milliseconds or RFC 3339"}
}

// handleIntents serves POST /v1/intents: 201 new, 200 already recorded, 400 bad input with a
// reason, 401 without the token, 413 over the size limit, 503 when Temporal cannot be reached.
func (s *Server) handleIntents(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r) {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	msg, err := DecodeIntent(body)
	if err == nil {
		var res intent.Result
		res, err = s.recorder.Record(r.Context(), msg)
		if err == nil {
			status := http.StatusOK
			if res.Created {
				status = http.StatusCreated
			}
			s.log.Info("intent recorded", zap.String("intent", res.ID), zap.String("session", res.Session),
				zap.Bool("created", res.Created), zap.Bool("repaired", res.Repaired), zap.String("door", workflows.SourceIngest))
			writeJSON(w, status, res)
			return
		}
	}
	var invalid *intent.InvalidError
	switch {
	case errors.As(err, &invalid) && invalid.TooLarge:
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody(invalid.Error()))
	case errors.As(err, &invalid):
		s.log.Info("intent rejected", zap.String("field", invalid.Field), zap.String("reason", invalid.Reason))
		writeJSON(w, http.StatusBadRequest, errorBody(invalid.Error()))
	default:
		s.log.Error("intent not recorded", zap.String("chat", msg.ChatID), zap.String("message", msg.MessageID), zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, errorBody("not recorded, try again: "+err.Error()))
	}
}

// requireToken answers 401 unless the request carries the ingest token.
func (s *Server) requireToken(w http.ResponseWriter, r *http.Request) bool {
	if s.authorized(r) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="intentq"`)
	writeJSON(w, http.StatusUnauthorized, errorBody(s.authProblem()))
	return false
}

// readBody reads the request body up to the size limit, answering 413 or 400 when it cannot.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody(fmt.Sprintf("body is over %d bytes", s.maxBody)))
			return nil, false
		}
		writeJSON(w, http.StatusBadRequest, errorBody("cannot read body"))
		return nil, false
	}
	return body, true
}

func (s *Server) authorized(r *http.Request) bool {
	if !s.token.IsSet() {
		return false
	}
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.token.Reveal())) == 1
}

func (s *Server) authProblem() string {
	if !s.token.IsSet() {
		return "ingest is closed: no token is configured (ingest.token or ingest.token_file)"
	}
	return "missing or wrong bearer token"
}

func errorBody(reason string) map[string]string { return map[string]string{"error": reason} }
