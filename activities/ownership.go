package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
)

// conditionalStore is an ObjectStore that can write an object only if its
// key is free (S3's If-None-Match: *). s3store.Store is one; a store
// without it falls back to a check and a write, which a race can beat.
type conditionalStore interface {
	PutIfAbsent(ctx context.Context, loc s3store.Location, data []byte, contentType string) (bool, error)
}

// OwnerObject is the object, under a caller's output prefix, that names the
// workflow the prefix belongs to.
const OwnerObject = "owner.json"

// prefixOwner is the content of OwnerObject: the workflow id and the first
// run of the chain that claimed the prefix. A workflow id can be used
// again once its run closed; the first run id tells a later workflow of
// the same id from the one that claimed.
type prefixOwner struct {
	WorkflowID string `json:"workflow_id"`
	FirstRunID string `json:"first_run_id,omitempty"`
}

func (a *Activities) readPrefixes() []string {
	if len(a.ReadPrefixes) > 0 {
		return a.ReadPrefixes
	}
	return []string{"s3://" + a.Bucket + "/"}
}

func (a *Activities) writePrefixes() []string {
	if len(a.WritePrefixes) > 0 {
		return a.WritePrefixes
	}
	return []string{"s3://" + a.Bucket + "/"}
}

func forbidden(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), api.ErrForbidden, nil)
}

func under(uri string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(uri, p) && (strings.HasSuffix(p, "/") || len(uri) == len(p) || uri[len(p)] == '/') {
			return true
		}
	}
	return false
}

// allowRead fails as memagent.Forbidden when field's URI is outside the
// prefixes this worker may read, or in one of the areas where runs keep
// their outputs (which are never documents or manifests: one caller's
// run must not quote another's results), or is not a plain S3 key.
func (a *Activities) allowRead(field, uri string) error {
	if _, err := s3store.ParseURI(uri); err != nil {
		return badInput(fmt.Errorf("%s: %w", field, err))
	}
	if a.inOutputArea(uri) {
		return forbidden("%s %s is inside s3://%s/%s, where runs keep their outputs: outputs are not read as documents or manifests; copy what you need elsewhere",
			field, uri, a.Bucket, a.topArea(uri))
	}
	if under(uri, a.readPrefixes()) {
		return nil
	}
	return forbidden("%s %s is outside what this worker may read (%s): copy it there, or add its prefix to the worker's MEMAGENT_READ_PREFIXES",
		field, uri, strings.Join(a.readPrefixes(), ", "))
}

// allowWrite fails as memagent.Forbidden when field's prefix is outside the
// prefixes this worker may write, or is not a plain S3 key.
func (a *Activities) allowWrite(field, prefix string) error {
	if _, err := s3store.ParseURI(prefix); err != nil {
		return badInput(fmt.Errorf("%s: %w", field, err))
	}
	if under(prefix, a.writePrefixes()) {
		return nil
	}
	return forbidden("%s %s is outside where this worker may write (%s): choose a prefix there, or add it to the worker's MEMAGENT_WRITE_PREFIXES",
		field, prefix, strings.Join(a.writePrefixes(), ", "))
}

// claim says who claims a prefix: the workflow, the first run of its
// chain, and whether it is a batch's child (the only runs that write into
// the shared answer cache; the workflow knows it from Temporal, never
// from its input).
type claim struct {
	WorkflowID string
	FirstRunID string
	BatchChild bool
}

