// Package memclient starts memagent runs and waits for them, with typed
// inputs, progress and results, from any Go service holding a Temporal
// client:
//
//	mc := memclient.New(temporalClient, memclient.Options{})
//	res, err := mc.Ask(ctx, api.DocumentQAInput{Document: "s3://bucket/doc.txt", Question: "..."})
//	grid, err := mc.Review(ctx, api.ReviewInput{Document: "s3://bucket/doc.txt", Questions: qs})
//	out, err := mc.Batch(ctx, api.BatchQAInput{Manifest: "s3://bucket/items.jsonl", Name: "nightly"})
//
// The inputs and results are the types of package
// github.com/memagent/memagent/api, the contract this package links and
// nothing else; ExampleClient is the same, whole and compiled.
//
// Start, StartReview and StartBatch return a handle (Run, ReviewRun,
// BatchRun) with Get and Progress; GetRun, GetReview and GetBatch return one
// for a run started elsewhere, and WorkflowType tells which of the three a
// workflow id is.
//
// The namespace is not a trust boundary: anyone who can start a workflow
// can run a look-alike of a memagent workflow on a task queue of its own
// under an id memagent expects. Verify checks an execution's workflow
// type, task queue (Options.TaskQueue) and chain; the sign-off functions
// (StartSignOff, SignOffGrid, CellHistory, Decide, SignOff, Reopen) verify
// the sign-off before they read, join, query or send an Update to it, and
// refuse a look-alike with ErrNotMemagent.
//
// It owns the workflow ids: WorkflowID and ReviewWorkflowID derive one from
// a request, so that the same question or review started twice, from a Go
// service or from the starter CLI, is one run; BatchWorkflowID names a
// batch after its name and start time, as a batch is never joined. It also
// owns the start options every run is started with (reuse policy, summary,
// memo, search attributes). It must never upload documents or manifests,
// read S3 or call a model: inputs are already s3:// URIs, and the worker
// does the rest.
package memclient
