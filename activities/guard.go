package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// Every activity checks the locations it reads and writes itself, whatever
// the workflow handed it: the workflows derive them from checked input, and
// these checks make sure a mistake there (or an input that slipped past
// them) still cannot read or write outside what the operator allowed or
// into another run's outputs. A failed check is memagent.Forbidden or
// memagent.BadInput, never retried.

// maxChunkBytes bounds one chunk's byte range: a chunk of 5,000 tokens is
// some 20 KB, and no tokenizer makes a token of more than a few hundred
// bytes; a larger range is a forged index.
const maxChunkBytes = 64 << 20

// derivedDocument reports whether uri is text the worker derived from a
// document it was allowed to read (converted text, a copy with invalid
// UTF-8 replaced): PrepareDocument checked the source.
func (a *Activities) derivedDocument(uri string) bool {
	return strings.HasPrefix(uri, "s3://"+a.Bucket+"/converted/") || strings.HasPrefix(uri, "s3://"+a.Bucket+"/documents/utf8-replaced/")
}

// workflowID is the id of the workflow the activity runs for, or "" outside
// an activity (unit tests that call activities directly).
func workflowID(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	return activity.GetInfo(ctx).WorkflowExecution.ID
}

// runID is the run the activity runs for, or "" outside an activity.
func runID(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	return activity.GetInfo(ctx).WorkflowExecution.RunID
}

// allowChunkRead checks what UpdateMemory and ReviewUpdate read: the index
// (which the caller checked is one this worker wrote, under indexes/ in
// its bucket, before reading it) must describe
// this document version (its key is derived from the document's URI and
// ETag), and the document must be readable by this worker or derived from
// one that is. The range must lie inside the indexed document.
func (a *Activities) allowChunkRead(in actwire.UpdateInput, indexLoc s3store.Location, idx *memagent.ChunkIndex, ch memagent.Chunk) error {
	if err := a.allowIndexedRead(in.Document, in.ETag, in.IndexURI, indexLoc, idx); err != nil {
		return err
	}
	if ch.Start < 0 || ch.End <= ch.Start || ch.End-ch.Start > maxChunkBytes || (idx.Bytes > 0 && ch.End > idx.Bytes) {
		return badInput(fmt.Errorf("chunk %d's range [%d,%d) is not inside the document (%d bytes) or over %d bytes", in.Chunk, ch.Start, ch.End, idx.Bytes, maxChunkBytes))
	}
	return nil
}

// allowOutput checks a location a run writes (a trace, a result, a grid, a
// batch's work or report object): inside the worker's write prefixes, and
// either in this workflow's own area (runs/, reviews/ or batches/ followed
// by its id), in the answer cache, or under a prefix this workflow claimed
// (the nearest owner.json at or above it names it). Outside an activity
// (unit tests) only the write prefixes are checked.
func (a *Activities) allowOutput(ctx context.Context, field, uri string) error {
	if err := a.allowWrite(field, uri); err != nil {
		return err
	}
	wf := workflowID(ctx)
	if wf == "" {
		return nil
	}
	if ar := a.areaOf(uri); ar != nil && ar.PerWorkflow {
		own := "s3://" + a.Bucket + "/" + ar.Prefix
		if strings.HasPrefix(uri, own+wf+"/") {
			return nil
		}
		return forbidden("%s %s is inside another run's outputs (%s): a run writes only under its own", field, uri, own)
	}
	if strings.HasPrefix(uri, a.answersPrefix()) {
		return nil
	}
	if a.areaOf(uri) != nil {
		return forbidden("%s %s is inside the worker's own area %s: runs never write there", field, uri, a.topArea(uri))
	}
	owner, _, err := a.owners.nearest(ctx, a.Store, uri)
	if err != nil {
		return fmt.Errorf("check the owner of %s: %w", uri, err)
	}
	if owner.none() {
		return forbidden("%s %s is under no prefix that workflow %q claimed", field, uri, wf)
	}
	if owner.ScheduleID != "" || owner.WorkflowID != wf {
		return forbidden("%s %s is under a prefix that workflow %q did not claim: it holds %s", field, uri, wf, owner.describe())
	}
	return nil
}

// ownerCache remembers, per directory, the owner.json found at or above
// it. An owner is never replaced (it is written if absent), and no other
// workflow can claim a prefix inside an owned one (claimPrefix checks
// every ancestor), so an entry never goes stale, with one exception: the
// runs of a schedule claim inside the schedule's prefix. The directories
// below a schedule's claim are therefore not remembered (its own is).
type ownerCache struct {
	mu   sync.Mutex
	dirs map[string]ownedDir
}

// maxOwnerCache bounds the cache; any entry may be dropped.
const maxOwnerCache = 4096

// ownedDir is an owner and the s3:// prefix whose owner.json names it.
type ownedDir struct {
	owner  prefixOwner
	prefix string
}

// nearest returns the owner of the nearest owner.json at or above uri's
// directory, up to the bucket, and the prefix it is at; the zero owner
// when there is none.
func (c *ownerCache) nearest(ctx context.Context, store ObjectStore, uri string) (prefixOwner, string, error) {
	return c.nearestWithin(ctx, store, uri, nil)
}

