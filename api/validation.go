package api

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memagent/memagent/internal/contract"
)

// ValidateName is the registered name of Validate, the workflow that
// validates a finished batch or review: it draws a stratified random
// sample of its cells with a recorded seed, waits for people's blind
// decisions on them, and reports precision, elusion, richness and recall
// with exact confidence intervals (docs/VALIDATION.md).
const ValidateName = "memagent.Validate"

// ValidationSuffix ends the workflow id of a validation: the id of the
// batch or review, then this suffix.
const ValidationSuffix = ".validate"

// ValidationWorkflowID is the workflow id of the validation of subject.
func ValidationWorkflowID(subject string) string { return subject + ValidationSuffix }

// Updates and queries of Validate.
const (
	// ValidationDecideUpdate records a reviewer's decision on a sampled
	// cell (a ValidationDecision); it returns the ValidationView as the
	// reviewer then sees it.
	ValidationDecideUpdate = "memagent.validation-decide"
	// ValidationRevealUpdate shows a reviewer the model's answer of a
	// sampled cell (a ValidationReveal), and records that they saw it: in
	// blind mode they can no longer decide that cell. It returns the
	// ValidationCell with the model's answer.
	ValidationRevealUpdate = "memagent.validation-reveal"
	// ValidationFinishUpdate signs the validation off (a
	// ValidationFinish) once every sampled cell is decided: the workflow
	// writes its report and completes with it (ValidationReport).
	ValidationFinishUpdate = "memagent.validation-finish"
	// ValidationExtendUpdate grows the sample (a ValidationExtend) for a
	// narrower margin or a larger sample a stratum, taking in each
	// stratum the next cells of the same draw: what was decided stays,
	// and a redraw from the seed gives the whole sample. It returns the
	// ValidationView as the reviewer then sees it.
	ValidationExtendUpdate = "memagent.validation-extend"
	// ValidationQuery takes a reviewer's name ("" for none) and returns
	// the ValidationView: the sample (without the model's answers the
	// reviewer has not revealed, in blind mode) and the figures so far.
	ValidationQuery = "memagent.validation"
)

// Strata of a validation: a cell the model answered, or one it found no
// answer for.
const (
	StratumAnswered = "answered"
	StratumNotFound = "not_found"
)

// Verdicts of a ValidationDecision. On an answered cell: the answer is
// right, or wrong (then HasAnswer says whether the document holds another
// one). On a not-found cell: the document holds no answer, or holds one
// the model missed.
const (
	VerdictRight     = "right"
	VerdictWrong     = "wrong"
	VerdictNoAnswer  = "no_answer"
	VerdictHasAnswer = "has_answer"
)

// Figures a threshold can bound.
const (
	FigurePrecision = "precision"
	FigureElusion   = "elusion"
	FigureRichness  = "richness"
	FigureRecall    = "recall"
)

// Methods the report names for its intervals.
const (
	MethodClopperPearson = "Clopper–Pearson exact interval"
	MethodRecall         = "Bonferroni combination of Clopper–Pearson intervals over the strata (after Losey's ei-Recall; Webber 2013)"
	// MethodStratified names the overall figures' method when there is
	// more than one question (internal/validation's Stratified).
	MethodStratified = "stratified estimate weighted by the strata's populations; MOVER interval over the strata's Clopper–Pearson intervals (Zou & Donner 2008; Zou, Huang & Zhang 2009), recall by Bonferroni over its two sums"
	// MethodPooled names the overall figures' method of a validation that
	// started before stratified estimates (the strata's decisions pooled).
	MethodPooled = "questions pooled (right only when every stratum is sampled at the same fraction)"
)

// Bounds of a validation. A validation runs as one execution (it does
// not continue as new), and Temporal bounds the Updates one execution
// takes (history.maxTotalUpdates, 2,000 by default): MaxValidationEntries
// accepted Updates in all, the last kept for the sign-off, and a sample of
// at most MaxValidationSample cells, so that every cell can be decided
// and some revealed.
const (
	MaxValidationThresholds = 20
	MaxValidationSample     = 1500
	MaxValidationEntries    = 1900
)

