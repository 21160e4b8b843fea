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
	// ScheduleID, on a schedule's report prefix, names the Temporal
	// Schedule it belongs to (WorkflowID is then empty): only the runs
	// that schedule starts claim inside it, and read each other's reports.
	ScheduleID string `json:"schedule_id,omitempty"`
	// ScheduledBy, on a workflow's claim, is the schedule that started
	// the workflow (TemporalScheduledById): the schedule's later runs
	// compare with the reports of its earlier ones.
	ScheduledBy string `json:"scheduled_by,omitempty"`
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

// claim says who claims a prefix: the workflow and the first run of its
// chain. ScheduleID is the Temporal Schedule that started the workflow
// (its TemporalScheduledById, which only Temporal sets), or, with no
// WorkflowID, the schedule itself claiming its report prefix.
type claim struct {
	WorkflowID string
	FirstRunID string
	ScheduleID string
}

// owner is what the claim writes as OwnerObject.
func (c claim) owner() prefixOwner {
	if c.WorkflowID == "" {
		return prefixOwner{ScheduleID: c.ScheduleID}
	}
	return prefixOwner{WorkflowID: c.WorkflowID, FirstRunID: c.FirstRunID, ScheduledBy: c.ScheduleID}
}

// holds reports whether an existing owner is the claim's own: the same
// workflow chain (a retry, a reset), or the same schedule.
func (c claim) holds(o prefixOwner) bool {
	if c.WorkflowID == "" || o.ScheduleID != "" {
		return c.WorkflowID == "" && o.ScheduleID == c.ScheduleID && c.ScheduleID != ""
	}
	return o.WorkflowID == c.WorkflowID && (o.FirstRunID == "" || c.FirstRunID == "" || o.FirstRunID == c.FirstRunID)
}

// mayNestIn reports whether the claim may be made inside a prefix that o
// holds: o is the claim's own workflow chain, or the schedule that started
// the claiming workflow (each run of a schedule claims its dated prefix
// inside the schedule's).
func (c claim) mayNestIn(o prefixOwner) bool {
	if o.ScheduleID != "" {
		return c.WorkflowID != "" && c.ScheduleID == o.ScheduleID
	}
	return c.holds(o)
}

// describe says what kind of owner o is, in messages to a caller, who
// learns no other caller's workflow or schedule id.
func (o prefixOwner) describe() string {
	if o.ScheduleID != "" {
		return "a schedule's reports"
	}
	return "another workflow's outputs"
}

// none reports whether no owner was found.
func (o prefixOwner) none() bool { return o.WorkflowID == "" && o.ScheduleID == "" }

// keyLister is a store that lists keys under a prefix; s3store.Store is
// one. A claim needs it: a prefix is claimed only while nothing lies
// under it.
type keyLister interface {
	List(ctx context.Context, bucket, prefix string, limit int) ([]string, error)
}

// DefaultClaimDepth is how many folders below its claim root a caller's
// prefix must be, at least, when Activities.ClaimDepth is zero: with the
// default roots, s3://<bucket>/team-a/review1/ may be claimed and
// s3://<bucket>/team-a/ (a folder others share) may not.
const DefaultClaimDepth = 2

func (a *Activities) claimRoots() []string {
	if len(a.ClaimRoots) > 0 {
		return a.ClaimRoots
	}
	return a.writePrefixes()
}

// allowClaimRoot checks that prefix lies under one of the claim roots, at
// least ClaimDepth folders below the deepest root it is under.
func (a *Activities) allowClaimRoot(field, prefix string) error {
	depth := a.ClaimDepth
	if depth <= 0 {
		depth = DefaultClaimDepth
	}
	root := ""
	for _, r := range a.claimRoots() {
		if under(prefix, []string{r}) && len(r) > len(root) {
			root = r
		}
	}
	if root == "" {
		return forbidden("%s %s is outside the prefixes under which outputs may be claimed (%s): choose a prefix under one of them, or add it to the worker's MEMAGENT_CLAIM_ROOTS",
			field, prefix, strings.Join(a.claimRoots(), ", "))
	}
	rest := strings.TrimPrefix(prefix, root)
	if root == "s3://" {
		// Any bucket: folders count from the bucket's root.
		_, rest, _ = strings.Cut(rest, "/")
	}
	rest = strings.TrimPrefix(rest, "/")
	if n := strings.Count(rest, "/"); n < depth {
		return forbidden("%s %s is %d folder(s) below %s, and a claimed prefix must be at least %d (MEMAGENT_CLAIM_DEPTH), so that no run takes a folder others share: choose a prefix such as %s<name>/",
			field, prefix, n, root, depth, prefix+strings.Repeat("<folder>/", max(depth-n-1, 0)))
	}
	return nil
}

