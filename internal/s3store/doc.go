// Package s3store wraps one external dependency: an S3-compatible object
// store reached through aws-sdk-go-v2. It owns addressing (s3:// URIs,
// path-style endpoints), ranged reads, streaming uploads and the mapping of
// the SDK's "not found" and "precondition failed" errors onto sentinel
// errors the rest of the project can test with errors.Is.
//
// With a TracerProvider, each request made under a span gets an HTTP client
// span named after its S3 operation.
//
// It must never log or wrap object contents into errors or spans, and it never
// retries on its own beyond what the SDK does for a single request:
// Temporal owns retries.
package s3store