// claimPrefix makes prefix (a caller's output prefix, ending in '/') the
// workflow's: it writes OwnerObject if the prefix has none, and fails as
// memagent.Forbidden if another workflow's outputs are there or above it
// (a claim covers every prefix inside it). The same workflow chain may
// claim it again (retries, resets); a later workflow of the same id may
// not. A batch's child writes into the answer cache without a claim: it is
// shared, and results there are written once (putOnce) and checked before
// reuse.
func (a *Activities) claimPrefix(ctx context.Context, field, prefix string, c claim) error {
	if err := a.allowWrite(field, prefix); err != nil {
		return err
	}
	if wf := workflowID(ctx); wf != "" && wf != c.WorkflowID {
		return forbidden("%s %s: the claim names workflow %q, the activity runs for %q", field, prefix, c.WorkflowID, wf)
	}
	if strings.HasPrefix(prefix, a.answersPrefix()) && c.BatchChild {
		return nil
	}
	if a.areaOf(prefix) != nil {
		return forbidden("%s %s is inside s3://%s/%s, which the worker keeps for itself: choose a prefix outside it, or leave %s unset",
			field, prefix, a.Bucket, a.topArea(prefix), field)
	}
	loc, err := s3store.ParseURI(prefix + OwnerObject)
	if err != nil {
		return badInput(fmt.Errorf("%s: %w", field, err))
	}
	// An owner above the prefix covers it.
	if up := ancestors(strings.TrimSuffix(loc.Key, OwnerObject)); len(up) > 1 {
		parent := "s3://" + loc.Bucket + "/" + up[1]
		owner, err := a.owners.nearest(ctx, a.Store, parent)
		if err != nil {
			return fmt.Errorf("check the owners above %s: %w", prefix, err)
		}
		if owner.WorkflowID != "" && owner.WorkflowID != c.WorkflowID {
			return forbidden("%s %s is inside a prefix that holds the outputs of another workflow (%s): choose a prefix outside it, or leave %s unset",
				field, prefix, owner.WorkflowID, field)
		}
	}
	body, _ := json.Marshal(prefixOwner{WorkflowID: c.WorkflowID, FirstRunID: c.FirstRunID})
	created, err := a.putIfAbsent(ctx, loc, body)
	if err != nil || created {
		return err
	}
	data, err := a.Store.ReadAll(ctx, loc)
	if errors.Is(err, s3store.ErrNotFound) {
		// A conditional write of the owner is in progress (S3 answers 409
		// to the loser): retry, and the winner's owner is there.
		return fmt.Errorf("%s %s is being claimed by another run at this moment: retrying", field, prefix)
	}
	if err != nil {
		return storeError(err, loc.String())
	}
	var owner prefixOwner
	if json.Unmarshal(data, &owner) == nil && owner.WorkflowID == c.WorkflowID &&
		(owner.FirstRunID == "" || c.FirstRunID == "" || owner.FirstRunID == c.FirstRunID) {
		return nil
	}
	if owner.WorkflowID == c.WorkflowID {
		return forbidden("%s %s holds the outputs of an earlier workflow with the same id (first run %s): choose an empty prefix, or leave %s unset for one of the run's own",
			field, prefix, owner.FirstRunID, field)
	}
	return forbidden("%s %s holds the outputs of another workflow (%s): choose an empty prefix, or leave %s unset for one of the run's own",
		field, prefix, owner.WorkflowID, field)
}

// heldByOtherRun reports whether loc holds an output that a run other than
// runID wrote: its "run_id" differs, or it has none. A missing object is
// held by no run.
func (a *Activities) heldByOtherRun(ctx context.Context, loc s3store.Location, runID string) (bool, error) {
	data, err := a.Store.ReadAll(ctx, loc)
	if errors.Is(err, s3store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", loc, err)
	}
	var prev struct {
		RunID string `json:"run_id"`
	}
	return json.Unmarshal(data, &prev) != nil || prev.RunID != runID, nil
}

// answersPrefix is where BatchQA keeps the answers later batches reuse.
func (a *Activities) answersPrefix() string { return "s3://" + a.Bucket + "/answers/" }

func (a *Activities) putIfAbsent(ctx context.Context, loc s3store.Location, data []byte) (bool, error) {
	if cs, ok := a.Store.(conditionalStore); ok {
		return cs.PutIfAbsent(ctx, loc, data, "application/json")
	}
	if _, err := a.Store.Head(ctx, loc); err == nil {
		return false, nil
	} else if !errors.Is(err, s3store.ErrNotFound) {
		return false, err
	}
	return true, a.Store.Put(ctx, loc, data, "application/json")
}

// putOnce writes an output that must never replace another run's (a
// result, a report) as JSON: at loc if the key is free or holds this run's
// own earlier write (a retried activity), else under runs/<runID>/ beside
// it. render gives the content for where it lands (outputs name their own
// location). It returns that location.
func (a *Activities) putOnce(ctx context.Context, loc s3store.Location, runID string, render func(s3store.Location) any) (s3store.Location, error) {
	data, err := json.MarshalIndent(render(loc), "", "  ")
	if err != nil {
		return loc, err
	}
	created, err := a.putIfAbsent(ctx, loc, data)
	if err != nil || created {
		return loc, err
	}
	other, err := a.heldByOtherRun(ctx, loc, runID)
	if err != nil {
		return loc, err
	}
	if !other {
		// This run's own earlier write (or a key emptied since).
		return loc, a.Store.Put(ctx, loc, data, "application/json")
	}
	dir, name := "", loc.Key
	if i := strings.LastIndex(loc.Key, "/"); i >= 0 {
		dir, name = loc.Key[:i+1], loc.Key[i+1:]
	}
	alt := s3store.Location{Bucket: loc.Bucket, Key: dir + "runs/" + runID + "/" + name}
	return alt, a.putJSON(ctx, alt, render(alt))
}
