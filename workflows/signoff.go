package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// signOffRunInput is what a SignOff run decodes: the published input and,
// on a run the workflow continued as new itself, the state its previous run
// handed over (checkCarry refuses one a caller sent).
type signOffRunInput struct {
	api.SignOffInput
	State *signOffState `json:"state,omitempty"`
}

// signOffState is the whole of a sign-off: what the handlers change and
// what one run hands to the next, one value.
type signOffState struct {
	From     string             `json:"from,omitempty"`
	Subject  api.SignOffSubject `json:"subject"`
	Cells    []api.SignOffCell  `json:"cells"`
	SignOffs []api.LevelSignOff `json:"sign_offs,omitempty"`
	// Entries is every accepted Update, oldest first (Seq 1, 2, …): the
	// cells' histories and the audit log's lines; Written counts those
	// the audit log holds.
	Entries   []api.SignOffEntry          `json:"entries,omitempty"`
	Written   int                         `json:"written"`
	TextBytes int                         `json:"text_bytes"`
	Runs      int                         `json:"runs"`
	Exports   *actwire.WriteSignOffOutput `json:"exports,omitempty"`
}

// SignOff is the long-lived workflow in which people decide on every answer
// of a finished review (its questions) or batch (its items), and sign the
// decided grid off at one or two levels. Its workflow id is
// api.SignOffWorkflowID of the review or batch (or, for one started
// before that form, api.LegacySignOffWorkflowID).
//
// Invariants, each enforced by the validator of an Update, so that a
// refused request never reaches the history:
//   - a decision names the cell's version the reviewer saw; a cell that
//     changed since refuses it (stale);
//   - level 1 decides every cell; level 2 begins once level 1 is signed
//     off, and must decide each cell whose level-1 decision edited or
//     rejected the answer (and may decide any other);
//   - four eyes: a cell's level-2 decision, and the level-2 sign-off, are
//     made by someone other than its level-1 reviewer (the level-1
//     signer);
//   - a level is signed off only when none of its cells is pending;
//     reopening a cell withdraws its decisions at that level and above
//     and the sign-offs of those levels;
//   - the text held stays within api.MaxSignOffTextBytes and
//     api.MaxSignOffEntries, so the state always fits continue-as-new;
//   - room is kept for finishing: decisions and reopenings never take the
//     entries and text kept for the level sign-offs not made yet, a
//     change of mind never the entries a pending cell's decision needs,
//     and one reviewer makes at most (cells + api.MaxSignOffRevisions)
//     decisions and reopenings at a level (checkUpdateRoom).
//
// Every accepted Update is appended to the audit log (a JSON line in S3
// beside the review) before the Update returns. The run waits for people
// for days or weeks; it continues as new every UpdatesPerRun Updates,
// when Temporal suggests it, or after RunHours without an end (its wake-up
// point: a new run starts on the newest worker), always with no handler
// running and the audit log written. Once every level is signed off it
// writes the decided grid (JSON, CSV, XLSX) and completes with it.
func SignOff(ctx workflow.Context, input converter.RawValue) (_ *api.SignOffGrid, err error) {
	edge := newBoundary(ctx)
	s := &signOffRun{ctx: ctx, proven: true}
	defer func() {
		if st := edge.closedStatus(err); st != "" && st != api.StageDone {
			_ = workflow.UpsertTypedSearchAttributes(ctx, api.StatusKey.ValueSet(st))
		}
	}()
	if err := workflow.SetQueryHandler(ctx, api.SignOffGridQuery, func() (api.SignOffGrid, error) {
		if s.st == nil || !s.proven {
			return api.SignOffGrid{}, errors.New("the sign-off is still reading what it signs off")
		}
		return s.grid(), nil
	}); err != nil {
		return nil, err
	}
	if err := workflow.SetQueryHandler(ctx, api.CellHistoryQuery, func(cell string) (api.SignOffCellHistory, error) {
		if s.st == nil || !s.proven {
			return api.SignOffCellHistory{}, errors.New("the sign-off is still reading what it signs off")
		}
		c := s.cell(cell)
		if c == nil {
			return api.SignOffCellHistory{}, s.noCell(cell)
		}
		h := api.SignOffCellHistory{Cell: *c, Entries: []api.SignOffEntry{}}
		for _, e := range s.st.Entries {
			if e.Cell == cell {
				h.Entries = append(h.Entries, e)
			}
		}
		return h, nil
	}); err != nil {
		return nil, err
	}
	var run signOffRunInput
	if err := edge.decode(input, &run); err != nil {
		return nil, err
	}
	if err := run.SignOffInput.Validate(); err != nil {
		return nil, badInput(err)
	}
	s.in = run.SignOffInput.WithDefaults()
	s.info = workflow.GetInfo(ctx)
	subject, kind := s.in.Subject()
	// Either form: a sign-off started before api.SignOffSuffix runs on
	// under <subject>/signoff. The id proves nothing by itself (callerIs).
	if !api.IsSignOffWorkflowIDOf(s.info.WorkflowExecution.ID, subject) {
		return nil, badInput(fmt.Errorf("a sign-off of %s runs as workflow %q, not %q: start it under that id", subject, api.SignOffWorkflowID(subject), s.info.WorkflowExecution.ID))
	}
	// The handlers are registered once the state is there: an Update
	// buffered for this run is validated as its handler is registered.
	// A first run registers them before it reads what it signs off, so
	// that an Update coming meanwhile is refused by its validator ("still
	// reading"), never dropped as unknown. A continued run at
	// VerifyCarryChange registers them too before it proves where its
	// state came from (checkCarry asks Temporal): an Update its validator
	// accepts meanwhile waits in its handler until the state is proven,
	// and is validated again then (awaitProven); the queries answer only
	// then; a state that fails the proof fails the run with nothing
	// written.
	if run.State != nil && workflow.GetVersion(ctx, VerifyCarryChange, workflow.DefaultVersion, 1) >= 1 {
		s.st, s.proven = run.State, false
		if err := s.handlers(); err != nil {
			return nil, err
		}
		if err := checkCarry(ctx, run.State.From); err != nil {
			return nil, err
		}
		s.proven = true
	} else if run.State != nil {
		if err := checkCarry(ctx, run.State.From); err != nil {
			return nil, err
		}
		s.st = run.State
		if err := s.handlers(); err != nil {
			return nil, err
		}
	} else {
		if err := s.handlers(); err != nil {
			return nil, err
		}
		var out actwire.LoadSignOffOutput
		actx := workflow.WithActivityOptions(ctx, activityOptions(5*time.Minute, 0, temporal.Priority{}, "read "+kind+" "+subject))
		if err := actwire.LoadSignOff.Execute(actx, actwire.LoadSignOffInput{WorkflowID: subject, Kind: kind, RunID: s.in.SubjectRunID}).Get(ctx, &out); err != nil {
			return nil, stageError("read "+kind, err)
		}
		st := &signOffState{Subject: out.Subject, Cells: make([]api.SignOffCell, len(out.Cells))}
		for i, id := range out.Cells {
			st.Cells[i] = api.SignOffCell{ID: id, Status: api.DecisionPending}
		}
		s.st = st
	}
	s.st.Runs++
	s.publish()
	return s.wait()
}

