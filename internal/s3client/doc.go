// Package s3client is the S3 a client of memagent's workflows uses: it
// uploads a local document or manifest under the bucket's
// content-addressed keys, and reads what runs wrote (reports, result
// pages, sign-off rows), through aws-sdk-go-v2 alone. It owns s3:// URIs
// (Location, ParseURI), the sentinel errors a missing object or bucket
// maps to, and the words a bucket that cannot be used is refused with
// (BucketError); internal/s3store, the worker's store, shares them.
//
// It must never link what runs work: it is what the starter links instead
// of internal/s3store (tracing, ranged and conditional reads and writes).
package s3client
