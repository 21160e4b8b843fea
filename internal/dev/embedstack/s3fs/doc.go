// Package s3fs is a gofakes3.Backend that keeps buckets and objects as plain
// files under one root directory, so that the dev stack's objects survive a
// restart.
//
// Layout under the root:
//
//	<bucket>/bucket.json                        bucket record (name, creation time)
//	<bucket>/objects/<h[:2]>/<h>.json           object record: key, size, MD5, metadata, data file name
//	<bucket>/objects/<h[:2]>/<h>.<random>.data  object contents, byte for byte
//
// where h is the hex SHA-256 of the object key. Keys never become path
// elements, so no key can escape the root, and keys of any length and
// content work. Bucket names are checked against the S3 naming rules before
// they touch the file system.
//
// Writes are atomic: contents go to a new data file, then the object record
// is written to a temporary file and renamed over the old record (the commit
// point); only then is the previous data file removed. Data and temporary
// files that no record names are leftovers of an interrupted write and are
// removed when the backend is opened.
//
// The package owns the files under its root and nothing else. It must never
// be pointed at a directory another process writes to (the object index is
// kept in memory), and it does not implement versioning, tagging or
// multipart storage (gofakes3 assembles multipart uploads in memory and then
// calls PutObject).
package s3fs
