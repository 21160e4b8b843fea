package memclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// ErrSubjectChanged is wrapped (errors.Is) by SignOffGrid's error when
// the review or batch a sign-off covers has another latest run than the
// one the sign-off read: its id was run again, with another document or
// manifest, and the sign-off's decisions are not about it.
var ErrSubjectChanged = errors.New("the sign-off's subject was run again")

// StartSignOff starts the sign-off of a finished review or batch, under
// api.SignOffWorkflowID of it, or joins the one already going (or
// finds the one that completed), and returns its workflow id: one
// started before that form, running or completed under
// api.LegacySignOffWorkflowID, is the one joined or found. The
// execution joined or found is verified (Verify): one that is not
// memagent's sign-off is refused with ErrNotMemagent while it runs (the
// real one starts once the operator has terminated it), and replaced by
// the real one once it has closed. The sign-off covers
// in.SubjectRunID of the subject only (see api.SignOffInput); without one,
// StartSignOff pins the subject's latest run when it is a completed
// review or batch of memagent's, and refuses one that is not memagent's
// (ErrNotMemagent).
func (c *Client) StartSignOff(ctx context.Context, in api.SignOffInput) (string, error) {
	if err := in.Validate(); err != nil {
		return "", fmt.Errorf("memagent: %w", err)
	}
	subject, kind := in.Subject()
	if x, ok := c.legacySignOff(ctx, subject); ok {
		// Started before api.SignOffSuffix: it keeps its id to its end.
		if err := c.sameSignOff(ctx, x.WorkflowID, x.RunID, in); err != nil {
			return "", err
		}
		return x.WorkflowID, nil
	}
	id := api.SignOffWorkflowID(subject)
	if in.SubjectRunID == "" {
		typ := api.ReviewDocumentName
		if kind == api.SubjectBatch {
			typ = api.BatchQAName
		}
		x, err := c.Verify(ctx, subject, "", typ)
		var nf *serviceerror.NotFound
		var not *NotMemagentError
		switch {
		case errors.As(err, &not) && (not.FirstRun || not.Type == typ):
			return "", fmt.Errorf("%s %s: %w", kind, subject, err)
		case errors.As(err, &nf) || errors.As(err, &not):
			// No such workflow, or one of another type: the sign-off
			// refuses it itself, saying why.
		case err != nil:
			return "", err
		case x.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			in.SubjectRunID = x.RunID
		}
	}
	start := func(reuse enumspb.WorkflowIdReusePolicy) (string, error) {
		run, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: id, TaskQueue: c.taskQueue,
			WorkflowIDReusePolicy:    reuse,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    api.SignOffStartSearchAttributes(in),
			StaticSummary:            "sign-off of " + subject,
		}, api.SignOffName, in)
		var exists *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case errors.As(err, &exists):
			// Already started and completed (signed off) is not an error:
			// the sign-off is there, final, if it is memagent's.
			return exists.RunId, nil
		case err != nil:
			return "", fmt.Errorf("start sign-off %s: %w", id, err)
		}
		// The run started, or the one joined (use-existing): either way
		// the one under the id, which may be another's.
		return run.GetRunID(), nil
	}
	runID, err := start(enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY)
	if err != nil {
		return "", err
	}
	_, err = c.Verify(ctx, id, runID, api.SignOffName)
	var not *NotMemagentError
	if errors.As(err, &not) {
		// A look-alike that has closed (completed, so that the id is not
		// free again for a sign-off) gives way to the real sign-off; one
		// that runs holds the id until the operator terminates it.
		d, derr := c.c.DescribeWorkflowExecution(ctx, id, runID)
		if derr == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			if runID, err = start(enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE); err != nil {
				return "", err
			}
			_, err = c.Verify(ctx, id, runID, api.SignOffName)
		}
	}
	if err != nil {
		return "", fmt.Errorf("sign-off %s: %w", id, err)
	}
	if err := c.sameSignOff(ctx, id, runID, in); err != nil {
		return "", err
	}
	return id, nil
}

// signOffReadWait bounds how long StartSignOff waits for a sign-off to
// read its subject before it compares it with the one asked for.
const signOffReadWait = 2 * time.Minute