// signOffRun is one run of SignOff.
type signOffRun struct {
	ctx  workflow.Context
	in   api.SignOffInput
	info *workflow.Info
	st   *signOffState
	// accepted counts the Updates this run accepted.
	accepted int
	// published is the MemagentSignoff last upserted.
	published string
	// proven is false while a continued run proves where its state came
	// from (VerifyCarryChange); the handlers apply nothing until it is.
	proven bool
}

// awaitProven waits, in an Update's handler, until the run's state is
// proven, and then validates the Update again with check: another Update
// may have changed the state while it waited. It returns at once on a run
// whose state needs no proof, so histories from before VerifyCarryChange
// replay as they were recorded.
func (s *signOffRun) awaitProven(ctx workflow.Context, check func() error) error {
	if s.proven {
		return nil
	}
	if err := workflow.Await(ctx, func() bool { return s.proven }); err != nil {
		return err
	}
	return check()
}

func (s *signOffRun) handlers() error {
	if err := workflow.SetUpdateHandlerWithOptions(s.ctx, api.DecideUpdate, func(ctx workflow.Context, r api.DecideRequest) (api.SignOffCell, error) {
		if err := s.awaitProven(ctx, func() error { return s.checkDecide(r) }); err != nil {
			return api.SignOffCell{}, err
		}
		seq := s.decide(ctx, r)
		return *s.cell(r.Cell), s.awaitWritten(ctx, seq)
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r api.DecideRequest) error { return s.checkDecide(r) }}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(s.ctx, api.SignOffUpdate, func(ctx workflow.Context, r api.SignOffRequest) (api.SignOffGrid, error) {
		if err := s.awaitProven(ctx, func() error { return s.checkSignOff(r) }); err != nil {
			return api.SignOffGrid{}, err
		}
		seq := s.signOff(ctx, r)
		if err := s.awaitWritten(ctx, seq); err != nil {
			return api.SignOffGrid{}, err
		}
		return s.grid(), nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r api.SignOffRequest) error { return s.checkSignOff(r) }}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(s.ctx, api.ReopenUpdate, func(ctx workflow.Context, r api.ReopenRequest) (api.SignOffCell, error) {
		if err := s.awaitProven(ctx, func() error { return s.checkReopen(r) }); err != nil {
			return api.SignOffCell{}, err
		}
		seq := s.reopen(ctx, r)
		return *s.cell(r.Cell), s.awaitWritten(ctx, seq)
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r api.ReopenRequest) error { return s.checkReopen(r) }})
}

