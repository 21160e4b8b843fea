package workerapp

import (
	"log/slog"

	"go.temporal.io/sdk/log"
)

// newTemporalLogger routes the SDK's logs to slog. The SDK's own info lines
// (worker started, polling) go to debug so that a CLI's output stays clean.
func newTemporalLogger(l *slog.Logger) log.Logger {
	if l == nil {
		l = slog.Default()
	}
	return sdkLogger{l: l}
}

type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) Debug(msg string, kv ...any) { s.l.Debug(msg, kv...) }
func (s sdkLogger) Info(msg string, kv ...any)  { s.l.Debug(msg, kv...) }
func (s sdkLogger) Warn(msg string, kv ...any)  { s.l.Warn(msg, kv...) }
func (s sdkLogger) Error(msg string, kv ...any) { s.l.Error(msg, kv...) }