// ValidationThreshold is a pass mark set before sampling. Op ">=" passes
// when the figure's lower bound is at least Value ("recall's lower bound ≥
// 0.75"); "<=" when its upper bound is at most Value ("elusion's upper
// bound ≤ 0.05"). Question, when set, applies it to that question's
// figures; otherwise to the overall ones.
type ValidationThreshold struct {
	Figure   string  `json:"figure" contract:"enum=precision|elusion|richness|recall"`
	Op       string  `json:"op" contract:"enum=>=|<="`
	Value    float64 `json:"value"`
	Question string  `json:"question,omitempty" contract:"maxlen=2000"`
}

// String is the threshold as the CLI takes it: "recall>=0.75".
func (t ValidationThreshold) String() string {
	s := fmt.Sprintf("%s%s%g", t.Figure, t.Op, t.Value)
	if t.Question != "" {
		s += " (" + t.Question + ")"
	}
	return s
}

// ParseValidationThreshold reads "recall>=0.75" or "elusion<=0.05".
func ParseValidationThreshold(s string) (ValidationThreshold, error) {
	for _, op := range []string{">=", "<="} {
		if i := strings.Index(s, op); i > 0 {
			var t ValidationThreshold
			t.Figure, t.Op = strings.TrimSpace(s[:i]), op
			if _, err := fmt.Sscanf(strings.TrimSpace(s[i+2:]), "%g", &t.Value); err != nil {
				return t, fmt.Errorf("threshold %q: the value is not a number: write it as recall>=0.75", s)
			}
			return t, t.check()
		}
	}
	return ValidationThreshold{}, fmt.Errorf("threshold %q: write it as FIGURE>=VALUE or FIGURE<=VALUE (recall>=0.75)", s)
}

func (t ValidationThreshold) check() error {
	switch t.Figure {
	case FigurePrecision, FigureElusion, FigureRichness, FigureRecall:
	default:
		return fmt.Errorf("threshold figure %q: one of precision, elusion, richness, recall", t.Figure)
	}
	if t.Op != ">=" && t.Op != "<=" {
		return fmt.Errorf("threshold op %q: >= or <=", t.Op)
	}
	if !(t.Value >= 0 && t.Value <= 1) {
		return fmt.Errorf("threshold %s: the value is a proportion between 0 and 1", t)
	}
	return nil
}

// ValidateInput starts a validation of a completed batch or review.
type ValidateInput struct {
	// Batch or Review is the workflow id of what is validated: exactly
	// one, completed.
	Batch  string `json:"batch,omitempty" contract:"maxlen=1000"`
	Review string `json:"review,omitempty" contract:"maxlen=1000"`
	// Confidence is the confidence level of every interval (default
	// 0.95).
	Confidence float64 `json:"confidence,omitempty"`
	// Margin is the margin of error each stratum's sample is sized for
	// (default 0.1); SampleSize, when set, is the size of every stratum's
	// sample instead (a stratum smaller than it is refused).
	Margin     float64 `json:"margin,omitempty"`
	SampleSize int     `json:"sample_size,omitempty" contract:"min=0,max=1500"`
	// Thresholds are the pass marks, set before sampling.
	Thresholds []ValidationThreshold `json:"thresholds,omitempty" contract:"maxitems=20"`
	// Blind (default true) refuses a decision on a cell whose model
	// answer the reviewer revealed.
	Blind *bool `json:"blind,omitempty"`
	// FourEyes has the validation signed off by a reviewer who decided
	// none of its cells.
	FourEyes bool `json:"four_eyes,omitempty"`
	// Seed draws the sample; default the validation's workflow id. It is
	// recorded in the report, so anyone can redraw the sample.
	Seed string `json:"seed,omitempty" contract:"maxlen=200"`
	// NotifyURL, when this validation marks a gated batch's report final
	// or validation_failed (ValidationGate), gets a POST of the batch's
	// ChangeNotification again with the report's new state, as the
	// batch's notify_url does (the same rules), under an Idempotency-Key
	// of its own: the batch's key followed by "/validation". A gated batch
	// that notified sets its own notify_url here as it starts its
	// validation. The URL may hold a token: only its scheme and host are
	// ever logged or shown.
	NotifyURL string `json:"notify_url,omitempty" contract:"maxlen=2048"`
}

// DefaultValidationMargin is a validation's margin of error by default.
const DefaultValidationMargin = 0.1

// Subject is the workflow id of the batch or review, and its kind.
func (in ValidateInput) Subject() (id, kind string) {
	if in.Review != "" {
		return in.Review, SubjectReview
	}
	return in.Batch, SubjectBatch
}