// wait is the run's main loop: it writes the audit log as Updates are
// accepted, and ends the run once every level is signed off, or continues
// as new.
func (s *signOffRun) wait() (*api.SignOffGrid, error) {
	deadline := workflow.Now(s.ctx).Add(time.Duration(s.in.RunHours) * time.Hour)
	for {
		rest := deadline.Sub(workflow.Now(s.ctx))
		timedOut := rest <= 0
		if !timedOut {
			// A wake-up at least every signOffMoveCheck lets a run whose
			// target build changed (Worker Versioning) move to it.
			ok, err := workflow.AwaitWithTimeout(s.ctx, min(rest, signOffMoveCheck), func() bool {
				return s.unwritten() || s.done() || s.continueDue()
			})
			if err != nil {
				return nil, err
			}
			timedOut = !ok && !workflow.Now(s.ctx).Before(deadline)
		}
		if s.unwritten() {
			if err := s.writeAudit(); err != nil {
				return nil, err
			}
			s.publish()
			continue
		}
		if s.done() {
			return s.finish()
		}
		if timedOut || s.continueDue() {
			// Every handler returns before the run closes: none is
			// left waiting for an audit line this run would not write.
			if err := workflow.Await(s.ctx, func() bool { return workflow.AllHandlersFinished(s.ctx) && !s.unwritten() }); err != nil {
				return nil, err
			}
			if s.unwritten() || s.done() {
				continue
			}
			s.st.From = s.info.WorkflowExecution.RunID
			// Onto the target build (versioning.go), where it is pinned again.
			return nil, continueAsNew(s.ctx, api.SignOffName, signOffRunInput{SignOffInput: s.in, State: s.st})
		}
	}
}

// signOffMoveCheck is how often a sign-off waiting for people wakes to see
// whether its target build changed.
const signOffMoveCheck = time.Hour

// continueDue reports whether the run should continue as new: enough
// Updates, Temporal suggests it, or its target build changed.
func (s *signOffRun) continueDue() bool {
	info := workflow.GetInfo(s.ctx)
	return s.accepted >= s.in.UpdatesPerRun || info.GetContinueAsNewSuggested() || info.GetTargetWorkerDeploymentVersionChanged()
}

func (s *signOffRun) unwritten() bool { return s.st.Written < len(s.st.Entries) }

// done reports whether every level is signed off.
func (s *signOffRun) done() bool { return len(s.st.SignOffs) >= s.in.Levels }

func (s *signOffRun) activityOptions(summary string) workflow.Context {
	return workflow.WithActivityOptions(s.ctx, activityOptions(2*time.Minute, 0, temporal.Priority{}, summary))
}

