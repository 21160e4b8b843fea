package activities

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// The kinds of model call, as inference.Request.Kind labels them in
// metrics and spans.
const (
	callUpdate = "update"
	callFinal  = "final"
)

// Metrics counts the activities' work through OpenTelemetry: chunks
// processed and the size of the memory after each. A nil *Metrics records
// nothing. Token counts, model latency and errors are the inference pool's.
type Metrics struct {
	chunks    metric.Int64Counter
	memTokens metric.Int64Histogram
	memBytes  metric.Int64Histogram
}

// NewMetrics creates the instruments on mp's meter.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	m := mp.Meter("github.com/memagent/memagent/activities")
	var errs [3]error
	var out Metrics
	out.chunks, errs[0] = m.Int64Counter("memagent.chunks.processed", metric.WithUnit("{chunk}"),
		metric.WithDescription("Chunks whose memory update completed, by model."))
	out.memTokens, errs[1] = m.Int64Histogram("memagent.memory.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Size of the memory after a chunk, in tokens of the run's tokenizer."),
		metric.WithExplicitBucketBoundaries(32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 4096))
	out.memBytes, errs[2] = m.Int64Histogram("memagent.memory.size", metric.WithUnit("By"),
		metric.WithDescription("Size of the memory after a chunk, in bytes."),
		metric.WithExplicitBucketBoundaries(128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("activities: metrics: %w", err)
	}
	return &out, nil
}

// traceChunk puts the chunk's position on the activity's span, so that a
// trace shows which chunk an attempt worked on.
func traceChunk(ctx context.Context, chunk, chunks int) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("memagent.chunk", chunk), attribute.Int("memagent.chunks", chunks))
}

// recordChunk counts a completed memory update. Only sizes are recorded,
// never the memory.
func (a *Activities) recordChunk(ctx context.Context, opts ModelOptions, memory string) {
	m := a.Metrics
	if m == nil {
		return
	}
	attrs := metric.WithAttributes(attribute.String("model", a.modelName(opts)))
	m.chunks.Add(ctx, 1, attrs)
	m.memBytes.Record(ctx, int64(len(memory)), attrs)
	if tok, err := a.Tokenizers(opts.Tokenizer); err == nil {
		m.memTokens.Record(ctx, int64(tok.Count(memory)), attrs)
	}
}