// sameSignOff refuses a sign-off under id (run runID, memagent's) that is
// not the one in asks for: anyone who may start workflows can start a
// real memagent.SignOff under a review's sign-off id first, with one level
// where two were wanted, or over another run of the subject, and a start
// with use-existing joins it. Its grid says what it signs off; a sign-off
// still reading its subject is waited for, up to signOffReadWait.
func (c *Client) sameSignOff(ctx context.Context, id, runID string, in api.SignOffInput) error {
	want := in.WithDefaults()
	var g api.SignOffGrid
	deadline := time.Now().Add(signOffReadWait)
	for {
		err := c.signOffGridOf(ctx, id, runID, &g)
		if errors.Is(err, errSignOffClosed) {
			return nil // it failed or was ended: the caller sees how
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("sign-off %s (run %s) did not say what it signs off (%w): open it again in a moment", id, runID, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	switch {
	case g.Levels != want.Levels:
		return fmt.Errorf("%w: sign-off %s (run %s) signs off at %d level(s), and %d were asked for: someone started it first; ask the operator to terminate it, then start the sign-off again",
			ErrSignOffDiffers, id, runID, g.Levels, want.Levels)
	case want.SubjectRunID != "" && g.Subject.RunID != want.SubjectRunID:
		return fmt.Errorf("%w: sign-off %s (run %s) covers run %s of %s, and run %s was asked for: ask the operator to terminate it, then start the sign-off again",
			ErrSignOffDiffers, id, runID, g.Subject.RunID, g.Subject.WorkflowID, want.SubjectRunID)
	}
	return nil
}

// ErrSignOffDiffers is the error of StartSignOff when the sign-off under
// the id is memagent's but not the one asked for (its levels or the run of
// its subject).
var ErrSignOffDiffers = errors.New("memagent: the sign-off under this id is not the one asked for")

// errSignOffClosed is signOffGridOf's answer for a run that closed
// without a grid (failed, canceled, terminated, timed out).
var errSignOffClosed = errors.New("the sign-off closed without a grid")

// signOffGridOf reads the grid of run runID of sign-off id: its result
// once signed off, else its query.
func (c *Client) signOffGridOf(ctx context.Context, id, runID string, g *api.SignOffGrid) error {
	d, err := c.c.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return err
	}
	switch d.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return c.c.GetWorkflow(ctx, id, runID).Get(ctx, g)
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
	default:
		return errSignOffClosed
	}
	v, err := c.c.QueryWorkflow(ctx, id, runID, api.SignOffGridQuery)
	if err != nil {
		return err
	}
	return v.Get(g)
}

// signOff verifies the latest execution under the sign-off id of subject.
func (c *Client) signOff(ctx context.Context, subject string) (Execution, error) {
	x, err := c.findSignOff(ctx, subject)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return x, fmt.Errorf("%s has no sign-off: start one (starter signoff %s --start)", subject, subject)
	case err != nil:
		return x, err
	}
	return x, nil
}

// findSignOff verifies the latest execution under the sign-off id of
// subject, in either form: api.SignOffWorkflowID (<subject>.signoff), or,
// when nothing of memagent's is there, api.LegacySignOffWorkflowID
// (<subject>/signoff), where a sign-off started before that form runs on.
// Each is verified (Verify): a look-alike under either id is never
// taken, whatever its id. Its error is the first id's, or the legacy id's
// when the first holds nothing.
func (c *Client) findSignOff(ctx context.Context, subject string) (Execution, error) {
	x, err := c.Verify(ctx, api.SignOffWorkflowID(subject), "", api.SignOffName)
	var nf *serviceerror.NotFound
	if err == nil || !errors.As(err, &nf) && !errors.Is(err, ErrNotMemagent) {
		return x, err
	}
	lx, lerr := c.Verify(ctx, api.LegacySignOffWorkflowID(subject), "", api.SignOffName)
	switch {
	case lerr == nil:
		return lx, nil
	case errors.As(err, &nf) && !errors.As(lerr, &nf):
		return lx, lerr
	}
	return x, err
}

// legacySignOff is the sign-off of subject started before
// api.SignOffSuffix, under api.LegacySignOffWorkflowID, when one of
// memagent's is there and is running or signed off: StartSignOff joins it
// rather than start a second one under the new id.
func (c *Client) legacySignOff(ctx context.Context, subject string) (Execution, bool) {
	if _, err := c.Verify(ctx, api.SignOffWorkflowID(subject), "", api.SignOffName); err == nil {
		return Execution{}, false // the new id's is memagent's: that one
	}
	x, err := c.Verify(ctx, api.LegacySignOffWorkflowID(subject), "", api.SignOffName)
	if err != nil || x.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && x.Status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		return Execution{}, false
	}
	return x, true
}

