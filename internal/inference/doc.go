// Package inference is the client for the model server: any service that
// speaks the OpenAI chat-completions API (vLLM, SGLang, a hosted endpoint, or
// the project's simulator).
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
// It must never retry (Temporal owns retries, and a hidden retry loop would
// multiply attempts), never wait without a deadline (every request has a
// timeout, and waiting for a pool slot ends with the caller's context), and
// never put prompt or completion text or the API key into an error message,
// a log, a span or a metric.
package inference