// IsBlind reports whether decisions are blind (the default).
func (in ValidateInput) IsBlind() bool { return in.Blind == nil || *in.Blind }

// WithDefaults fills the defaults; deterministic. The seed's default
// needs the workflow id, so the workflow fills it.
func (in ValidateInput) WithDefaults() ValidateInput {
	if in.Confidence == 0 {
		in.Confidence = 0.95
	}
	if in.Margin == 0 && in.SampleSize == 0 {
		in.Margin = DefaultValidationMargin
	}
	return in
}

// Validate reports input that can never succeed.
func (in ValidateInput) Validate() error {
	//workflowcheck:ignore
	if err := contract.Check(in); err != nil {
		return err
	}
	switch {
	case in.Review == "" && in.Batch == "":
		return errors.New("neither batch nor review: name the workflow id of the finished batch (or review) to validate")
	case in.Review != "" && in.Batch != "":
		return errors.New("both batch and review: a validation validates one of them")
	case in.Confidence != 0 && !(in.Confidence > 0 && in.Confidence < 1):
		return fmt.Errorf("confidence %v is not between 0 and 1 (for 95%% give 0.95)", in.Confidence)
	case in.Margin != 0 && !(in.Margin > 0 && in.Margin < 0.5):
		return fmt.Errorf("margin %v is not between 0 and 0.5 (for ±10%% give 0.1)", in.Margin)
	case in.Margin != 0 && in.SampleSize != 0:
		return errors.New("both margin and sample_size: give one of them")
	case len(in.Thresholds) > MaxValidationThresholds:
		return fmt.Errorf("%d thresholds, over %d", len(in.Thresholds), MaxValidationThresholds)
	case in.NotifyURL != "" && in.Review != "":
		return errors.New("notify_url with a review: only a batch's report is gated and notified; leave notify_url out")
	}
	if in.NotifyURL != "" {
		if err := CheckNotifyURL(in.NotifyURL); err != nil {
			return err
		}
	}
	for _, t := range in.Thresholds {
		if err := t.check(); err != nil {
			return err
		}
	}
	return nil
}

// ValidationExtend is the argument of ValidationExtendUpdate: the new
// margin of error (every stratum's sample grows to the size for it at the
// validation's confidence) or the new sample size a stratum (a stratum
// smaller than it is then taken whole). Exactly one of them; a stratum
// whose sample is that large already keeps it.
type ValidationExtend struct {
	// Margin is the new margin of error: every stratum's sample grows to
	// the size for it at the validation's confidence.
	Margin float64 `json:"margin,omitempty"`
	// SampleSize is the new sample size a stratum, instead (a smaller
	// stratum is taken whole).
	SampleSize int    `json:"sample_size,omitempty" contract:"min=0,max=1500"`
	Comment    string `json:"comment,omitempty" contract:"maxlen=4000"`
	// Reviewer and ClientIdentity as in a sign-off's DecideRequest.
	Reviewer       string `json:"reviewer"`
	ClientIdentity string `json:"client_identity"`
}

// Validate reports a request that can never be accepted.
func (r ValidationExtend) Validate() error {
	if err := checkRequest(r, r.Reviewer, r.ClientIdentity); err != nil {
		return err
	}
	switch {
	case r.Margin == 0 && r.SampleSize == 0:
		return errors.New("neither margin nor sample_size: give the new margin of error, or the new sample size a stratum")
	case r.Margin != 0 && r.SampleSize != 0:
		return errors.New("both margin and sample_size: give one of them")
	case r.Margin != 0 && !(r.Margin > 0 && r.Margin < 0.5):
		return fmt.Errorf("margin %v is not between 0 and 0.5 (for ±5%% give 0.05)", r.Margin)
	}
	return nil
}

// ValidationGrowth is one stratum's sample grown by an extension: from
// From cells to To (the stratum's sample is then its draw's first To
// cells).
type ValidationGrowth struct {
	Question string `json:"question"`
	Stratum  string `json:"stratum"`
	From     int    `json:"from"`
	To       int    `json:"to"`
}

