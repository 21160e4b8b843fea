// Package rollout exports the rollouts of a BatchQA run as training data
// for reinforcement learning of a MemAgent model: JSON Lines with one
// record per model turn (each memory update, then the final answer) of
// every answered sample, carrying the exact chat messages sent, the exact
// text returned, a loss mask (1 for a memory update, 0 for the final
// answer) and the sample's reward spread evenly over its turns.
//
// It reads what the batch left in S3 (report.json, results.jsonl, each
// sample's result.json and chunk traces, and the documents' chunk bytes)
// and rebuilds each prompt from the prompt templates, the question, the
// memory before the turn and the chunk, then proves it equal to the prompt
// sent with the digest the worker stored beside the turn. It must never
// start a run, call a model or write to S3: the one output is the writer
// it is given.
package rollout
