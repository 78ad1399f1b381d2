package main

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/intentq/intentq/internal/base/version"
)

// The ready line names the build: its version and commit beside the service's addresses.
func TestReadyFieldsNameTheBuild(t *testing.T) {
	fields := readyFields([]zap.Field{zap.String("temporal", "127.0.0.1:7233")},
		version.Info{Version: "0.5.0", Commit: "abc1234", Go: "go1.26.8"}, 2*time.Second, 3)
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	for key, want := range map[string]any{"temporal": "127.0.0.1:7233", "version": "0.5.0", "commit": "abc1234", "startup": 2 * time.Second, "gomaxprocs": int64(3)} {
		if got := enc.Fields[key]; got != want {
			t.Errorf("ready %s = %v (%T), want %v", key, got, got, want)
		}
	}
}