// ValidationDecision is the argument of ValidationDecideUpdate: what the
// reviewer found true of a sampled cell.
type ValidationDecision struct {
	Cell string `json:"cell" contract:"required,maxlen=200"`
	// Verdict is right or wrong on an answered cell, no_answer or
	// has_answer on a not-found one.
	Verdict string `json:"verdict" contract:"enum=right|wrong|no_answer|has_answer"`
	// HasAnswer, on a wrong answer, says the document holds another
	// (right) answer; Answer and Page are that answer and its page.
	HasAnswer bool   `json:"has_answer,omitempty"`
	Answer    string `json:"answer,omitempty" contract:"maxlen=4000"`
	Page      int    `json:"page,omitempty" contract:"min=0"`
	Comment   string `json:"comment,omitempty" contract:"maxlen=4000"`
	// Reviewer and ClientIdentity as in a sign-off's DecideRequest.
	Reviewer       string `json:"reviewer"`
	ClientIdentity string `json:"client_identity"`
}

// Validate reports a decision that can never be accepted.
func (r ValidationDecision) Validate() error {
	return checkRequest(r, r.Reviewer, r.ClientIdentity)
}

// Holds reports whether the decision says the document holds an answer.
func (r ValidationDecision) Holds() bool {
	return r.Verdict == VerdictRight || r.Verdict == VerdictHasAnswer || (r.Verdict == VerdictWrong && r.HasAnswer)
}

// ValidationReveal is the argument of ValidationRevealUpdate.
type ValidationReveal struct {
	Cell           string `json:"cell" contract:"required,maxlen=200"`
	Reviewer       string `json:"reviewer"`
	ClientIdentity string `json:"client_identity"`
}

// Validate reports a request that can never be accepted.
func (r ValidationReveal) Validate() error { return checkRequest(r, r.Reviewer, r.ClientIdentity) }

// ValidationFinish is the argument of ValidationFinishUpdate.
type ValidationFinish struct {
	Comment        string `json:"comment,omitempty" contract:"maxlen=4000"`
	Reviewer       string `json:"reviewer"`
	ClientIdentity string `json:"client_identity"`
}

// Validate reports a request that can never be accepted.
func (r ValidationFinish) Validate() error { return checkRequest(r, r.Reviewer, r.ClientIdentity) }

// ValidationCell is one sampled cell.
type ValidationCell struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Document string `json:"document,omitempty"`
	Stratum  string `json:"stratum"`
	// AnswerPages cites the model's answer's page (first for the desk to
	// show); blind mode hides it with the answer.
	AnswerPages string `json:"answer_pages,omitempty"`
	// Page is the page of Document the desk shows first: the first page
	// the model's answer cites, 0 when it cites none (a not-found cell:
	// the desk starts at page 1). Blind mode keeps it: it names where
	// to look, not what the model answered.
	Page int `json:"page,omitempty"`
	// ModelAnswer is shown only when the view's reviewer revealed it, or
	// the validation is not blind, or it is finished.
	ModelAnswer string `json:"model_answer,omitempty"`
	Revealed    bool   `json:"revealed,omitempty"`
	// Decision is the cell's decision that counts (the latest), nil while
	// undecided.
	Decision *ValidationEntry `json:"decision,omitempty"`
}

// ValidationStratum is one stratum of one question: its population, its
// hash and its sample.
type ValidationStratum struct {
	Question       string   `json:"question"`
	Stratum        string   `json:"stratum"`
	Population     int      `json:"population"`
	PopulationHash string   `json:"population_hash"`
	Sampled        []string `json:"sampled"`
}

// ValidationEntry is one accepted Update of a validation: its audit log's
// line.
type ValidationEntry struct {
	Seq    int    `json:"seq"`
	Action string `json:"action"` // decide, reveal, extend or finish
	Cell   string `json:"cell,omitempty"`
	// The decision (decide).
	Verdict   string `json:"verdict,omitempty"`
	HasAnswer bool   `json:"has_answer,omitempty"`
	Answer    string `json:"answer,omitempty"`
	Page      int    `json:"page,omitempty"`
	Comment   string `json:"comment,omitempty"`
	// The extension (extend): the margin or sample size asked, and each
	// stratum it grew.
	Margin     float64            `json:"margin,omitempty"`
	SampleSize int                `json:"sample_size,omitempty"`
	Grown      []ValidationGrowth `json:"grown,omitempty"`
	// Who, when, through which Update.
	Reviewer       string    `json:"reviewer"`
	ClientIdentity string    `json:"client_identity"`
	At             time.Time `json:"at"`
	UpdateID       string    `json:"update_id,omitempty"`
}