// nearestWithin is nearest, looking only at the directories within
// accepts (an s3:// prefix ending in '/'): nil accepts all.
func (c *ownerCache) nearestWithin(ctx context.Context, store ObjectStore, uri string, within func(string) bool) (prefixOwner, string, error) {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return prefixOwner{}, "", badInput(err)
	}
	dirs := ancestors(loc.Key)
	var walked []string
	found := ownedDir{}
	for _, d := range dirs {
		if within != nil && !within("s3://"+loc.Bucket+"/"+d) {
			break
		}
		c.mu.Lock()
		o, ok := c.dirs[loc.Bucket+"/"+d]
		c.mu.Unlock()
		if ok {
			found = o
			break
		}
		data, err := store.ReadAll(ctx, s3store.Location{Bucket: loc.Bucket, Key: d + OwnerObject})
		if errors.Is(err, s3store.ErrNotFound) {
			walked = append(walked, d)
			continue
		}
		if err != nil {
			return prefixOwner{}, "", err
		}
		if err := json.Unmarshal(data, &found.owner); err != nil {
			return prefixOwner{}, "", fmt.Errorf("decode %s%s: %w", d, OwnerObject, err)
		}
		if found.owner.none() {
			found.owner.WorkflowID = "?" // not one the worker wrote: nobody's
		}
		found.prefix = "s3://" + loc.Bucket + "/" + d
		walked = append(walked, d)
		break
	}
	if found.owner.none() {
		return found.owner, "", nil // nothing to cache: a claim may still come
	}
	if found.owner.ScheduleID != "" {
		// A run of the schedule may still claim below it: only the
		// schedule's own directory is remembered.
		walked = slices.DeleteFunc(walked, func(d string) bool { return "s3://"+loc.Bucket+"/"+d != found.prefix })
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirs == nil || len(c.dirs) > maxOwnerCache {
		c.dirs = make(map[string]ownedDir)
	}
	for _, d := range walked {
		c.dirs[loc.Bucket+"/"+d] = found
	}
	return found.owner, found.prefix, nil
}

// ancestors lists the directories of key, deepest first: "a/b/c.json"
// gives "a/b/", "a/". The bucket's root is not one: nobody claims a
// whole bucket.
func ancestors(key string) []string {
	var dirs []string
	for i := strings.LastIndex(key, "/"); i > 0; i = strings.LastIndex(key[:i], "/") {
		dirs = append(dirs, key[:i+1])
	}
	return dirs
}

// allowIndexedRead checks a read of document at etag through its index
// (which the caller checked is one this worker wrote): the index must
// describe this document version, and the document must be readable by
// this worker or derived from one that is.
func (a *Activities) allowIndexedRead(document, etag, indexURI string, indexLoc s3store.Location, idx *memagent.ChunkIndex) error {
	if etag == "" {
		return badInput(errors.New("etag is empty: chunks are read from the document version that was indexed"))
	}
	bound := idx.Source == document && idx.SourceETag == etag
	if idx.Source == "" {
		bound = indexLoc.Key == indexKey(document, s3store.ObjectInfo{ETag: etag, Size: idx.Bytes}, idx.Tokenizer, idx.ChunkTokens)
	}
	if !bound {
		return forbidden("index %s does not describe %s at ETag %s", indexURI, document, etag)
	}
	if !a.derivedDocument(document) {
		if err := a.allowRead("document", document); err != nil {
			return err
		}
	}
	return nil
}

// reader is who reads an input: for a run a schedule started, the
// schedule, whose earlier reports its runs compare with.
type reader struct {
	ScheduleID string
}

// allowInput checks a document, a corpus member, a manifest or a report
// to compare with before anything of it is read: allowRead (the read
// prefixes; never in the worker's output areas), and never at or under a
// prefix a caller claimed, which holds that workflow's outputs (traces,
// results, grids, reports): one caller's run must not quote another's. A
// run a schedule started may read the schedule's own reports (its earlier
// runs', each claimed inside the schedule's prefix). The refusal names
// neither the owner nor what lies there.
func (a *Activities) allowInput(ctx context.Context, field, uri string, r reader) error {
	if err := a.allowRead(field, uri); err != nil {
		return err
	}
	// Claims are made only under the write prefixes: an owner.json is
	// looked for there alone (the worker may not even read above a read
	// prefix).
	writable := func(dir string) bool { return under(dir, a.writePrefixes()) }
	owner, at, err := a.owners.nearestWithin(ctx, a.Store, uri, writable)
	if err != nil {
		return fmt.Errorf("check the owner of %s: %w", uri, err)
	}
	if owner.none() {
		return nil
	}
	if r.ScheduleID != "" && (owner.ScheduleID == r.ScheduleID || owner.ScheduledBy == r.ScheduleID) {
		// The schedule's own claim, or that of a run it started.
		return nil
	}
	return forbidden("%s %s is under %s, where another workflow keeps its outputs: outputs are not read as documents, manifests or reports; copy what you need elsewhere",
		field, uri, at)
}

// scheduleOfReport is the schedule that started the batch whose own
// claimed report prefix is reportPrefix (its claim records it), "" when
// none did.
func (a *Activities) scheduleOfReport(ctx context.Context, reportPrefix string) (string, error) {
	own, _, err := a.owners.nearest(ctx, a.Store, reportPrefix+"x")
	if err != nil || own.ScheduleID != "" {
		return "", err
	}
	if wf := workflowID(ctx); wf != "" && own.WorkflowID != wf {
		return "", nil
	}
	return own.ScheduledBy, nil
}
