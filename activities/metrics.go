package activities

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/inference"
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
	meter     metric.Meter
	chunks    metric.Int64Counter
	memTokens metric.Int64Histogram
	memBytes  metric.Int64Histogram
	// ocrPages and ocrSeconds count the pages read by OCR and the
	// engine's seconds on them.
	ocrPages   metric.Int64Counter
	ocrSeconds metric.Float64Counter
}

// NewMetrics creates the instruments on mp's meter.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	m := mp.Meter("github.com/memagent/memagent/activities")
	var errs [5]error
	out := Metrics{meter: m}
	out.chunks, errs[0] = m.Int64Counter("memagent.chunks.processed", metric.WithUnit("{chunk}"),
		metric.WithDescription("Chunks whose memory update completed, by model."))
	out.memTokens, errs[1] = m.Int64Histogram("memagent.memory.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Size of the memory after a chunk, in tokens of the run's tokenizer."),
		metric.WithExplicitBucketBoundaries(32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 4096))
	out.memBytes, errs[2] = m.Int64Histogram("memagent.memory.size", metric.WithUnit("By"),
		metric.WithDescription("Size of the memory after a chunk, in bytes."),
		metric.WithExplicitBucketBoundaries(128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768))
	out.ocrPages, errs[3] = m.Int64Counter("memagent.ocr.pages", metric.WithUnit("{page}"),
		metric.WithDescription("Pages of scanned PDFs read by OCR, by outcome (read, blank, failed); reused pages are not counted."))
	out.ocrSeconds, errs[4] = m.Float64Counter("memagent.ocr.duration", metric.WithUnit("s"),
		metric.WithDescription("Seconds the OCR engine ran on the pages it read, by outcome."))
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

// metricModel is the model's metric label: its name when the pool serves
// it, else "other" (a request names its model, and a label per name would
// let callers grow the metrics without bound).
func (a *Activities) metricModel(opts api.ModelOptions) string {
	name := a.modelName(opts)
	if m, ok := a.Model.(interface{ MetricModel(string) string }); ok {
		return m.MetricModel(name)
	}
	if name == a.DefaultModel {
		return name
	}
	return inference.OtherModel
}

// recordChunk counts a completed memory update. Only sizes are recorded,
// never the memory.
func (a *Activities) recordChunk(ctx context.Context, opts api.ModelOptions, memory string) {
	m := a.Metrics
	if m == nil {
		return
	}
	attrs := metric.WithAttributes(attribute.String("model", a.metricModel(opts)))
	m.chunks.Add(ctx, 1, attrs)
	m.memBytes.Record(ctx, int64(len(memory)), attrs)
	if tok, err := a.Tokenizers(opts.Tokenizer); err == nil {
		m.memTokens.Record(ctx, int64(tok.Count(memory)), attrs)
	}
}

// ObserveChunkCache reports c's counters with every collection: reads that
// went to S3, hits, reads shared while in flight, evictions and the bytes
// held. Only counts, never chunk text.
func (m *Metrics) ObserveChunkCache(c *ChunkCache) error {
	if m == nil {
		return nil
	}
	var errs [5]error
	var (
		reads, hits, shared, evictions metric.Int64ObservableCounter
		held                           metric.Int64ObservableGauge
	)
	reads, errs[0] = m.meter.Int64ObservableCounter("memagent.chunk_cache.reads", metric.WithUnit("{read}"),
		metric.WithDescription("Chunk reads that went to S3 through the chunk cache."))
	hits, errs[1] = m.meter.Int64ObservableCounter("memagent.chunk_cache.hits", metric.WithUnit("{read}"),
		metric.WithDescription("Chunk reads answered from the chunk cache."))
	shared, errs[2] = m.meter.Int64ObservableCounter("memagent.chunk_cache.shared", metric.WithUnit("{read}"),
		metric.WithDescription("Chunk reads that waited for the same chunk's S3 read already in flight."))
	evictions, errs[3] = m.meter.Int64ObservableCounter("memagent.chunk_cache.evictions", metric.WithUnit("{chunk}"),
		metric.WithDescription("Chunks dropped from the chunk cache to stay within its size."))
	held, errs[4] = m.meter.Int64ObservableGauge("memagent.chunk_cache.size", metric.WithUnit("By"),
		metric.WithDescription("Bytes of chunks the chunk cache holds."))
	if err := errors.Join(errs[:]...); err != nil {
		return fmt.Errorf("activities: chunk cache metrics: %w", err)
	}
	_, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := c.Stats()
		o.ObserveInt64(reads, s.Reads)
		o.ObserveInt64(hits, s.Hits)
		o.ObserveInt64(shared, s.Shared)
		o.ObserveInt64(evictions, s.Evictions)
		o.ObserveInt64(held, s.Bytes)
		return nil
	}, reads, hits, shared, evictions, held)
	return err
}
