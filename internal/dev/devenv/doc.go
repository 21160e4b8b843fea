// Package devenv starts memagent's development environment in one
// process: the embedded dev stack (a real Temporal server with its Web UI,
// an S3-compatible server, both on loopback) with memagent's search
// attributes registered, and, unless a model server is configured, the
// inference simulator. The devstack command, its quick start (`devstack demo`)
// and the integration tests use it.
//
// It links the whole Temporal server: no production package (the plugin,
// the worker, the client) may import it.
package devenv