// ValidationInterval is one figure with its interval.
type ValidationInterval struct {
	Estimate float64 `json:"estimate"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	// HalfWidth is (Upper − Lower)/2; WithinMargin says it is at most
	// the view's StopMargin.
	HalfWidth    float64 `json:"half_width"`
	WithinMargin bool    `json:"within_margin,omitempty"`
}

// ValidationFigures are a population's figures (one question's, or
// overall), each with its interval at Confidence; Error says why there
// are none yet (a stratum with no decision).
type ValidationFigures struct {
	Question        string             `json:"question,omitempty"`
	Confidence      float64            `json:"confidence"`
	Answered        int                `json:"answered"`
	NotFound        int                `json:"not_found"`
	AnsweredSampled int                `json:"answered_sampled"`
	NotFoundSampled int                `json:"not_found_sampled"`
	Right           int                `json:"right"`
	WrongHeld       int                `json:"wrong_held"`
	Missed          int                `json:"missed"`
	Precision       ValidationInterval `json:"precision"`
	Elusion         ValidationInterval `json:"elusion"`
	Richness        ValidationInterval `json:"richness"`
	Recall          ValidationInterval `json:"recall"`
	RecallDefined   bool               `json:"recall_defined"`
	Error           string             `json:"error,omitempty"`
	// WithinMargin says every figure here (recall where defined) has its
	// interval's half-width within the view's StopMargin.
	WithinMargin bool `json:"within_margin,omitempty"`
}

// ValidationOutcome is a threshold's pass or fail.
type ValidationOutcome struct {
	Threshold ValidationThreshold `json:"threshold"`
	// Bound is the interval's bound the threshold compared.
	Bound  float64 `json:"bound"`
	Passed bool    `json:"passed"`
	// Why explains a fail that is not a comparison (no figures yet,
	// recall undefined, no such question).
	Why string `json:"why,omitempty"`
}

// ValidationView is what ValidationQuery returns.
type ValidationView struct {
	WorkflowID string  `json:"workflow_id"`
	Kind       string  `json:"kind"`
	Subject    string  `json:"subject"`
	SubjectRun string  `json:"subject_run_id"`
	Blind      bool    `json:"blind"`
	FourEyes   bool    `json:"four_eyes"`
	Confidence float64 `json:"confidence"`
	Margin     float64 `json:"margin,omitempty"`
	SampleSize int     `json:"sample_size,omitempty"`
	Seed       string  `json:"seed"`
	// PopulationHash is PopulationHash over every cell of the subject.
	PopulationHash string              `json:"population_hash"`
	Strata         []ValidationStratum `json:"strata"`
	Cells          []ValidationCell    `json:"cells"`
	Pending        int                 `json:"pending"`
	Overall        ValidationFigures   `json:"overall"`
	Questions      []ValidationFigures `json:"questions"`
	Thresholds     []ValidationOutcome `json:"thresholds"`
	Passed         bool                `json:"passed"`
	Finished       *ValidationEntry    `json:"finished,omitempty"`
	ReportURI      string              `json:"report_uri,omitempty"`
	HTMLURI        string              `json:"html_uri,omitempty"`
	// IntervalMethod names the method of precision's and elusion's
	// intervals, CombinedMethod that of richness's and recall's.
	IntervalMethod string            `json:"interval_method"`
	CombinedMethod string            `json:"combined_method"`
	Entries        []ValidationEntry `json:"entries,omitempty"`
	// OverallMethod names the overall figures' method (MethodStratified,
	// or MethodPooled for a validation from before it); with one
	// question the overall figures are the question's.
	OverallMethod string `json:"overall_method,omitempty"`
	// StopMargin is the margin the figures' half-widths are held to: the
	// latest extension's margin, else the validation's. WithinMargin says
	// every figure, overall and per question, is within it: the team
	// may stop sampling (docs/VALIDATION.md says what stopping on seeing
	// the intervals does to their coverage).
	StopMargin   float64 `json:"stop_margin,omitempty"`
	WithinMargin bool    `json:"within_margin,omitempty"`
	// Extending says an extension is drawing its cells: the sign-off
	// waits for it.
	Extending bool `json:"extending,omitempty"`
}

// ValidationReport is Validate's result and the JSON it writes: the whole
// view, with every model answer and every entry of the audit log.
type ValidationReport = ValidationView
