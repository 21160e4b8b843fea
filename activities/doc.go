// Package activities holds memagent's Temporal activities: PrepareDocument
// (stream a document from S3, cut it into token-bounded chunks, store the
// chunk index), UpdateMemory (one chunk's memory rewrite by the model) and
// Answer (the final answer from the memory alone, scored against gold
// answers when given).
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
