// Package simulator is an OpenAI-compatible HTTP server that stands in for a
// pool of GPUs serving a MemAgent model, for the quick start, the
// integration tests and local development where no GPU exists. It is a
// simulator and is always named as one (model id "memagent-simulator"); it
// does not run or imitate a language model.
//
// It owns a deterministic extractive policy over MemAgent prompts. A prompt
// with a <section> is a memory update: the sentences of the old memory and
// the section that share content words with the <problem> are kept, best
// first, within max_tokens, in their original order. A prompt without one is
// a final answer: the words of the best memory sentence that the question
// does not already contain go inside \boxed{}. It also checks prompt plus
// max_tokens against a context length the way vLLM does, adds a fixed
// latency, and records each call (with a hash of the chunk, not the chunk)
// for tests.
//
// It must never be presented as a model, never log prompt, memory or
// document text above debug level, and never keep chunk text.
package simulator
