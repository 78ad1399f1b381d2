// Package logging builds the zap logger every intentq process uses.
package logging

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/intentq/intentq/config"
)

// New returns a logger writing to stderr at the configured level, in JSON, or in console form
// when the format is console, or auto and stderr is a terminal.
func New(cfg config.Log) (*zap.Logger, error) {
	return NewTo(cfg, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// NewTo is New for any writer; terminal says whether auto means console.
func NewTo(cfg config.Log, w zapcore.WriteSyncer, terminal bool) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(cfg.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	var enc zapcore.Encoder
	switch {
	case cfg.Format == "console" || (cfg.Format == "auto" && terminal):
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		if !terminal {
			ec.EncodeLevel = zapcore.CapitalLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(ec)
	case cfg.Format == "json" || cfg.Format == "auto":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, fmt.Errorf("log.format: %q is not json, console or auto", cfg.Format)
	}
	core := zapcore.NewCore(enc, w, level)
	return zap.New(core, zap.ErrorOutput(w)), nil
}

// Quiet returns l restricted to level and above, for chatty components such as the embedded
// Temporal server.
func Quiet(l *zap.Logger, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	return l.WithOptions(zap.IncreaseLevel(lvl)), nil
}
