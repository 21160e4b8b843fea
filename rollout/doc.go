// Package rollout exports the rollouts of a BatchQA run as training data
// for reinforcement learning of a MemAgent model: JSON Lines with one
// record per model turn (each memory update, then the final answer) of
// every answered sample, carrying the exact chat messages sent, the
// completion as the worker kept it, a loss mask (1 for a memory update, 0 for the final
// answer) and the sample's reward spread evenly over its turns.
//
// The completion is the model's text after the worker's inference client
// removed its reasoning (a <think> block; a separate reasoning_content is
// never read): for reinforcement learning of a thinking model, whose
// rollouts need the reasoning too, these records are not enough.
//
// It reads what the batch left in S3 (report.json, results.jsonl, each
// sample's result.json and chunk traces, and the documents' chunk bytes)
// and rebuilds each prompt from the prompt templates, the question, the
// memory before the turn and the chunk, then proves it equal to the prompt
// sent with the digest the worker stored beside the turn. A sample's
// turns are found through its own result (result_uri, then the
// trace_prefix it names), never by where a batch keeps its answers. A
// sample whose turns were not all taken in its own run (a reused answer,
// a run started from a memory checkpoint, a trace gone) is left out and
// listed, never an error: the export of the others goes on. It must never
// start a run, call a model or write to S3: the one output is the writer
// it is given.
package rollout
