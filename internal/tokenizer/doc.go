// Package tokenizer provides the offline tokenizers used to plan chunks,
// with their vocabularies embedded in the binary:
//
//   - cl100k_base ([CL100K], the default): OpenAI's byte-level BPE,
//     implemented by github.com/pkoukk/tiktoken-go with the vocabulary from
//     github.com/pkoukk/tiktoken-go-loader.
//   - o200k_base ([O200K], also "o200k"): the encoding of OpenAI's gpt-4o,
//     gpt-4.1, gpt-5 and o-series models, from the same two modules; the
//     embedded ranks are checked against OpenAI's published SHA-256 when
//     loaded. [ForModel] names the encoding of an OpenAI model.
//   - qwen2.5 ([Qwen], also "qwen" and "qwen3"): the exact tokenizer of the
//     Qwen2.5 and Qwen3 models: NFC normalisation, then a byte-level BPE
//     of 151,643 tokens with cl100k's split pattern except that numbers are
//     split into single digits. The vocabulary (qwen/, Apache-2.0, see
//     qwen/README.md) is checked against a SHA-256 when loaded, and the
//     encoder is tiktoken-go's, built with its exported constructors.
//     genqwen.sh regenerates the vocabulary and the golden test data.
//
// The ranks and the split patterns are tiktoken-go's, but valid UTF-8 is
// not encoded by tiktoken-go: its pre-tokenizer, the backtracking regexp2,
// and its byte-pair merge allocated per piece and made tokenizing the
// largest part of a worker's CPU per chunk update. split.go cuts text into
// exactly the pieces regexp2 finds with each of the three patterns, and
// bpe.go merges them as tiktoken-go does without allocating; the tests
// (split_test.go) hold both to regexp2 and tiktoken-go, which remain the
// reference, and tiktoken-go still encodes text that is not valid UTF-8.
//
// It owns loading each vocabulary once per process and turning text into
// token byte lengths for [memagent.PlanChunks]. Document text is always
// encoded as ordinary text: a document containing "<|endoftext|>" or
// "<|im_end|>" gets the plain tokens of those characters, never the special
// token.
//
// Token lengths always sum to the length of the text given, even when
// normalisation changes it (decomposed accents, for instance): tokens are
// those of the normalised text, and their boundaries are carried back onto
// the original bytes segment by segment, exactly where the text did not
// change and proportionally inside a segment that did. Count is always the
// number of tokens of the normalised text.
//
// It must never download anything, change process-global settings of the
// tiktoken library, or log text. Counts from cl100k are an approximation of
// the serving model's own tokenizer; the Qwen and o200k tokenizers match
// independent implementations on the golden strings in testdata/. Known
// limits of the Qwen tokenizer: character classes and NFC follow Go's
// Unicode 15.0 tables, so characters assigned later may tokenize
// differently, and golang.org/x/text stops reordering combining marks after
// 30 in a row, so such runs in non-canonical order may too.
package tokenizer
