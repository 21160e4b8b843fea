// Package simulator is an OpenAI-compatible HTTP server that stands in for a
// pool of GPUs serving a MemAgent model, for the quick start, the
// integration tests, local development where no GPU exists, and capacity
// planning. It is a simulator and is always named as one (model id
// "memagent-simulator"); it does not run or imitate a language model.
//
// It owns a deterministic extractive policy over MemAgent prompts. A prompt
// with a <section> is a memory update: the sentences of the old memory and
// the section that share content words with the <problem> are kept, best
// first, within max_tokens, in their original order. A prompt without one is
// a final answer: the words of the best memory sentence that the question
// does not already contain go inside \boxed{}. It also checks prompt plus
// max_tokens against a context length the way vLLM does, and records each
// call (with a hash of the chunk, not the chunk) for tests.
//
// Around the policy it models the capacity of a GPU pool in one of two
// modes. In the default one, Replicas × Slots concurrent sequences, each
// request holding a slot of the least-loaded replica for a fixed latency
// plus its prompt and completion tokens at per-sequence prefill and decode
// speeds. In CapacityBatch, each replica steps its batch the way a
// continuous-batching server (vLLM) does: a token budget per step with
// chunked prefill, one token per decoding sequence per step, and a step
// time that grows with the batch, so throughput rises with concurrency and
// then flattens; one goroutine per busy replica, none when it is idle.
// Both have a queue in front that may be bounded (503 with Retry-After over
// the bound, as vLLM does): first come, first served, or, with
// SchedulingPriority (vLLM's --scheduling-policy priority), ordered by the
// request's priority field and then arrival, the most urgent waiting
// request preempting the least urgent running one under CapacityBatch when
// the batch is full (as SGLang and vLLM's V0 engine do; vLLM's V1 engine
// preempts only when its KV cache runs out, which this model, counting
// sequences and not cache blocks, does not have). And
// faults injected at seeded
// rates (429, 500, 503, stalls, truncated bodies and context overflows, in
// the nested OpenAI and the flat SGLang error shape).
// It serves POST /v1/chat/completions, GET /v1/models, GET /health, POST
// /tokenize and GET /metrics (Prometheus text), and the same numbers as
// Stats for tests. Faults and the capacity model never change what a
// successful call answers: that depends on the request content alone.
//
// It must never be presented as a model, never log prompt, memory or
// document text above debug level, and never keep chunk text.
package simulator
