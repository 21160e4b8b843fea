package api

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/contract"
)

// SignOffName is the registered name of SignOff, the long-lived workflow in
// which reviewers decide on every answer of a finished review or batch and
// sign the grid off, at one or two levels.
const SignOffName = "memagent.SignOff"

// Updates and queries of SignOff.
const (
	// DecideUpdate records a decision on one cell (a DecideRequest); it
	// returns the cell as it then is (SignOffCell).
	DecideUpdate = "decide"
	// SignOffUpdate signs a level off (a SignOffRequest); it returns the
	// sign-off's grid (SignOffGrid).
	SignOffUpdate = "sign-off"
	// ReopenUpdate withdraws a cell's decision at a level and above (a
	// ReopenRequest); it returns the cell.
	ReopenUpdate = "reopen"
	// SignOffGridQuery returns the SignOffGrid.
	SignOffGridQuery = "grid"
	// CellHistoryQuery takes a cell id and returns its SignOffCellHistory.
	CellHistoryQuery = "cell-history"
)

// Decisions on a cell.
const (
	DecisionPending  = "pending"
	DecisionAccepted = "accepted"
	DecisionEdited   = "edited"
	DecisionRejected = "rejected"
)

// States of a sign-off, its MemagentSignoff search attribute while it runs
// and after it closes.
const (
	// SignOffWaitingLevel1 and SignOffWaitingLevel2: waiting for the
	// reviewers of that level (decisions, then the level's sign-off).
	SignOffWaitingLevel1 = "waiting-level-1"
	SignOffWaitingLevel2 = "waiting-level-2"
	// SignOffSignedOff: every level signed off; the decided grid is
	// written.
	SignOffSignedOff = "signed-off"
)

// StageWaiting is the MemagentStatus of a sign-off that waits for people.
const StageWaiting = "waiting"

// Kinds of what a sign-off signs off.
const (
	SubjectReview = "review"
	SubjectBatch  = "batch"
)

// Bounds of a sign-off. They keep what it carries across continue-as-new
// well under Temporal's 2 MB payload limit.
const (
	// MaxSignOffCells bounds the cells (a review's questions, a batch's
	// items × samples).
	MaxSignOffCells = 1000
	// MaxFinalAnswerBytes bounds an edited answer, MaxReasonBytes a reason
	// and MaxCommentBytes a comment.
	MaxFinalAnswerBytes = 4096
	MaxReasonBytes      = 1024
	MaxCommentBytes     = 1024
	// MaxReviewerBytes bounds a reviewer's name, MaxClientIdentityBytes
	// the Temporal client identity recorded beside it.
	MaxReviewerBytes       = 128
	MaxClientIdentityBytes = 256
	// MaxSignOffTextBytes bounds the text (answers, reasons, comments) the
	// decisions of one sign-off hold, history included; MaxSignOffEntries
	// the entries of all cells' histories. A decision past either is
	// refused, with the message saying so.
	MaxSignOffTextBytes = 512 << 10
	MaxSignOffEntries   = 2000
	// MaxSignOffRevisions bounds what one reviewer does at one level of a
	// sign-off beyond a first decision on each cell: a reviewer makes at
	// most (cells + MaxSignOffRevisions) decisions and reopenings at a
	// level, over the whole sign-off (every run). A flood of Updates from
	// one reviewer stops there, and leaves the entries to the others.
	MaxSignOffRevisions = 50
	// DefaultSignOffUpdatesPerRun is how many accepted Updates a run takes
	// before it continues as new (earlier when Temporal suggests it).
	DefaultSignOffUpdatesPerRun = 500
	// DefaultSignOffRunHours is how long a run waits for people before it
	// continues as new even when nothing happened, so that a sign-off that
	// waits for weeks moves to newer workers (and its history stays
	// small).
	DefaultSignOffRunHours = 24
)

// SignOffReservedTextBytes is the text a sign-off keeps for each level
// sign-off not made yet (its comment). A sign-off keeps room for what is
// still needed to finish it: the level sign-offs not made yet always have
// an entry and SignOffReservedTextBytes of text each that no decision or
// reopening may take, and a decision that is not the first on a pending
// cell (a change of mind, a reopening, an optional level-2 decision) is
// refused when it would leave no entry for a decision on every cell still
// waiting for one. A sign-off Update is refused only at MaxSignOffEntries
// and MaxSignOffTextBytes themselves.
const SignOffReservedTextBytes = MaxCommentBytes

