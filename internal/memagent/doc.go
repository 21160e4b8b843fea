// Package memagent holds the pure logic of the MemAgent method: prompt
// templates, chunk planning over token offsets, answer extraction and
// answer scoring.
//
// A long document is cut into chunks of at most a fixed number of tokens
// ([PlanChunks]). For each chunk in order a model rewrites a bounded text
// memory from the question, the previous memory (initially [InitialMemory])
// and the chunk ([Templates.RenderUpdate]). After the last chunk the model
// answers from the question and the memory alone ([Templates.RenderFinal]),
// putting its answer inside \boxed{...}, which [ExtractAnswer] pulls out and
// [Score] compares with the reference answers. [ScorePaper] scores one
// answer as the MemAgent paper's evaluation scripts do (first gold answer
// only, Python's normalisation to the character, empty strings included),
// for reports that set themselves beside the paper's tables.
//
// # Template placeholders
//
// Templates are plain text with these placeholders, replaced in a single
// pass (text substituted for one placeholder is never scanned again, so a
// chunk that happens to contain "{memory}" is left as it is):
//
//	{question}  the question being answered (update and final templates)
//	{memory}    the memory carried between calls (update and final templates)
//	{chunk}     the text of the current chunk (update template only)
//
// The default templates place the parts inside <problem>, <memory> and
// <section> tags, in that order, as one user message: the published MemAgent
// models were trained on that layout.
//
// # What this package must never do
//
// It performs no I/O other than reading an io.Reader handed to it, makes no
// network calls, knows nothing about Temporal or S3, keeps no global state
// and never logs. Concrete tokenizers live elsewhere and are passed in
// through the [Tokenizer] interface.
package memagent
