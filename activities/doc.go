// Package activities holds memagent's Temporal activities. For a question
// (DocumentQA): ConvertDocument (PDF, DOCX or HTML to text and a page map,
// once per object version), PrepareDocument (stream a document from S3,
// cut it into token-bounded chunks, store the chunk index), UpdateMemory
// (one chunk's memory rewrite by the model) and Answer (the final answer
// from the memory alone, scored against gold answers when given); a run
// from the workflow version lean-item on has the steps before its first
// chunk run as one activity, PrepareReading, and the answer and its
// grounding as one, AnswerAndGround (lean.go). For a review (ReviewDocument): ReviewUpdate (UpdateMemory through the chunk
// cache, recording evidence) and WriteReview (grid and report). For a
// batch (BatchQA): ExpandManifest, ResolveBatchPage (with the answer
// cache), WriteBatchResults and WriteBatchReport.
//
// Every activity checks what it reads and writes itself (guard.go), against
// the worker's read and write prefixes and the areas runs own, whatever its
// workflow handed it.
//
// Activities are methods on Activities, which holds the dependencies behind
// small interfaces declared here. They are idempotent: a retried attempt
// rewrites the same S3 objects. Errors are classified once, here: permanent
// failures become non-retryable ApplicationErrors with the constant types
// below; transient ones are returned for Temporal to retry.
//
// This package must never log document text, prompts or memories above
// debug level, never put them in a span or a metric (Metrics records sizes
// only), and never retries on its own.
package activities
