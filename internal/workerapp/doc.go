// Package workerapp assembles a memagent worker from a config.Config: the S3
// store, the model client (with the model name and context length resolved
// from the server at start), the tokenizers and templates, the activities and
// workflows registered on a Temporal worker. It also brings up the embedded
// dev stack with the simulator for --dev runs, the demo and the tests.
//
// It hands the OpenTelemetry global providers (installed by
// telemetry.Setup; no-ops otherwise) to the S3 store, the model pool, the
// activities and the Temporal client, whose tracing interceptor carries one
// trace from a starter through every workflow and activity. It serves a
// worker's /metrics, /healthz and /readyz.
//
// It is wiring only: no MemAgent logic lives here. It validates
// configuration at start, never mid-run.
package workerapp
