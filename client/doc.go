// Package client starts DocumentQA runs and waits for them, with typed
// inputs and results, from any Go service holding a Temporal client.
//
//	mc := client.New(temporalClient, client.Options{})
//	res, err := mc.Ask(ctx, workflows.DocumentQAInput{Document: "s3://bucket/doc.txt", Question: "..."})
//
// It owns the workflow id of a request (WorkflowID), which makes the same
// request started twice one run, and the start options every DocumentQA run
// is started with. It must never upload documents, read S3 or call a model:
// the document is already an s3:// URI, and the worker does the rest.
package client