// claimPrefix makes prefix (a caller's output prefix, ending in '/') the
// workflow's: it writes OwnerObject if the prefix has none, and fails as
// memagent.Forbidden if the prefix is outside the claim roots or too
// shallow (allowClaimRoot), inside one of the worker's areas, inside a
// prefix another workflow holds (a claim covers every prefix inside it),
// or if anything already lies under it (a claim never takes over what
// others wrote or will look for: another claim, a schedule's reports,
// documents). The same workflow chain may claim it again (retries,
// resets); a later workflow of the same id may not. A run a schedule
// started may claim inside the schedule's prefix. No run claims a prefix
// in the answer cache (answers/, a worker area): a batch writes its entries
// itself, from the answers it settled (cacheAnswer).
//
// Two claims racing (one above the other, at the same moment) can both
// pass the checks before either writes; each check and write is one S3
// request, so the window is a few milliseconds.
func (a *Activities) claimPrefix(ctx context.Context, field, prefix string, c claim) error {
	if err := a.checkClaim(ctx, field, prefix, c); err != nil {
		return err
	}
	loc, err := s3store.ParseURI(prefix + OwnerObject)
	if err != nil {
		return badInput(fmt.Errorf("%s: %w", field, err))
	}
	if err := a.checkOwnerAbove(ctx, field, prefix, loc, c); err != nil {
		return err
	}
	// The prefix's own owner: a retry or a reset of the claim's chain.
	switch owner, found, err := a.readOwner(ctx, loc); {
	case err != nil:
		return err
	case found:
		return a.sameOwner(field, prefix, c, owner)
	}
	if err := a.checkEmpty(ctx, field, prefix, loc, c); err != nil {
		return err
	}
	return a.writeOwner(ctx, field, prefix, loc, c)
}

// checkClaim refuses, before any read, a claim of a prefix the worker may
// not write, a claim that names nobody or another workflow than the
// activity's, and a prefix in a worker's area or outside the claim roots
// (allowClaimRoot).
func (a *Activities) checkClaim(ctx context.Context, field, prefix string, c claim) error {
	if err := a.allowWrite(field, prefix); err != nil {
		return err
	}
	if c.WorkflowID == "" && c.ScheduleID == "" {
		return badInput(fmt.Errorf("%s %s: a claim names a workflow or a schedule", field, prefix))
	}
	if wf := workflowID(ctx); wf != "" && c.WorkflowID != "" && wf != c.WorkflowID {
		return forbidden("%s %s: the claim names workflow %q, the activity runs for %q", field, prefix, c.WorkflowID, wf)
	}
	if a.areaOf(prefix) != nil {
		return forbidden("%s %s is inside s3://%s/%s, which the worker keeps for itself: choose a prefix outside it, or leave %s unset",
			field, prefix, a.Bucket, a.topArea(prefix), field)
	}
	return a.allowClaimRoot(field, prefix)
}

// checkOwnerAbove refuses a prefix inside one whose owner (the nearest
// above loc, the prefix's owner object) c may not nest in: an owner
// above the prefix covers it.
func (a *Activities) checkOwnerAbove(ctx context.Context, field, prefix string, loc s3store.Location, c claim) error {
	up := ancestors(strings.TrimSuffix(loc.Key, OwnerObject))
	if len(up) <= 1 {
		return nil
	}
	parent := "s3://" + loc.Bucket + "/" + up[1]
	owner, _, err := a.owners.nearest(ctx, a.Store, parent)
	if err != nil {
		return fmt.Errorf("check the owners above %s: %w", prefix, err)
	}
	if !owner.none() && !c.mayNestIn(owner) {
		return forbidden("%s %s is inside a prefix that holds %s: choose a prefix outside it, or leave %s unset",
			field, prefix, owner.describe(), field)
	}
	return nil
}

