// Package report renders what memagent's multi-question workflows hand to
// people and programs: the review grid of ReviewDocument (JSON, CSV and a
// self-contained HTML page) and the evidence rules behind it, and the
// report of BatchQA (its SVG chart, HTML page and CSV cells) with the
// streaming reader of its manifests. It also holds the pure text rules that
// decide which chunks shaped a memory.
//
// It is pure: it reads and writes nothing but the io.Reader and io.Writer
// it is given,
// knows nothing of Temporal or S3, and is deterministic, so workflow code may
// call the evidence functions. It must never import activities or workflows
// (activities imports it), and its HTML must escape every string it did not
// write itself: documents, questions and answers are untrusted text.
package report
