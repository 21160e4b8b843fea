package activities

import "strings"

// workerArea is a part of the worker's bucket that is written on the
// worker's own account, never under a caller's claim: the default output
// prefixes of runs, reviews and batches, the shared caches, derived text,
// and the uploads the starter makes.
type workerArea struct {
	// Prefix is the area's key prefix in the worker's bucket, ending in
	// '/'. A key belongs to the area of the longest prefix it starts with.
	Prefix string
	// Input marks the areas a caller may name as a document or manifest:
	// content-addressed uploads and the contexts a batch stored. Every
	// other area holds outputs, which are nobody's inputs.
	Input bool
	// PerWorkflow marks the areas whose next segment is the id of the
	// workflow that writes there: a run writes only under its own.
	PerWorkflow bool
}

// workerAreas is the one list of the worker's areas. The read checks
// (allowRead: outputs are not inputs), the write checks (allowOutput: a
// run writes only its own) and the claim checks (claimPrefix: a caller's
// prefix is never inside one) all use it, so an area cannot be protected
// against one and forgotten by another. TestWorkerAreasCoverEveryWrite
// fails when the worker writes a key outside them, and
// TestBoundaryTable when one is dropped.
var workerAreas = []workerArea{
	// runs/<workflow id>/<first run id>/: chunks/<n>.json, result.json (a DocumentQA without output_prefix)
	{Prefix: "runs/", PerWorkflow: true},
	// reviews/<workflow id>/<first run id>/: grid.json, grid.csv, report.html, questions/… (a review without output_prefix)
	{Prefix: "reviews/", PerWorkflow: true},
	// batches/<workflow id>/: report.json, results.jsonl, work/<run>/… (a batch without report_prefix)
	{Prefix: "batches/", PerWorkflow: true},
	// answers/<item key>/: result.json, chunks/<n>.json (the batches' answer cache)
	{Prefix: "answers/"},
	// indexes/<document version>/<tokenizer>-<chunk tokens>.json (chunk indexes)
	{Prefix: "indexes/"},
	// converted/<converter>/<document version>/: text.txt, pages.json; converted/corpora/<hash>/: text.txt, corpus.json
	{Prefix: "converted/"},
	// checkpoints/<key>/<chain>.json (memory checkpoints)
	{Prefix: checkpointArea},
	// guards/<hash>.json (conversions and indexings in progress)
	{Prefix: guardsArea},
	// documents/utf8-replaced/<document version>.txt (a document with its invalid UTF-8 replaced)
	{Prefix: "documents/utf8-replaced/"},
	// documents/sha256/<hex>/<name> (the starter's uploads)
	{Prefix: "documents/", Input: true},
	// manifests/sha256/<hex>/<name> (the starter's uploads)
	{Prefix: "manifests/", Input: true},
	// contexts/sha256/<hex>.txt (the contexts of a MemAgent manifest)
	{Prefix: "contexts/", Input: true},
}

// areaOf returns the worker's area uri is in, or nil when it is in none
// (another bucket, or a caller's prefix in the worker's bucket).
func (a *Activities) areaOf(uri string) *workerArea {
	rest, ok := strings.CutPrefix(uri, "s3://"+a.Bucket+"/")
	if !ok || a.Bucket == "" {
		return nil
	}
	var best *workerArea
	for i := range workerAreas {
		if ar := &workerAreas[i]; strings.HasPrefix(rest, ar.Prefix) && (best == nil || len(ar.Prefix) > len(best.Prefix)) {
			best = ar
		}
	}
	return best
}

// inOutputArea reports whether uri is in one of the worker's areas that
// hold outputs: never read as a caller's document or manifest.
func (a *Activities) inOutputArea(uri string) bool {
	ar := a.areaOf(uri)
	return ar != nil && !ar.Input
}

// topArea is the first segment of uri's key in the worker's bucket, for
// messages ("runs/").
func (a *Activities) topArea(uri string) string {
	rest := strings.TrimPrefix(uri, "s3://"+a.Bucket+"/")
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i+1]
	}
	return rest
}
