// Package telemetry sets up OpenTelemetry for a memagent process: a tracer
// provider, a meter provider and a Prometheus handler, configured by the
// standard OTEL_* environment variables.
//
// It owns the exporters and their lifecycle. Traces go to an OTLP endpoint
// only when one is configured (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); without one the tracer provider is a
// no-op and costs nothing. Metrics always feed the Prometheus handler, which
// is pull-based and cheap, and go to OTLP as well when an endpoint is
// configured. [Setup] installs its providers and the W3C trace-context and
// baggage propagator as the OpenTelemetry globals, which is where the
// wiring in worker/workerapp finds them.
//
// It decides nothing about what is measured: the instrumented packages
// (internal/inference, internal/s3store, activities) define their own spans
// and instruments and take providers explicitly. It must never put document
// text, prompts, completions, memories or secrets into a span, an event, a
// metric label or a log, and never block a caller on an export: exports are
// batched in the background and an unreachable collector costs a warning.
package telemetry