// SignOffInput starts a SignOff. It is JSON on the wire. Start it under
// SignOffWorkflowID of the review or batch.
type SignOffInput struct {
	// Review is the workflow id of a completed ReviewDocument, Batch of a
	// completed BatchQA: exactly one. The cells are its grid's rows (a
	// review's questions) or its report's items (each sample of a batch's
	// item), read once, as Temporal holds the run's result.
	Review string `json:"review,omitempty" contract:"maxlen=1000"`
	Batch  string `json:"batch,omitempty" contract:"maxlen=1000"`
	// Levels is 1 or 2 (default 2): with 2, a second reviewer checks the
	// edits and rejections of level 1 (and any accepted cell they choose),
	// and signs level 2 off.
	Levels int `json:"levels,omitempty" contract:"min=0,max=2"`
	// SubjectRunID, when set, pins the run of the review or batch the
	// sign-off covers: the sign-off refuses to start (memagent.Forbidden,
	// naming both run ids) when the latest run under Review or Batch is
	// another, as when the id was run again with another document. Without
	// it the sign-off covers the latest run it reads, and records it
	// (SignOffSubject.RunID); the desk and the CLI refuse a sign-off whose
	// subject's latest run is no longer that run.
	SubjectRunID string `json:"subject_run_id,omitempty" contract:"maxlen=100"`
	// UpdatesPerRun overrides DefaultSignOffUpdatesPerRun, RunHours
	// DefaultSignOffRunHours.
	UpdatesPerRun int `json:"updates_per_run,omitempty" contract:"min=0,max=10000"`
	RunHours      int `json:"run_hours,omitempty" contract:"min=0,max=8760"`
}

// Subject is the workflow id of the review or batch, and its kind.
func (in SignOffInput) Subject() (id, kind string) {
	if in.Review != "" {
		return in.Review, SubjectReview
	}
	return in.Batch, SubjectBatch
}

// WithDefaults fills the defaults; deterministic.
func (in SignOffInput) WithDefaults() SignOffInput {
	if in.Levels == 0 {
		in.Levels = 2
	}
	if in.UpdatesPerRun == 0 {
		in.UpdatesPerRun = DefaultSignOffUpdatesPerRun
	}
	if in.RunHours == 0 {
		in.RunHours = DefaultSignOffRunHours
	}
	return in
}

// Validate reports input that can never succeed.
func (in SignOffInput) Validate() error {
	//workflowcheck:ignore
	if err := contract.Check(in); err != nil {
		return err
	}
	switch {
	case in.Review == "" && in.Batch == "":
		return errors.New("neither review nor batch: name the workflow id of the review (or batch) to sign off")
	case in.Review != "" && in.Batch != "":
		return errors.New("both review and batch: a sign-off signs off one of them")
	}
	id, _ := in.Subject()
	if _, ok := SignOffSubjectOf(id); ok {
		return fmt.Errorf("%q is a sign-off's id: name the review or batch it signs off", id)
	}
	return nil
}

// SignOffStartSearchAttributes are the search attributes a sign-off has
// from its start.
func SignOffStartSearchAttributes(in SignOffInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(SignOffKey.ValueSet(SignOffWaitingLevel1), StatusKey.ValueSet(StageWaiting))
}

// DecideRequest is the argument of DecideUpdate.
type DecideRequest struct {
	// Cell is the cell's id: a review's question id, a batch item's
	// SignOffCellID.
	Cell string `json:"cell" contract:"required,maxlen=200"`
	// Level is 1 or 2.
	Level int `json:"level" contract:"min=1,max=2"`
	// Decision is accepted, edited or rejected.
	Decision string `json:"decision" contract:"enum=accepted|edited|rejected"`
	// FinalAnswer is the answer that replaces the model's (edited only).
	FinalAnswer string `json:"final_answer,omitempty"`
	// Reason says why the answer was edited or rejected (required then).
	Reason  string `json:"reason,omitempty"`
	Comment string `json:"comment,omitempty"`
	// Version is the cell's version the reviewer saw (SignOffCell.Version):
	// a decision on a cell that changed since is refused as stale.
	Version int `json:"version" contract:"min=0"`
	// Reviewer is who decides, as the desk or the CLI authenticated them;
	// ClientIdentity the Temporal client identity the request was sent
	// with (Temporal records its own beside it in the history).
	Reviewer       string `json:"reviewer"`
	ClientIdentity string `json:"client_identity"`
}

// SignOffRequest is the argument of SignOffUpdate.
type SignOffRequest struct {
	Level          int    `json:"level" contract:"min=1,max=2"`
	Comment        string `json:"comment,omitempty"`
	Reviewer       string `json:"reviewer"`
	ClientIdentity string `json:"client_identity"`
}

// ReopenRequest is the argument of ReopenUpdate: the cell's decisions at
// Level and above are withdrawn (kept in its history), and so are the
// sign-offs of those levels.
type ReopenRequest struct {
	Cell           string `json:"cell" contract:"required,maxlen=200"`
	Level          int    `json:"level" contract:"min=1,max=2"`
	Reason         string `json:"reason"`
	Version        int    `json:"version" contract:"min=0"`
	Reviewer       string `json:"reviewer"`
	ClientIdentity string `json:"client_identity"`
}

