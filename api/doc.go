// Package api is memagent's wire contract: what another program needs to
// start, follow and read memagent's workflows, and nothing that runs them.
//
// It holds the registered names (workflows, the progress query, the default
// task queue, the search attributes), the inputs with their Validate and
// defaults, the results, progress and report shapes, the status values, the
// failure types (ApplicationError types such as memagent.BadInput) and the
// start options a client derives from an input (StartPriority,
// StartSearchAttributes). Every type is JSON on the wire and changes only by
// addition; docs/schemas is generated from these types.
//
// It must never depend on memagent's implementation: its imports are the
// standard library, the Temporal SDK's temporal package (priorities and
// search attribute keys) and memagent's pure contract checker. A service
// that only starts runs (package memclient, or any Go program) links this and
// not the worker's model client, PDF converter or tokenizers.
// Continue-as-new state is internal to the workflows and is not here.
package api
