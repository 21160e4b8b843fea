// Package tokenizer provides the offline default tokenizer used to plan
// chunks: OpenAI's cl100k_base byte-level BPE, implemented by
// github.com/pkoukk/tiktoken-go with the vocabulary embedded in the binary by
// github.com/pkoukk/tiktoken-go-loader.
//
// It owns loading that vocabulary once per process and turning text into
// token byte lengths for [memagent.PlanChunks]. Document text is always
// encoded as ordinary text: a document containing "<|endoftext|>" gets the
// plain tokens of those characters, never the special token.
//
// It must never download anything, change process-global settings of the
// tiktoken library, or log text. Counts from cl100k are an approximation of
// the serving model's own tokenizer; exact counts come from the model server.
package tokenizer
