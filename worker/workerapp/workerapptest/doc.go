// Package workerapptest starts, for a test, the embedded dev stack with the
// inference simulator and a memagent worker polling task queue "memagent",
// as `devstack` does, on free loopback ports, so that a test can drive it
// from outside Go (curl, a Node.js program) through the environment the dev
// stack prints.
//
// It is for tests only: it never reads the process environment into the
// worker's configuration (the worker runs on config.Default pointed at the
// stack, with no payload encryption, so payloads stay plain JSON) and it
// stops everything it started when the test ends.
package workerapptest