// writeAudit appends the entries the log lacks, in one activity.
func (s *signOffRun) writeAudit() error {
	from, n := s.st.Written, len(s.st.Entries)
	in := actwire.AppendAuditInput{AuditURI: s.st.Subject.AuditURI, From: from, Entries: s.st.Entries[from:n]}
	if err := actwire.AppendAudit.Execute(s.activityOptions(fmt.Sprintf("audit lines %d–%d", from+1, n)), in).Get(s.ctx); err != nil {
		return stageError("append to the audit log", err)
	}
	s.st.Written = n
	return nil
}

// awaitWritten returns once the audit log holds entry seq.
func (s *signOffRun) awaitWritten(ctx workflow.Context, seq int) error {
	return workflow.Await(ctx, func() bool { return s.st.Written >= seq })
}

// finish writes the decided grid and returns it.
func (s *signOffRun) finish() (*api.SignOffGrid, error) {
	var out actwire.WriteSignOffOutput
	if err := actwire.WriteSignOff.Execute(s.activityOptions("write the decided grid"),
		actwire.WriteSignOffInput{Grid: s.grid()}).Get(s.ctx, &out); err != nil {
		return nil, stageError("write the decided grid", err)
	}
	s.st.Exports = &out
	if err := workflow.Await(s.ctx, func() bool { return workflow.AllHandlersFinished(s.ctx) }); err != nil {
		return nil, err
	}
	s.publish()
	g := s.grid()
	return &g, nil
}

// state is the sign-off's MemagentSignoff.
func (s *signOffRun) state() string {
	switch {
	case s.done():
		return api.SignOffSignedOff
	case s.signedOff(1) != nil:
		return api.SignOffWaitingLevel2
	}
	return api.SignOffWaitingLevel1
}

// waitingLevel is the level the sign-off waits for.
func (s *signOffRun) waitingLevel() int {
	if s.signedOff(1) != nil {
		return 2
	}
	return 1
}

func (s *signOffRun) publish() {
	state := s.state()
	if state != s.published {
		u := []temporal.SearchAttributeUpdate{api.SignOffKey.ValueSet(state)}
		if s.published == "" {
			// The document as it was asked about (the PDF, not its text),
			// as the review's own MemagentDocument has it.
			doc := s.st.Subject.Source
			if doc == "" {
				doc = s.st.Subject.Document
			}
			if doc != "" {
				u = append(u, api.DocumentKey.ValueSet(api.KeywordValue(doc)))
			}
			if s.st.Subject.Kind == api.SubjectBatch {
				u = append(u, api.BatchKey.ValueSet(api.KeywordValue(s.st.Subject.WorkflowID)))
			}
		}
		status := api.StageWaiting
		if state == api.SignOffSignedOff {
			status = api.StageDone
		}
		u = append(u, api.StatusKey.ValueSet(status))
		if err := workflow.UpsertTypedSearchAttributes(s.ctx, u...); err != nil {
			workflow.GetLogger(s.ctx).Warn("upsert search attributes", "error", err)
		}
		s.published = state
	}
	if state == api.SignOffSignedOff {
		workflow.SetCurrentDetails(s.ctx, fmt.Sprintf("**signed off** · %d cells", len(s.st.Cells)))
		return
	}
	level := s.waitingLevel()
	workflow.SetCurrentDetails(s.ctx, fmt.Sprintf("**waiting for level %d** · %d of %d cells pending · %s %s",
		level, len(s.pending(level)), len(s.st.Cells), s.st.Subject.Kind, s.st.Subject.WorkflowID))
}

func (s *signOffRun) grid() api.SignOffGrid {
	g := api.SignOffGrid{
		WorkflowID: s.info.WorkflowExecution.ID, Subject: s.st.Subject, Levels: s.in.Levels, State: s.state(),
		Cells: s.st.Cells, SignOffs: s.st.SignOffs, AuditLines: s.st.Written, Runs: s.st.Runs,
	}
	if !s.done() {
		g.Pending = len(s.pending(s.waitingLevel()))
	}
	if e := s.st.Exports; e != nil {
		g.CSVURI, g.XLSXURI, g.JSONURI = e.CSVURI, e.XLSXURI, e.JSONURI
	}
	return g
}

