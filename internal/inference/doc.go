// Package inference is the client for the model server: any service that
// speaks the OpenAI chat-completions API (vLLM, SGLang, OpenAI itself, or
// the project's simulator), or Azure OpenAI's dialect of it ([APIAzure]:
// deployments in the path, an api-version, an api-key header, and no model
// list, so the context length comes from configuration).
//
// It owns three things: sending one MemAgent prompt as a single user message
// and returning the text with its token usage, listing the served models with
// their context length, and classifying every failure once into an [*Error]
// whose [ErrorKind] tells the caller whether another attempt can succeed.
// [Client] talks to one server; [Pool] spreads requests over several
// replicas of the same model, caps what each has in flight, and takes
// failing ones out of rotation so that the next attempt lands elsewhere.
// Given OpenTelemetry providers, the pool makes each completion a "chat
// <model>" span with the gen_ai attributes and counts tokens, durations,
// errors and slots in its metrics.
//
// It also owns the differences between hosted models that change a
// request: OpenAI's reasoning models (o1, o3, o4, gpt-5) get
// max_completion_tokens and their default sampling, and reasoning text
// (a <think> block; a separate reasoning_content field is never read) is
// cut from every completion, so it never becomes memory or an answer.
// And the server's own queue: a request carries the caller's priority
// (WithPriority, the activity's Temporal priority) in the "priority" body
// field of the scale its endpoint's server uses ([ServerPriority]: vLLM's,
// SGLang's, or none). With [PoolConfig.PriorityHold] the pool also keeps a
// server's steps free of less urgent prompts while an urgent call runs
// there: it starts no new less urgent call at that server (they wait in its
// queue, at most [MaxHold]), and never stops one that has started. With
// [PoolConfig.PriorityReserve], an endpoint whose server orders by priority
// takes an urgent call beyond its cap, a few at most, so that the server
// preempts a less urgent sequence for it; less urgent calls never exceed
// the cap.
//
// It must never retry (Temporal owns retries, and a hidden retry loop would
// multiply attempts), never wait without a deadline (every request has a
// timeout, and waiting for a pool slot ends with the caller's context), and
// never put prompt or completion text or the API key into an error message,
// a log, a span or a metric.
package inference
