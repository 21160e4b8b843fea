// Package workerapp is the process around memagent's worker: the binaries
// (worker, devstack, starter, bench, chaos) share it.
//
// Serve runs a worker until its context ends: it validates the
// configuration, sets up telemetry (telemetry.Setup), serves /metrics,
// /healthz, /readyz and, with codec keys, /codec (Handler, Probe), then
// Start hosts the plugin on a Temporal worker and the worker stops letting
// in-flight activities finish. The plugin, not this package, builds the S3
// store, the model pool, the tokenizers and the activities, and registers
// them with the workflows. Dial connects a Temporal client with the SDK's
// OpenTelemetry tracing and metrics and, with codec keys, the encrypting
// converters (Converters). NewWorker registers activities a test or
// benchmark built itself; Main, RegisterFlags and ListRuns serve the
// commands.
//
// It is wiring only: no MemAgent logic lives here, and it brings up no dev
// stack (internal/dev/devenv does). It validates configuration at start,
// never mid-run.
//
// It is importable so that memagent's own commands and tests share it;
// other programs host the plugin themselves (plugin.New in their worker's
// Options): this package makes no compatibility promise.
package workerapp