func (s *signOffRun) cell(id string) *api.SignOffCell {
	for i := range s.st.Cells {
		if s.st.Cells[i].ID == id {
			return &s.st.Cells[i]
		}
	}
	return nil
}

func (s *signOffRun) noCell(id string) error {
	return fmt.Errorf("no cell %q in the sign-off of %s %s: the cells are its %s", id, s.st.Subject.Kind, s.st.Subject.WorkflowID, cellsWord(s.st.Subject.Kind))
}

func cellsWord(kind string) string {
	if kind == api.SubjectBatch {
		return "items' seq numbers (a sample other than the first: seq.sN)"
	}
	return "question ids"
}

// pending are the ids of the cells level still has to decide.
func (s *signOffRun) pending(level int) []string {
	var ids []string
	for _, c := range s.st.Cells {
		if (level == 1 && c.Level1 == nil) || (level == 2 && c.NeedsLevel2() && c.Level2 == nil) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

func (s *signOffRun) signedOff(level int) *api.LevelSignOff {
	for i := range s.st.SignOffs {
		if s.st.SignOffs[i].Level == level {
			return &s.st.SignOffs[i]
		}
	}
	return nil
}

// checkRoom refuses an entry of text bytes past the sign-off's bounds:
// what a level sign-off is checked against.
func (s *signOffRun) checkRoom(text int) error {
	if len(s.st.Entries) >= api.MaxSignOffEntries {
		return fmt.Errorf("the sign-off holds %d entries, its limit: export the grid (starter export grid) and sign off what remains in a new review", len(s.st.Entries))
	}
	if s.st.TextBytes+text > api.MaxSignOffTextBytes {
		return fmt.Errorf("the sign-off's decisions hold %d bytes of text, and this one %d more, over the limit of %d: shorten the comment or the reason", s.st.TextBytes, text, api.MaxSignOffTextBytes)
	}
	return nil
}

// cellNeed is how many decisions cell c still needs, at most, before
// every level of a sign-off of levels can be signed off: a cell level 1
// has not decided may need level 2 too (if level 1 edits or rejects it).
func cellNeed(c api.SignOffCell, levels int) int {
	switch {
	case c.Level1 == nil && levels == 2:
		return 2
	case c.Level1 == nil:
		return 1
	case levels == 2 && c.NeedsLevel2() && c.Level2 == nil:
		return 1
	}
	return 0
}

// checkUpdateRoom refuses a decision or reopening that would take the
// room a sign-off keeps for what finishing it needs (api.MaxSignOffRevisions
// and the reserve beside it): after is cell c as the Update leaves it,
// signedOff the level sign-offs that stand after it, text its bytes.
//
// Only validators call it, and a validator does not run on replay, nor
// does a refused Update reach the history: changing these rules changes
// no command of a recorded history, so they need no workflow.GetVersion.
func (s *signOffRun) checkUpdateRoom(reviewer string, level int, c *api.SignOffCell, after api.SignOffCell, signedOff, text int) error {
	made := 0
	for _, e := range s.st.Entries {
		if e.Reviewer == reviewer && e.Level == level && (e.Action == api.ActionDecide || e.Action == api.ActionReopen) {
			made++
		}
	}
	if limit := len(s.st.Cells) + api.MaxSignOffRevisions; made >= limit {
		return fmt.Errorf("%s has made %d decisions and reopenings at level %d of this sign-off, the most one reviewer may (one a cell, %d cells, and %d more): another reviewer decides what remains at level %d",
			reviewer, made, level, len(s.st.Cells), api.MaxSignOffRevisions, level)
	}
	missing := max(s.in.Levels-signedOff, 0)
	entries := len(s.st.Entries) + 1
	if entries+missing > api.MaxSignOffEntries {
		return fmt.Errorf("the sign-off holds %d entries and keeps its last %d for the level sign-offs not made yet (the limit is %d): sign the levels off, then export the grid (starter export grid) and decide what remains in a new review",
			len(s.st.Entries), missing, api.MaxSignOffEntries)
	}
	if reserved := missing * api.SignOffReservedTextBytes; s.st.TextBytes+text+reserved > api.MaxSignOffTextBytes {
		return fmt.Errorf("the sign-off's decisions hold %d bytes of text, and this one %d more, over the limit of %d less the %d kept for the level sign-offs not made yet: shorten the comment or the reason",
			s.st.TextBytes, text, api.MaxSignOffTextBytes, reserved)
	}
	before := 0
	for _, x := range s.st.Cells {
		before += cellNeed(x, s.in.Levels)
	}
	need := before - cellNeed(*c, s.in.Levels) + cellNeed(after, s.in.Levels)
	if need < before {
		return nil // it decides a cell that waited for it
	}
	if entries+missing+need > api.MaxSignOffEntries {
		return fmt.Errorf("the sign-off holds %d entries of its %d and keeps the rest for a decision on each cell still waiting for one (%d) and the level sign-offs not made yet (%d): decide the pending cells and sign the levels off; a change of mind or a reopening no longer fits",
			len(s.st.Entries), api.MaxSignOffEntries, need, missing)
	}
	return nil
}

func (s *signOffRun) checkOpen(level int) error {
	switch {
	case s.st == nil:
		return errors.New("the sign-off is still reading what it signs off: try again in a moment")
	case s.done():
		return errors.New("every level is signed off: the grid is final")
	case level > s.in.Levels:
		return fmt.Errorf("level %d: this sign-off has one level", level)
	}
	return nil
}

func staleError(c *api.SignOffCell, seen int) error {
	return fmt.Errorf("stale: cell %s is at version %d, and the request was made on version %d: it changed since; look at it again and decide on what it is now", c.ID, c.Version, seen)
}

func (s *signOffRun) checkDecide(r api.DecideRequest) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := s.checkOpen(r.Level); err != nil {
		return err
	}
	c := s.cell(r.Cell)
	if c == nil {
		return s.noCell(r.Cell)
	}
	if r.Version != c.Version {
		return staleError(c, r.Version)
	}
	if so := s.signedOff(r.Level); so != nil {
		return fmt.Errorf("level %d is signed off (by %s): reopen the cell first", r.Level, so.Reviewer)
	}
	if r.Level == 2 {
		if s.signedOff(1) == nil {
			return errors.New("level 1 is not signed off yet: level 2 checks a signed-off level 1")
		}
		if c.Level1 != nil && c.Level1.Reviewer == r.Reviewer {
			return fmt.Errorf("four eyes: %s decided cell %s at level 1, so another reviewer decides it at level 2", r.Reviewer, c.ID)
		}
	}
	after := *c
	d := &api.Decision{Level: r.Level, Decision: r.Decision}
	if r.Level == 1 {
		after.Level1 = d
	} else {
		after.Level2 = d
	}
	return s.checkUpdateRoom(r.Reviewer, r.Level, c, after, len(s.st.SignOffs), len(r.FinalAnswer)+len(r.Reason)+len(r.Comment))
}

func (s *signOffRun) checkSignOff(r api.SignOffRequest) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := s.checkOpen(r.Level); err != nil {
		return err
	}
	if so := s.signedOff(r.Level); so != nil {
		return fmt.Errorf("level %d is signed off already, by %s", r.Level, so.Reviewer)
	}
	if r.Level == 2 {
		l1 := s.signedOff(1)
		if l1 == nil {
			return errors.New("level 1 is not signed off yet: sign level 1 off first")
		}
		if l1.Reviewer == r.Reviewer {
			return fmt.Errorf("four eyes: %s signed level 1 off, so another reviewer signs level 2 off", r.Reviewer)
		}
	}
	if p := s.pending(r.Level); len(p) > 0 {
		shown := p[:min(len(p), 5)]
		more := ""
		if len(p) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(p)-len(shown))
		}
		return fmt.Errorf("%d cells are pending at level %d (%s%s): decide them before signing the level off", len(p), r.Level, strings.Join(shown, ", "), more)
	}
	return s.checkRoom(len(r.Comment))
}

