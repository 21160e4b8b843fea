// Package docs holds the project's documentation (the Markdown files next to
// this one) and the tests that run its examples against the embedded stack,
// build its Go blocks from Example functions, and compare its lists with the
// code (MemagentStatus values, the chunk-count interval), so that what the
// docs show is what runs.
//
// It has no code of its own, and must never have any: nothing imports it.
package docs
