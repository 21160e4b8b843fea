package embedstack

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// minLevelHandler drops records below min before they reach the wrapped
// handler, so the embedded servers stay quiet whatever level the caller's
// logger is set to.
type minLevelHandler struct {
	min  slog.Leveler
	next slog.Handler
}

func (h minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min.Level() && h.next.Enabled(ctx, l)
}

func (h minLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.min.Level() {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevelHandler{min: h.min, next: h.next.WithAttrs(attrs)}
}

func (h minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{min: h.min, next: h.next.WithGroup(name)}
}

// quiet returns a logger that passes only records at or above min to l.
func quiet(l *slog.Logger, min slog.Leveler, component string) *slog.Logger {
	return slog.New(minLevelHandler{min: min, next: l.Handler()}).With("component", component)
}

// serverLogger adapts a slog.Logger to the Temporal server's logger
// interface.
//
// The server relies on Fatal and Panic not returning (its default logger
// exits): after "Failed to start gRPC listener" it carries on with a nil
// listener. So both log as errors and then panic with the message and tags,
// which at least names the cause; DPanic only logs.
type serverLogger struct {
	l *slog.Logger
}

var (
	_ serverlog.Logger     = serverLogger{}
	_ serverlog.WithLogger = serverLogger{}
)

func (s serverLogger) Debug(msg string, tags ...tag.Tag) { s.log(slog.LevelDebug, msg, tags) }
func (s serverLogger) Info(msg string, tags ...tag.Tag)  { s.log(slog.LevelInfo, msg, tags) }
func (s serverLogger) Warn(msg string, tags ...tag.Tag)  { s.log(slog.LevelWarn, msg, tags) }
func (s serverLogger) Error(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }
func (s serverLogger) Panic(msg string, tags ...tag.Tag)  { s.die(msg, tags) }
func (s serverLogger) Fatal(msg string, tags ...tag.Tag)  { s.die(msg, tags) }

func (s serverLogger) die(msg string, tags []tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	var b strings.Builder
	b.WriteString(msg)
	for _, t := range tags {
		fmt.Fprintf(&b, " %s=%v", t.Key(), t.Value())
	}
	panic(serverFatal(b.String()))
}

// serverFatal is the panic value of a fatal server log record. guard turns it
// back into an error when it happens in the caller's goroutine, as it does
// for a port taken while the server starts.
type serverFatal string

func (f serverFatal) Error() string { return string(f) }

// guard runs f and returns a serverFatal panic raised in this goroutine as an
// error. Other panics propagate.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			sf, ok := r.(serverFatal)
			if !ok {
				panic(r)
			}
			err = sf
		}
	}()
	return f()
}

// With returns a logger that adds tags to every record.
func (s serverLogger) With(tags ...tag.Tag) serverlog.Logger {
	return serverLogger{l: slog.New(s.l.Handler().WithAttrs(tagAttrs(tags)))}
}

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	s.l.LogAttrs(ctx, level, msg, tagAttrs(tags)...)
}

func tagAttrs(tags []tag.Tag) []slog.Attr {
	attrs := make([]slog.Attr, 0, len(tags))
	for _, t := range tags {
		attrs = append(attrs, slog.Any(t.Key(), t.Value()))
	}
	return attrs
}