func (s *signOffRun) checkReopen(r api.ReopenRequest) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := s.checkOpen(r.Level); err != nil {
		return err
	}
	c := s.cell(r.Cell)
	if c == nil {
		return s.noCell(r.Cell)
	}
	if r.Version != c.Version {
		return staleError(c, r.Version)
	}
	if (r.Level == 1 && c.Level1 == nil && c.Level2 == nil) || (r.Level == 2 && c.Level2 == nil) {
		return fmt.Errorf("cell %s has no decision at level %d or above to reopen", c.ID, r.Level)
	}
	after := *c
	if r.Level == 1 {
		after.Level1 = nil
	}
	after.Level2 = nil
	kept := 0
	for _, so := range s.st.SignOffs {
		if so.Level < r.Level {
			kept++
		}
	}
	return s.checkUpdateRoom(r.Reviewer, r.Level, c, after, kept, len(r.Reason))
}

// record appends an entry to the state; the audit loop writes it.
func (s *signOffRun) record(ctx workflow.Context, e api.SignOffEntry, text int) int {
	e.Seq = len(s.st.Entries) + 1
	e.At = workflow.Now(ctx).UTC()
	e.RunID = s.info.WorkflowExecution.RunID
	e.WorkflowID = s.info.WorkflowExecution.ID
	if u := workflow.GetCurrentUpdateInfo(ctx); u != nil {
		e.UpdateID = u.ID
	}
	s.st.Entries = append(s.st.Entries, e)
	s.st.TextBytes += text
	s.accepted++
	return e.Seq
}

