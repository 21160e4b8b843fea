package clientconf

import (
	"log/slog"
	"strings"

	"go.temporal.io/sdk/log"
)

// NewTemporalLogger routes the SDK's logs to slog. The SDK's own info lines
// (worker started, polling) go to debug so that a CLI's output stays clean.
func NewTemporalLogger(l *slog.Logger) log.Logger {
	if l == nil {
		l = slog.Default()
	}
	return sdkLogger{l: l}
}

type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) Debug(msg string, kv ...any) { s.l.Debug(msg, kv...) }
func (s sdkLogger) Info(msg string, kv ...any) {
	if strings.HasPrefix(msg, sdkTaskFailedPrefix) {
		s.l.Warn(msg, kv...)
		return
	}
	s.l.Debug(msg, kv...)
}

// sdkTaskFailedPrefix starts the SDK's line for a task whose processing
// failed after it ran, such as a workflow task completion the server
// refused (a search attribute the namespace lacks, say). The SDK logs it at
// info; a run stuck in a failing workflow task must show at warn.
const sdkTaskFailedPrefix = "Task processing failed"

func (s sdkLogger) Warn(msg string, kv ...any)  { s.l.Warn(msg, kv...) }
func (s sdkLogger) Error(msg string, kv ...any) { s.l.Error(msg, kv...) }
