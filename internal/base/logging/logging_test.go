package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/intentq/intentq/config"
)

func TestJSONByDefaultConsoleOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewTo(config.Log{Level: "info", Format: "auto"}, zapcore.AddSync(&buf), false)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("ready", zap.String("intent", "intent/1/2"))
	var entry map[string]any
	if err := json.Unmarshal(buf.Bytes(), &entry); err != nil {
		t.Fatalf("auto without a terminal must be JSON: %v: %s", err, buf.String())
	}
	if entry["msg"] != "ready" || entry["intent"] != "intent/1/2" {
		t.Errorf("entry = %v", entry)
	}

	buf.Reset()
	l, _ = NewTo(config.Log{Level: "info", Format: "auto"}, zapcore.AddSync(&buf), true)
	l.Info("ready")
	if json.Valid(buf.Bytes()) || !strings.Contains(buf.String(), "ready") {
		t.Errorf("auto on a terminal must be console: %q", buf.String())
	}
}

func TestLevelAndQuiet(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewTo(config.Log{Level: "debug", Format: "json"}, zapcore.AddSync(&buf), false)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Quiet(l, "warn")
	if err != nil {
		t.Fatal(err)
	}
	q.Info("server chatter")
	q.Warn("server warning")
	l.Debug("own debug")
	out := buf.String()
	if strings.Contains(out, "server chatter") || !strings.Contains(out, "server warning") || !strings.Contains(out, "own debug") {
		t.Errorf("output = %s", out)
	}
	if _, err := NewTo(config.Log{Level: "loud", Format: "json"}, zapcore.AddSync(&buf), false); err == nil {
		t.Error("bad level accepted")
	}
}