func (s *signOffRun) decide(ctx workflow.Context, r api.DecideRequest) int {
	c := s.cell(r.Cell)
	c.Version++
	seq := s.record(ctx, api.SignOffEntry{
		Action: api.ActionDecide, Cell: r.Cell, Level: r.Level, Decision: r.Decision, FinalAnswer: r.FinalAnswer,
		Reason: r.Reason, Comment: r.Comment, Reviewer: r.Reviewer, ClientIdentity: r.ClientIdentity, Version: c.Version,
	}, len(r.FinalAnswer)+len(r.Reason)+len(r.Comment))
	e := s.st.Entries[seq-1]
	d := &api.Decision{
		Level: r.Level, Decision: r.Decision, FinalAnswer: r.FinalAnswer, Reason: r.Reason, Comment: r.Comment,
		Reviewer: r.Reviewer, ClientIdentity: r.ClientIdentity, At: e.At, UpdateID: e.UpdateID,
	}
	if r.Level == 1 {
		c.Level1 = d
	} else {
		c.Level2 = d
	}
	c.Status = c.Decided().Decision
	workflow.GetLogger(ctx).Info("decided", "cell", c.ID, "level", r.Level, "decision", r.Decision)
	return seq
}

func (s *signOffRun) signOff(ctx workflow.Context, r api.SignOffRequest) int {
	seq := s.record(ctx, api.SignOffEntry{
		Action: api.ActionSignOff, Level: r.Level, Comment: r.Comment, Reviewer: r.Reviewer, ClientIdentity: r.ClientIdentity,
	}, len(r.Comment))
	e := s.st.Entries[seq-1]
	s.st.SignOffs = append(s.st.SignOffs, api.LevelSignOff{
		Level: r.Level, Reviewer: r.Reviewer, ClientIdentity: r.ClientIdentity, Comment: r.Comment, At: e.At, UpdateID: e.UpdateID,
	})
	workflow.GetLogger(ctx).Info("signed off", "level", r.Level)
	return seq
}

func (s *signOffRun) reopen(ctx workflow.Context, r api.ReopenRequest) int {
	c := s.cell(r.Cell)
	c.Version++
	if r.Level == 1 {
		c.Level1 = nil
	}
	c.Level2 = nil
	c.Status = api.DecisionPending
	if d := c.Decided(); d != nil {
		c.Status = d.Decision
	}
	kept := s.st.SignOffs[:0]
	for _, so := range s.st.SignOffs {
		if so.Level < r.Level {
			kept = append(kept, so)
		}
	}
	s.st.SignOffs = kept
	return s.record(ctx, api.SignOffEntry{
		Action: api.ActionReopen, Cell: r.Cell, Level: r.Level, Reason: r.Reason, Reviewer: r.Reviewer,
		ClientIdentity: r.ClientIdentity, Version: c.Version,
	}, len(r.Reason))
}
