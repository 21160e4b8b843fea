// Package embedstack runs the embedded development stack in the current process:
// a real Temporal server (frontend, history, matching and worker services on
// loopback, SQLite persistence and SQL visibility), the Temporal Web UI, and an
// S3-compatible server.
//
// It owns the wiring of those three servers, their ports, the SQLite file and
// the object files under Options.DataDir, and the fixed development
// credentials of the S3 server. It backs the quick start, the integration tests
// and local development.
//
// It must never be used in production, never bind anything but the host it is
// given (loopback by default), never change the process's working directory or
// global state (no init, no globals, no flags), and never log at info level or
// above on behalf of the embedded servers except their warnings and errors.
//
// Several stacks may run in one process as long as their ports differ (the
// tests run two side by side). The Temporal server binds its listeners while
// it is being built and logs a taken port as fatal; Start turns that into an
// error (retrying on new ports with FreePort), but listeners the server had
// already bound stay open until the process exits. The SQLite plugin of the Temporal server keeps every database it has opened in a
// process-wide pool that it never closes, so each in-memory stack leaves its
// (small) database behind until the process exits, and a file database stays
// open after Close; restarting a stack on the same file in the same process
// reuses that connection.
package embedstack
