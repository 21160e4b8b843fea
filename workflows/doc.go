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
package workflows
