// Package workflows holds memagent's Temporal workflows. DocumentQA answers
// one question about one document: prepare the chunk index, one durable
// UpdateMemory activity per chunk carrying the memory forward as workflow
// state, then one Answer activity.
//
// Everything here is deterministic workflow code: no time.Now, math/rand,
// os, net, bare goroutines, map iteration that shapes output, or fmt.Print.
// Chunk text never enters history; only S3 locations, byte ranges and the
// bounded memory do. The workflow continues-as-new, carrying cursor and
// memory, so history stays bounded at any document length.
//
// The package also owns the one list of DocumentQA's search attributes
// (SearchAttributes), which `starter setup` and the dev stack register and
// the workflow upserts. A change to the workflow's commands, such as those
// upserts, is guarded by workflow.GetVersion, and the replay test keeps the
// histories of every version.
package workflows
