// Package deploy holds what runs memagent outside Go: the OpenTelemetry
// collector's configuration for docker-compose.yml, the compose checker
// (composecheck/, a module of its own so the compose loader stays out of
// memagent's go.mod), and the tests of both and of the worker's graceful
// shutdown as a container runtime drives it (SIGTERM, then a grace period).
// It has no Go code of its own.
package deploy