// checkEmpty refuses a new claim of a prefix under which anything lies,
// or a store that cannot tell.
func (a *Activities) checkEmpty(ctx context.Context, field, prefix string, loc s3store.Location, c claim) error {
	lister, ok := a.Store.(keyLister)
	if !ok {
		return badInput(fmt.Errorf("%s %s: the worker's object store cannot list keys, which a claim needs (to find what lies under it)", field, prefix))
	}
	keys, err := lister.List(ctx, loc.Bucket, strings.TrimSuffix(loc.Key, OwnerObject), 1)
	if err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	if len(keys) > 0 {
		return forbidden("%s %s already holds objects that no claim of this %s covers: a claim is made on an empty prefix, so that it never takes over what others wrote or look for there; choose an empty prefix, or leave %s unset",
			field, prefix, c.subject(), field)
	}
	return nil
}

// writeOwner writes c's owner object at loc unless one is there, and
// accepts the one there only if it is c's (sameOwner).
func (a *Activities) writeOwner(ctx context.Context, field, prefix string, loc s3store.Location, c claim) error {
	body, _ := json.Marshal(c.owner())
	created, err := a.putIfAbsent(ctx, loc, body)
	if err != nil || created {
		return err
	}
	owner, found, err := a.readOwner(ctx, loc)
	switch {
	case err != nil:
		return err
	case !found:
		// A conditional write of the owner is in progress (S3 answers 409
		// to the loser): retry, and the winner's owner is there.
		return fmt.Errorf("%s %s is being claimed by another run at this moment: retrying", field, prefix)
	}
	return a.sameOwner(field, prefix, c, owner)
}

// ClaimScheduleReports claims prefix, a schedule's report_prefix, for the
// Temporal Schedule scheduleID, as `starter schedule create` does before it
// creates the schedule: from then on no workflow claims the prefix, one
// inside it or one above it, and only the runs the schedule starts claim
// their dated prefixes inside it and compare with each other's reports.
// It fails as memagent.Forbidden where a workflow's claim would (outside
// the claim roots, too shallow, in a worker's area, inside or above
// another claim, over objects), and is nil when the schedule holds the
// prefix already.
func (a *Activities) ClaimScheduleReports(ctx context.Context, prefix, scheduleID string) error {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return a.claimPrefix(ctx, "report_prefix", prefix, claim{ScheduleID: scheduleID})
}

// claimScheduleReportPrefix is the activity of the ClaimScheduleReports
// workflow: ClaimScheduleReports under this worker's configuration.
func (a *Activities) claimScheduleReportPrefix(ctx context.Context, in api.ClaimScheduleReportsInput) error {
	return a.ClaimScheduleReports(ctx, in.ReportPrefix, in.ScheduleID)
}

// claimForSchedule claims a scheduled batch's report prefix for its
// schedule when the schedule was made without one (not by the starter),
// so that from its first run on nobody else claims there. A refusal (the
// prefix holds earlier reports, say) leaves the prefix as it is: each run
// still claims its own dated prefix.
func (a *Activities) claimForSchedule(ctx context.Context, prefix, scheduleID string) {
	if err := a.ClaimScheduleReports(ctx, prefix, scheduleID); err != nil {
		a.logger().InfoContext(ctx, "the schedule's report prefix is not claimed for it", "prefix", prefix, "schedule", scheduleID, "reason", err)
	}
}

// subject names the claimant in messages.
func (c claim) subject() string {
	if c.WorkflowID == "" {
		return "schedule"
	}
	return "workflow"
}

// readOwner reads the OwnerObject at loc; found is false when there is
// none.
func (a *Activities) readOwner(ctx context.Context, loc s3store.Location) (prefixOwner, bool, error) {
	data, err := a.Store.ReadAll(ctx, loc)
	if errors.Is(err, s3store.ErrNotFound) {
		return prefixOwner{}, false, nil
	}
	if err != nil {
		return prefixOwner{}, false, storeError(err, loc.String())
	}
	var owner prefixOwner
	if json.Unmarshal(data, &owner) != nil || owner.none() {
		// Not an owner the worker wrote: nobody's claim can be proven.
		return prefixOwner{WorkflowID: "?"}, true, nil
	}
	return owner, true, nil
}

// sameOwner is nil when the prefix's existing owner is the claim's own.
func (a *Activities) sameOwner(field, prefix string, c claim, owner prefixOwner) error {
	switch {
	case c.holds(owner):
		return nil
	case c.WorkflowID != "" && owner.WorkflowID == c.WorkflowID:
		return forbidden("%s %s holds the outputs of an earlier workflow with the same id: choose an empty prefix, or leave %s unset for one of the run's own",
			field, prefix, field)
	}
	return forbidden("%s %s holds %s: choose an empty prefix, or leave %s unset for one of the run's own",
		field, prefix, owner.describe(), field)
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
