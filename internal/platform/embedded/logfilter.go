package embedded

import (
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// benignWarnings are server warnings that are expected in an embedded single-process setup and
// would only worry the reader.
var benignWarnings = []string{
	"HTTP API port has not been set", // Nexus over HTTP is not used by intentq
}

// quietCore drops the server's known benign warnings, and everything below error while the
// server shuts down (its services report each other's closed ports then).
type quietCore struct {
	zapcore.Core
	stopping *atomic.Bool
}

func quietLogger(l *zap.Logger, stopping *atomic.Bool) *zap.Logger {
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return &quietCore{Core: c, stopping: stopping}
	}))
}

func (c *quietCore) With(fields []zapcore.Field) zapcore.Core {
	return &quietCore{Core: c.Core.With(fields), stopping: c.stopping}
}

func (c *quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.stopping.Load() && e.Level < zapcore.ErrorLevel {
		return ce
	}
	for _, w := range benignWarnings {
		if strings.HasPrefix(e.Message, w) {
			return ce
		}
	}
	if !c.Core.Enabled(e.Level) {
		return ce
	}
	return ce.AddCore(e, c)
}
