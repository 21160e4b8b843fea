package clientconf

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/internal/telemetry"
)

// Dial connects a Temporal client with t's connection, logging through
// logger (the SDK's own lines at the level logger allows) and the codec of
// keys. The client, and every worker created from it, carries the SDK's
// OpenTelemetry tracing interceptor (queries are not traced) and reports
// the SDK's metrics. With keys it encrypts every payload it writes and the
// message and stack trace of every failure; search attributes stay
// plaintext, as Temporal indexes them. The memagent worker dials through
// it too, so that a client and a worker with the same settings agree.
func Dial(ctx context.Context, t Temporal, keys Converters, logger *slog.Logger) (client.Client, error) {
	if logger == nil {
		logger = slog.Default()
	}
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: otel.GetTracerProvider().Tracer(telemetry.TemporalMeterName),
		// The CLI polls the progress query every few seconds: a span each
		// would bury a long run's trace.
		DisableQueryTracing: true,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing: %w", err)
	}
	conn, creds, err := t.TemporalConnection()
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, client.Options{
		HeadersProvider:   t.TemporalHeaders(),
		HostPort:          t.TemporalAddress,
		Namespace:         t.TemporalNamespace,
		Identity:          t.ClientIdentity,
		ConnectionOptions: conn,
		Credentials:       creds,
		Logger:            NewTemporalLogger(logger),
		Interceptors:      []interceptor.ClientInterceptor{tracing},
		DataConverter:     keys.Data,
		FailureConverter:  keys.Failure,
		MetricsHandler: temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
			Meter:                otel.GetMeterProvider().Meter(telemetry.TemporalMeterName),
			UseMonotonicCounters: true,
			// The default panics.
			OnError: func(err error) { logger.Warn("temporal sdk metric", "err", err) },
		}),
	})
	if err != nil {
		if t.TemporalAddress == devaddr.TemporalAddress {
			return nil, fmt.Errorf("connect to Temporal at %s: %w (is the dev stack up? start it with `go run ./devstack`, or set TEMPORAL_ADDRESS)", t.TemporalAddress, err)
		}
		return nil, fmt.Errorf("connect to Temporal at %s (TEMPORAL_ADDRESS): %w: check that the server is up and reachable from here", t.TemporalAddress, err)
	}
	return c, nil
}

// Converters are a client's data and failure converters: both nil for
// the SDK's defaults.
type Converters struct {
	Data    converter.DataConverter
	Failure converter.FailureConverter
}

// ConvertersOf is the SDK's defaults without a codec, else both wrapped in
// it. Failures are encoded too, since their messages may quote what a
// model said about a document.
func ConvertersOf(c converter.PayloadCodec) Converters {
	if c == nil {
		return Converters{}
	}
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
	fc := temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          dc,
		EncodeCommonAttributes: true,
	})
	return Converters{Data: dc, Failure: fc}
}

// Converters are the converters of c's codec keys.
func (c Config) Converters() (Converters, error) {
	k, err := c.Codec()
	if err != nil || k == nil {
		return Converters{}, err
	}
	return ConvertersOf(k), nil
}

// Dial connects a Temporal client with c's connection and codec.
func (c Config) Dial(ctx context.Context, logger *slog.Logger) (client.Client, error) {
	conv, err := c.Converters()
	if err != nil {
		return nil, err
	}
	return Dial(ctx, c.Temporal, conv, logger)
}
