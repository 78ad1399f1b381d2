package tclient

import (
	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
)

// sdkLogger routes the Temporal SDK's logs through intentq's zap logger.
type sdkLogger struct{ s *zap.SugaredLogger }

// NewSDKLogger adapts a zap logger to the Temporal SDK's logger interface.
func NewSDKLogger(l *zap.Logger) log.Logger {
	return sdkLogger{s: l.WithOptions(zap.AddCallerSkip(1)).Sugar()}
}

func (l sdkLogger) Debug(msg string, kv ...interface{}) { l.s.Debugw(msg, kv...) }
func (l sdkLogger) Info(msg string, kv ...interface{})  { l.s.Infow(msg, kv...) }
func (l sdkLogger) Warn(msg string, kv ...interface{})  { l.s.Warnw(msg, kv...) }
func (l sdkLogger) Error(msg string, kv ...interface{}) { l.s.Errorw(msg, kv...) }

// With returns a logger that adds kv to every entry.
func (l sdkLogger) With(kv ...interface{}) log.Logger { return sdkLogger{s: l.s.With(kv...)} }