// Decision is one reviewer's decision on a cell at a level.
type Decision struct {
	Level    int    `json:"level"`
	Decision string `json:"decision"`
	// FinalAnswer is the edited answer (edited only).
	FinalAnswer    string    `json:"final_answer,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	Comment        string    `json:"comment,omitempty"`
	Reviewer       string    `json:"reviewer"`
	ClientIdentity string    `json:"client_identity,omitempty"`
	At             time.Time `json:"at"`
	// UpdateID is the Temporal Update that recorded it.
	UpdateID string `json:"update_id,omitempty"`
}

// SignOffCell is one cell of a sign-off: a review's question or a batch's
// item sample, with its decisions.
type SignOffCell struct {
	ID string `json:"id"`
	// Version counts the changes of the cell (decisions, reopenings); a
	// decision names the version it was made on.
	Version int `json:"version"`
	// Status is the cell's decision as it stands (Decided), or pending.
	Status string    `json:"status"`
	Level1 *Decision `json:"level1,omitempty"`
	Level2 *Decision `json:"level2,omitempty"`
}

// Decided is the decision that stands, or nil: level 1's, unless level 2
// overrode it. At level 2, accepted approves level 1's decision as it
// is; edited or rejected overrides it.
func (c SignOffCell) Decided() *Decision {
	if c.Level2 != nil && (c.Level2.Decision != DecisionAccepted || c.Level1 == nil) {
		return c.Level2
	}
	return c.Level1
}

// NeedsLevel2 reports whether level 2 must decide the cell before it is
// signed off: its level-1 decision edited or rejected the answer.
func (c SignOffCell) NeedsLevel2() bool {
	return c.Level1 != nil && c.Level1.Decision != DecisionAccepted
}

// LevelSignOff is a level's sign-off.
type LevelSignOff struct {
	Level          int       `json:"level"`
	Reviewer       string    `json:"reviewer"`
	ClientIdentity string    `json:"client_identity,omitempty"`
	Comment        string    `json:"comment,omitempty"`
	At             time.Time `json:"at"`
	UpdateID       string    `json:"update_id,omitempty"`
}

// SignOffSubject is what a sign-off signs off, as the worker read it.
type SignOffSubject struct {
	// Kind is SubjectReview or SubjectBatch; WorkflowID and RunID the run
	// whose result was read.
	Kind       string `json:"kind"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Document is the document asked about (a review's), Source the PDF,
	// DOCX or HTML it was converted from.
	Document string `json:"document,omitempty"`
	Source   string `json:"source,omitempty"`
	// GridURI is the review's grid.json or the batch's results.jsonl: the
	// answers, their grounding and evidence.
	GridURI string `json:"grid_uri"`
	// Prefix is where the sign-off writes (the review's or the batch
	// report's prefix, then signoff/): AuditURI, and the decided grid once
	// signed off.
	Prefix   string `json:"prefix"`
	AuditURI string `json:"audit_uri"`
}

// SignOffGrid is a sign-off's state: the SignOffGridQuery's answer, and
// the workflow's result once every level is signed off.
type SignOffGrid struct {
	WorkflowID string         `json:"workflow_id"`
	Subject    SignOffSubject `json:"subject"`
	Levels     int            `json:"levels"`
	// State is SignOffWaitingLevel1, SignOffWaitingLevel2 or
	// SignOffSignedOff.
	State    string         `json:"state"`
	Cells    []SignOffCell  `json:"cells"`
	SignOffs []LevelSignOff `json:"sign_offs,omitempty"`
	// Pending counts the cells the level waited for still lacks a
	// decision on.
	Pending int `json:"pending"`
	// AuditLines is how many lines the audit log holds (every accepted
	// decision, sign-off and reopening, one a line).
	AuditLines int `json:"audit_lines"`
	// Exports are the decided grid's files, once signed off.
	CSVURI  string `json:"csv_uri,omitempty"`
	XLSXURI string `json:"xlsx_uri,omitempty"`
	JSONURI string `json:"json_uri,omitempty"`
	Runs    int    `json:"runs"`
}

// Cell returns the cell of id, or nil.
func (g *SignOffGrid) Cell(id string) *SignOffCell {
	for i := range g.Cells {
		if g.Cells[i].ID == id {
			return &g.Cells[i]
		}
	}
	return nil
}

// SignOffEntry is one line of a cell's history, and of the audit log.
type SignOffEntry struct {
	// Seq numbers the entries of the sign-off from 1: the line of the
	// audit log.
	Seq int `json:"seq"`
	// Action is "decide", "sign-off" or "reopen".
	Action string `json:"action"`
	// Cell is empty for a sign-off.
	Cell  string `json:"cell,omitempty"`
	Level int    `json:"level"`
	// Decision, FinalAnswer, Reason and Comment are the request's.
	Decision       string    `json:"decision,omitempty"`
	FinalAnswer    string    `json:"final_answer,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	Comment        string    `json:"comment,omitempty"`
	Reviewer       string    `json:"reviewer"`
	ClientIdentity string    `json:"client_identity,omitempty"`
	At             time.Time `json:"at"`
	UpdateID       string    `json:"update_id,omitempty"`
	// Version is the cell's version after the entry.
	Version int `json:"version,omitempty"`
	// WorkflowID and RunID name the sign-off run that accepted it.
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// SignOffCellHistory is the CellHistoryQuery's answer.
type SignOffCellHistory struct {
	Cell    SignOffCell    `json:"cell"`
	Entries []SignOffEntry `json:"entries"`
}

// Actions of a SignOffEntry.
const (
	ActionDecide  = "decide"
	ActionSignOff = "sign-off"
	ActionReopen  = "reopen"
)

// SignOffCellID is the cell id of a batch item's sample: its seq, then
// ".s" and the sample for a sample other than the first.
func SignOffCellID(seq, sample int) string {
	if sample == 0 {
		return fmt.Sprint(seq)
	}
	return fmt.Sprintf("%d.s%d", seq, sample)
}

// CheckReviewer checks a reviewer's name and client identity: what every
// request carries.
func CheckReviewer(reviewer, clientIdentity string) error {
	switch {
	case strings.TrimSpace(reviewer) == "":
		return errors.New("reviewer is empty: a decision is recorded under the reviewer who makes it")
	case len(reviewer) > MaxReviewerBytes || !utf8.ValidString(reviewer) || strings.ContainsAny(reviewer, "\r\n\t"):
		return fmt.Errorf("reviewer must be one line of at most %d bytes of UTF-8", MaxReviewerBytes)
	case strings.TrimSpace(clientIdentity) == "":
		return errors.New("client_identity is empty: send the Temporal client identity the request goes through")
	case len(clientIdentity) > MaxClientIdentityBytes || !utf8.ValidString(clientIdentity):
		return fmt.Errorf("client_identity must be at most %d bytes of UTF-8", MaxClientIdentityBytes)
	}
	return nil
}

// checkRequest is what every Update's Validate checks first: the
// contract of its fields, and who sends it.
func checkRequest(r any, reviewer, clientIdentity string) error {
	//workflowcheck:ignore
	if err := contract.Check(r); err != nil {
		return err
	}
	return CheckReviewer(reviewer, clientIdentity)
}

func checkText(field, s string, maxBytes int) error {
	if len(s) > maxBytes {
		return fmt.Errorf("%s is %d bytes, over %d: shorten it", field, len(s), maxBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	return nil
}

// Validate reports what is wrong with the request on its own (the sign-off
// checks it against its state too).
func (r DecideRequest) Validate() error {
	if err := checkRequest(r, r.Reviewer, r.ClientIdentity); err != nil {
		return err
	}
	switch r.Decision {
	case DecisionAccepted:
		if r.FinalAnswer != "" {
			return errors.New("final_answer is set on an accepted cell: an accepted cell keeps the model's answer (decide edited to change it)")
		}
	case DecisionEdited:
		if strings.TrimSpace(r.FinalAnswer) == "" {
			return errors.New("final_answer is empty: an edited cell needs the answer that replaces the model's")
		}
		if strings.TrimSpace(r.Reason) == "" {
			return errors.New("reason is empty: say why the answer was edited")
		}
	case DecisionRejected:
		if strings.TrimSpace(r.Reason) == "" {
			return errors.New("reason is empty: say why the answer is rejected")
		}
	}
	if err := checkText("final_answer", r.FinalAnswer, MaxFinalAnswerBytes); err != nil {
		return err
	}
	if err := checkText("reason", r.Reason, MaxReasonBytes); err != nil {
		return err
	}
	return checkText("comment", r.Comment, MaxCommentBytes)
}

// Validate reports what is wrong with the request on its own.
func (r SignOffRequest) Validate() error {
	if err := checkRequest(r, r.Reviewer, r.ClientIdentity); err != nil {
		return err
	}
	return checkText("comment", r.Comment, MaxCommentBytes)
}

// Validate reports what is wrong with the request on its own.
func (r ReopenRequest) Validate() error {
	if err := checkRequest(r, r.Reviewer, r.ClientIdentity); err != nil {
		return err
	}
	if strings.TrimSpace(r.Reason) == "" {
		return errors.New("reason is empty: say why the cell is reopened")
	}
	return checkText("reason", r.Reason, MaxReasonBytes)
}
