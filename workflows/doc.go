// Package workflows holds memagent's Temporal workflows. DocumentQA answers
// one question about one document: convert it if it is not text, prepare
// the chunk index, one durable UpdateMemory activity per chunk carrying the
// memory forward as workflow state, then one Answer activity.
// ReviewDocument asks many questions of one document, reading each chunk
// once for all of them, and writes a grid. BatchQA runs a manifest of
// questions as DocumentQA children in a sliding window, reusing earlier
// answers, and writes a report.
//
// Each takes one JSON object, decoded strictly at the boundary
// (boundary.go); a run hands its progress to the next after
// continue-as-new in a state that only the workflow writes, and refuses
// one a caller sent (carry.go).
//
// Everything here is deterministic workflow code: no time.Now, math/rand,
// os, net, bare goroutines, map iteration that shapes output, or fmt.Print.
// Chunk text never enters history; only S3 locations, byte ranges and the
// bounded memory do. The workflow continues-as-new, carrying cursor and
// memory, so history stays bounded at any document length.
//
// Every workflow is Pinned under Worker Versioning and moves to the
// target build at its continue-as-new (versioning.go): the state a run
// hands over is then read by the next build, so it changes additively.
//
// The package also owns the one list of DocumentQA's search attributes
// (SearchAttributes), which `starter setup` and the dev stack register and
// the workflow upserts. A change to the workflow's commands, such as those
// upserts, is guarded by workflow.GetVersion, and the replay test keeps the
// histories of every version: VERSIONS.md lists each change id, what it
// gates and the generation of histories that records it.
package workflows
