// Package evalgen generates offline evaluation sets in MemAgent's format, in
// the style of the RULER benchmark: needle-in-a-haystack retrieval (one
// needle, several keys, several values, several queries), variable
// tracking, frequent-word extraction and RULER-HQA (HotpotQA questions
// among distractor paragraphs).
//
// A set is a JSON array of [Sample] objects: the document in "context",
// the question in "input", the gold answers in "answers", and the target
// length, task name and actual token count as scalar fields, which BatchQA
// turns into labels so that reports group scores by length.
//
// It owns: sizing each context to its target length with the project's
// tokenizer (within 1%, and usually exactly), placing needles at seeded
// depths, and writing the array as a stream, one object at a time, so a
// set of many multi-million-token samples never sits in memory.
//
// Invariants: output depends only on the [Config] (same configuration, same
// bytes): all randomness comes from PCG generators seeded from Config.Seed
// and the sample's task, length and index, never from the global source or
// the clock, and no map iteration shapes output. Every answer the package
// makes up (values, variables, words) appears verbatim in its context;
// hqa's answers are HotpotQA's own, and its yes/no answers never do.
//
// It must never download anything, log or print document text, or read
// files other than those the caller names (a haystack directory, a
// HotpotQA file).
package evalgen