// SignOffGrid returns the sign-off's grid: its query while it runs, its
// result once signed off, read from the run Verify found to be memagent's
// sign-off (ErrNotMemagent otherwise). It is refused with
// ErrSubjectChanged when the review or batch under the subject's id is no
// longer the run the sign-off covers (Subject.RunID); a subject whose
// history Temporal no longer holds is taken as covered.
func (c *Client) SignOffGrid(ctx context.Context, subject string) (*api.SignOffGrid, error) {
	x, err := c.signOff(ctx, subject)
	if err != nil {
		return nil, err
	}
	var g api.SignOffGrid
	if x.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		if err := c.c.GetWorkflow(ctx, x.WorkflowID, x.RunID).Get(ctx, &g); err != nil {
			return nil, err
		}
	} else {
		v, err := c.c.QueryWorkflow(ctx, x.WorkflowID, x.RunID, api.SignOffGridQuery)
		if err != nil {
			return nil, err
		}
		if err := v.Get(&g); err != nil {
			return nil, err
		}
	}
	if err := c.CheckSubject(ctx, g.Subject); err != nil {
		return nil, err
	}
	return &g, nil
}

// CheckSubject checks that the review or batch s names is still the run
// a sign-off covers: the latest run under s.WorkflowID is s.RunID, and it
// is memagent's (Verify). A subject without a run id (a sign-off still
// reading it) and one Temporal no longer holds pass.
func (c *Client) CheckSubject(ctx context.Context, s api.SignOffSubject) error {
	if s.RunID == "" {
		return nil
	}
	typ := api.ReviewDocumentName
	if s.Kind == api.SubjectBatch {
		typ = api.BatchQAName
	}
	x, err := c.Verify(ctx, s.WorkflowID, "", typ)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil
	case err != nil:
		return fmt.Errorf("the %s the sign-off covers: %w", s.Kind, err)
	case x.RunID != s.RunID:
		return fmt.Errorf("%w: the sign-off of %s %s covers its run %s, but its latest run is %s: the id was run again, and "+
			"the sign-off's decisions are not about that run; ask the operator to terminate the sign-off of %s and sign the new run off",
			ErrSubjectChanged, s.Kind, s.WorkflowID, s.RunID, x.RunID, s.WorkflowID)
	}
	return nil
}

// CellHistory returns one cell's decisions, oldest first.
func (c *Client) CellHistory(ctx context.Context, subject, cell string) (*api.SignOffCellHistory, error) {
	x, err := c.signOff(ctx, subject)
	if err != nil {
		return nil, err
	}
	v, err := c.c.QueryWorkflow(ctx, x.WorkflowID, x.RunID, api.CellHistoryQuery, cell)
	if err != nil {
		return nil, err
	}
	var h api.SignOffCellHistory
	if err := v.Get(&h); err != nil {
		return nil, err
	}
	return &h, nil
}

// update sends an Update to the sign-off of subject, once verified, and
// waits for its result. It addresses the verified chain (its first run
// id), so that a run swapped in under the id is never sent it. A refusal
// (the validator's) is the error.
func update[T any](ctx context.Context, c *Client, subject, name string, arg any) (*T, error) {
	x, err := c.signOff(ctx, subject)
	if err != nil {
		return nil, err
	}
	return updateVerified[T](ctx, c, x, name, arg)
}

// updateVerified sends an Update to the verified chain x (its first run
// id, so that a run swapped in under the id is never sent it) and waits
// for its result; a refusal (the validator's) is the error.
func updateVerified[T any](ctx context.Context, c *Client, x Execution, name string, arg any) (*T, error) {
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: x.WorkflowID, FirstExecutionRunID: x.FirstRunID, UpdateName: name, Args: []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return nil, err
	}
	var out T
	if err := h.Get(ctx, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Decide records a decision on a cell of the sign-off of subject.
func (c *Client) Decide(ctx context.Context, subject string, r api.DecideRequest) (*api.SignOffCell, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return update[api.SignOffCell](ctx, c, subject, api.DecideUpdate, r)
}

// SignOff signs a level of the sign-off of subject off.
func (c *Client) SignOff(ctx context.Context, subject string, r api.SignOffRequest) (*api.SignOffGrid, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return update[api.SignOffGrid](ctx, c, subject, api.SignOffUpdate, r)
}

// Reopen withdraws a cell's decisions at a level and above.
func (c *Client) Reopen(ctx context.Context, subject string, r api.ReopenRequest) (*api.SignOffCell, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return update[api.SignOffCell](ctx, c, subject, api.ReopenUpdate, r)
}
