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
	"github.com/memagent/memagent/internal/validation"
)

// Validate validates a completed batch or review: it draws a stratified
// random sample of its cells (per question, answered and not found) with a
// recorded seed over a recorded population hash, waits for people's
// decisions on the sample, and, once signed off, writes a report with
// precision, elusion, richness and recall, each with its confidence
// interval (internal/validation), and pass or fail against the thresholds
// set at its start. Its workflow id is api.ValidationWorkflowID of the
// batch or review.
//
// Invariants, each enforced by an Update's validator, so that a refused
// request never reaches the history:
//   - a decision names a sampled cell, with a verdict of its stratum
//     (right or wrong on an answered cell, no_answer or has_answer on a
//     not-found one);
//   - a reviewer decides a cell once; another reviewer's later decision
//     supersedes it in the figures, and both stay in the audit log;
//   - blind (the default): a reviewer who revealed a cell's model answer
//     (api.ValidationRevealUpdate, recorded) cannot decide that cell;
//   - an extension (api.ValidationExtendUpdate) takes, in each stratum it
//     grows, the next cells of the same draw, so what was decided stays
//     and a redraw from the seed gives the whole sample; one extension
//     draws at a time;
//   - the validation is signed off (api.ValidationFinishUpdate) only when
//     no extension is drawing and every sampled cell is decided, and,
//     with four eyes, by a reviewer who decided none of them.
//
// It does not continue as new: the sample is bounded
// (api.MaxValidationSample cells), and so are the Updates it accepts
// (api.MaxValidationEntries; a reviewer decides and reveals a cell once
// each).
func Validate(ctx workflow.Context, input converter.RawValue) (_ *api.ValidationReport, err error) {
	edge := newBoundary(ctx)
	v := &validateRun{ctx: ctx, revealed: map[string]bool{}, decided: map[string]bool{}, latest: map[string]int{}}
	defer func() {
		if st := edge.closedStatus(err); st != "" && st != api.StageDone {
			_ = workflow.UpsertTypedSearchAttributes(ctx, api.StatusKey.ValueSet(st))
		}
	}()
	if err := workflow.SetQueryHandler(ctx, api.ValidationQuery, func(reviewer string) (api.ValidationView, error) {
		if v.loaded == nil {
			return api.ValidationView{}, errors.New("the validation is still drawing its sample: ask again in a moment")
		}
		return v.view(reviewer, false), nil
	}); err != nil {
		return nil, err
	}
	var in api.ValidateInput
	if err := edge.decode(input, &in); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, badInput(err)
	}
	v.in = in.WithDefaults()
	v.info = workflow.GetInfo(ctx)
	// Overall figures stratified, and extensions (VERSIONS.md): a run
	// from before pools the questions and takes no extension.
	v.stratified = workflow.GetVersion(ctx, ValidationStratifiedChange, workflow.DefaultVersion, 1) >= 1
	v.subject, v.kind = v.in.Subject()
	if want := api.ValidationWorkflowID(v.subject); v.info.WorkflowExecution.ID != want {
		return nil, badInput(fmt.Errorf("a validation of %s runs as workflow %q, not %q: start it under that id", v.subject, want, v.info.WorkflowExecution.ID))
	}
	if v.in.Seed == "" {
		v.in.Seed = v.info.WorkflowExecution.ID
	}
	// The handlers are registered before the sample is drawn, so that an
	// Update meanwhile is refused by its validator ("still drawing"),
	// never dropped as unknown.
	if err := v.handlers(); err != nil {
		return nil, err
	}
	var out actwire.LoadValidationOutput
	actx := workflow.WithActivityOptions(ctx, activityOptions(5*time.Minute, 0, temporal.Priority{}, "draw the sample of "+v.kind+" "+v.subject))
	if err := actwire.LoadValidation.Execute(actx, actwire.LoadValidationInput{
		WorkflowID: v.subject, Kind: v.kind, Seed: v.in.Seed, Confidence: v.in.Confidence, Margin: v.in.Margin, SampleSize: v.in.SampleSize,
	}).Get(ctx, &out); err != nil {
		return nil, stageError("draw the sample", err)
	}
	v.loaded = &out
	v.stopMargin = v.in.Margin
	v.details()
	if err := workflow.Await(ctx, func() bool { return v.finished != nil }); err != nil {
		return nil, err
	}
	rep := v.view("", true)
	var w actwire.WriteValidationOutput
	wctx := workflow.WithActivityOptions(ctx, activityOptions(2*time.Minute, 0, temporal.Priority{}, "write the validation report"))
	if err := actwire.WriteValidation.Execute(wctx, actwire.WriteValidationInput{Prefix: out.Subject.Prefix, Report: rep}).Get(ctx, &w); err != nil {
		return nil, stageError("write the validation report", err)
	}
	v.reportURI, v.htmlURI = w.JSONURI, w.HTMLURI
	v.notifyGate(w.Notification)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}
	rep = v.view("", true)
	v.details()
	return &rep, nil
}

// ValidationGateNotifyChange gates the POST of a gated report's marking
// to the validation's notify_url (see VERSIONS.md).
const ValidationGateNotifyChange = "validation-gate-notify"

// notifyGate POSTs n, the batch's notification with the state this
// validation marked its report with (WriteValidation's, nil when it
// marked nothing or the batch notified nothing), to the validation's
// notify_url, under an Idempotency-Key of its own (actwire.GateNotifyKey),
// with the batch's notification's timeouts. Like the batch's, a
// notification that is not delivered is logged and fails nothing: the
// report is marked already.
func (v *validateRun) notifyGate(n *api.ChangeNotification) {
	if n == nil || n.Validation == nil || v.in.NotifyURL == "" {
		return
	}
	if workflow.GetVersion(v.ctx, ValidationGateNotifyChange, workflow.DefaultVersion, 1) < 1 {
		return
	}
	// The URL stays out of the summary: it may hold a token.
	opts := activityOptions(notifyAttemptTimeout, 0, temporal.Priority{}, "notify the report's "+n.Validation.State)
	opts.ScheduleToCloseTimeout = notifyTotalTimeout
	actx := workflow.WithActivityOptions(v.ctx, opts)
	if err := actwire.NotifyChanges.Execute(actx, actwire.NotifyInput{URL: v.in.NotifyURL, Notification: *n, IdempotencyKey: actwire.GateNotifyKey(*n)}).Get(v.ctx); err != nil {
		workflow.GetLogger(v.ctx).Warn("notify_url was not notified of the report's state", "notify_host", api.NotifyHost(v.in.NotifyURL), "state", n.Validation.State, "err", err)
	}
}

// ValidationStratifiedChange gates stratified overall figures and
// extensions of a validation's sample (see VERSIONS.md).
const ValidationStratifiedChange = "validation-stratified"

// validateRun is one run of Validate: everything its handlers change.
type validateRun struct {
	stratified    bool    // ValidationStratifiedChange taken
	extending     bool    // an extension is drawing
	stopMargin    float64 // the margin the figures' half-widths are held to
	ctx           workflow.Context
	in            api.ValidateInput
	info          *workflow.Info
	subject, kind string
	loaded        *actwire.LoadValidationOutput
	entries       []api.ValidationEntry
	revealed      map[string]bool // reviewer "\x00" cell
	decided       map[string]bool // reviewer "\x00" cell
	latest        map[string]int  // cell → index of its decision that counts
	finished      *api.ValidationEntry
	reportURI     string
	htmlURI       string
}

func pair(reviewer, cell string) string { return reviewer + "\x00" + cell }

func (v *validateRun) handlers() error {
	if err := workflow.SetUpdateHandlerWithOptions(v.ctx, api.ValidationDecideUpdate, func(ctx workflow.Context, r api.ValidationDecision) (api.ValidationView, error) {
		v.record(ctx, api.ValidationEntry{
			Action: "decide", Cell: r.Cell, Verdict: r.Verdict, HasAnswer: r.HasAnswer, Answer: r.Answer, Page: r.Page, Comment: r.Comment,
			Reviewer: r.Reviewer, ClientIdentity: r.ClientIdentity,
		})
		v.decided[pair(r.Reviewer, r.Cell)] = true
		v.latest[r.Cell] = len(v.entries) - 1
		v.details()
		return v.view(r.Reviewer, false), nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r api.ValidationDecision) error { return v.checkDecide(r) }}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(v.ctx, api.ValidationRevealUpdate, func(ctx workflow.Context, r api.ValidationReveal) (api.ValidationCell, error) {
		if !v.revealed[pair(r.Reviewer, r.Cell)] {
			v.record(ctx, api.ValidationEntry{Action: "reveal", Cell: r.Cell, Reviewer: r.Reviewer, ClientIdentity: r.ClientIdentity})
			v.revealed[pair(r.Reviewer, r.Cell)] = true
		}
		return v.shown(*v.cell(r.Cell), r.Reviewer, false), nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r api.ValidationReveal) error { return v.checkReveal(r) }}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(v.ctx, api.ValidationExtendUpdate, v.extend,
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r api.ValidationExtend) error { return v.checkExtend(r) }}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(v.ctx, api.ValidationFinishUpdate, func(ctx workflow.Context, r api.ValidationFinish) (api.ValidationView, error) {
		v.record(ctx, api.ValidationEntry{Action: "finish", Comment: r.Comment, Reviewer: r.Reviewer, ClientIdentity: r.ClientIdentity})
		e := v.entries[len(v.entries)-1]
		v.finished = &e
		return v.view(r.Reviewer, true), nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r api.ValidationFinish) error { return v.checkFinish(r) }})
}

func (v *validateRun) record(ctx workflow.Context, e api.ValidationEntry) {
	e.Seq = len(v.entries) + 1
	e.At = workflow.Now(ctx).UTC()
	if u := workflow.GetCurrentUpdateInfo(ctx); u != nil {
		e.UpdateID = u.ID
	}
	v.entries = append(v.entries, e)
}

func (v *validateRun) checkOpen() error {
	switch {
	case v.loaded == nil:
		return errors.New("the validation is still drawing its sample: try again in a moment")
	case v.finished != nil:
		return fmt.Errorf("the validation was signed off by %s: its report is final", v.finished.Reviewer)
	}
	return nil
}

func (v *validateRun) cell(id string) *api.ValidationCell {
	for i := range v.loaded.Cells {
		if v.loaded.Cells[i].ID == id {
			return &v.loaded.Cells[i]
		}
	}
	return nil
}

func (v *validateRun) notSampled(id string) error {
	return fmt.Errorf("cell %q is not in the validation's sample: decide only the sampled cells (starter validate status %s lists them)", id, v.info.WorkflowExecution.ID)
}

func (v *validateRun) checkDecide(r api.ValidationDecision) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := v.checkOpen(); err != nil {
		return err
	}
	c := v.cell(r.Cell)
	if c == nil {
		return v.notSampled(r.Cell)
	}
	if err := v.checkRoom(); err != nil {
		return err
	}
	switch {
	case c.Stratum == api.StratumAnswered && r.Verdict != api.VerdictRight && r.Verdict != api.VerdictWrong:
		return fmt.Errorf("cell %s was answered by the model: decide it right or wrong (--right, --wrong), not %s", c.ID, r.Verdict)
	case c.Stratum == api.StratumNotFound && r.Verdict != api.VerdictNoAnswer && r.Verdict != api.VerdictHasAnswer:
		return fmt.Errorf("the model found no answer in cell %s: decide whether the document holds one (--no-answer, --has-answer), not %s", c.ID, r.Verdict)
	case r.HasAnswer && r.Verdict != api.VerdictWrong:
		return errors.New("has_answer goes with a wrong answer only (the document holds another one)")
	case v.decided[pair(r.Reviewer, r.Cell)]:
		return fmt.Errorf("%s decided cell %s already: a reviewer decides a cell once (another reviewer may decide it again)", r.Reviewer, r.Cell)
	case v.in.IsBlind() && v.revealed[pair(r.Reviewer, r.Cell)]:
		return fmt.Errorf("blind review: %s has seen the model's answer of cell %s, so another reviewer decides it", r.Reviewer, r.Cell)
	}
	return nil
}

func (v *validateRun) checkReveal(r api.ValidationReveal) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if v.loaded == nil {
		return errors.New("the validation is still drawing its sample: try again in a moment")
	}
	if v.cell(r.Cell) == nil {
		return v.notSampled(r.Cell)
	}
	if v.revealed[pair(r.Reviewer, r.Cell)] {
		return fmt.Errorf("%s revealed cell %s already: the validation's view (memagent.validation with your name; starter validate status --as) shows its answer", r.Reviewer, r.Cell)
	}
	return v.checkRoom()
}

// checkRoom refuses a decision or reveal past api.MaxValidationEntries,
// keeping the last entry for the sign-off. Only validators call it: a
// refused Update never reaches the history, nor counts towards Temporal's
// bound on an execution's Updates.
func (v *validateRun) checkRoom() error {
	if len(v.entries) >= api.MaxValidationEntries-1 {
		return fmt.Errorf("the validation holds %d entries, its limit: decide the pending cells only, and sign it off", len(v.entries))
	}
	return nil
}

func (v *validateRun) checkFinish(r api.ValidationFinish) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := v.checkOpen(); err != nil {
		return err
	}
	if v.extending {
		return errors.New("an extension is drawing its cells: decide them once it has, then sign the validation off")
	}
	if p := v.pending(); len(p) > 0 {
		shown := p[:min(len(p), 5)]
		more := ""
		if len(p) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(p)-len(shown))
		}
		return fmt.Errorf("%d sampled cells are undecided (%s%s): decide them before signing the validation off", len(p), strings.Join(shown, ", "), more)
	}
	if v.in.FourEyes {
		for _, e := range v.entries {
			if e.Action == "decide" && e.Reviewer == r.Reviewer {
				return fmt.Errorf("four eyes: %s decided cell %s, so a reviewer who decided none signs the validation off", r.Reviewer, e.Cell)
			}
		}
	}
	return nil
}

// pending are the sampled cells no one decided, in sample order.
func (v *validateRun) pending() []string {
	var ids []string
	for _, c := range v.loaded.Cells {
		if _, ok := v.latest[c.ID]; !ok {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// shown is c as reviewer may see it: the model's answer (and its pages)
// only when the validation is not blind, the reviewer revealed it, or all
// is shown (the final report).
func (v *validateRun) shown(c api.ValidationCell, reviewer string, all bool) api.ValidationCell {
	c.Revealed = reviewer != "" && v.revealed[pair(reviewer, c.ID)]
	if !all && v.in.IsBlind() && !c.Revealed {
		c.ModelAnswer, c.AnswerPages = "", ""
	}
	if i, ok := v.latest[c.ID]; ok {
		e := v.entries[i]
		c.Decision = &e
	}
	return c
}

// view is the validation as reviewer sees it (all: the report, with every
// answer and every entry).
func (v *validateRun) view(reviewer string, all bool) api.ValidationView {
	s := v.loaded.Subject
	vw := api.ValidationView{
		WorkflowID: v.info.WorkflowExecution.ID, Kind: v.kind, Subject: v.subject, SubjectRun: s.RunID,
		Blind: v.in.IsBlind(), FourEyes: v.in.FourEyes, Confidence: v.in.Confidence, Margin: v.in.Margin, SampleSize: v.in.SampleSize,
		Seed: v.in.Seed, PopulationHash: v.loaded.PopulationHash, Strata: v.loaded.Strata,
		Pending: len(v.pending()), Finished: v.finished, ReportURI: v.reportURI, HTMLURI: v.htmlURI,
		IntervalMethod: api.MethodClopperPearson, CombinedMethod: api.MethodRecall,
		Cells: make([]api.ValidationCell, 0, len(v.loaded.Cells)), StopMargin: v.stopMargin, Extending: v.extending,
	}
	vw.OverallMethod = api.MethodPooled
	if v.stratified {
		vw.OverallMethod = api.MethodStratified
	}
	for _, c := range v.loaded.Cells {
		vw.Cells = append(vw.Cells, v.shown(c, reviewer, all))
	}
	if all || !vw.Blind {
		vw.Entries = v.entries
	}
	vw.Overall, vw.Questions = v.figures()
	vw.WithinMargin = v.within(&vw.Overall)
	for i := range vw.Questions {
		vw.WithinMargin = v.within(&vw.Questions[i]) && vw.WithinMargin
	}
	vw.Thresholds, vw.Passed = v.thresholds(vw.Overall, vw.Questions)
	return vw
}

// within marks each figure of f whose half-width is within the stop
// margin, and reports whether all of them (recall where defined) are.
func (v *validateRun) within(f *api.ValidationFigures) bool {
	all := f.Error == ""
	for _, iv := range []struct {
		i       *api.ValidationInterval
		counted bool
	}{{&f.Precision, true}, {&f.Elusion, true}, {&f.Richness, true}, {&f.Recall, f.RecallDefined}} {
		iv.i.HalfWidth = (iv.i.Upper - iv.i.Lower) / 2
		iv.i.WithinMargin = f.Error == "" && v.stopMargin > 0 && iv.i.HalfWidth <= v.stopMargin+1e-12
		if iv.counted {
			all = all && iv.i.WithinMargin
		}
	}
	f.WithinMargin = all && v.stopMargin > 0
	return f.WithinMargin
}

// figures are the overall figures and each question's, from the decisions
// that count so far.
func (v *validateRun) figures() (api.ValidationFigures, []api.ValidationFigures) {
	var questions []string
	per := map[string]*validation.Decisions{}
	var all validation.Decisions
	for _, st := range v.loaded.Strata {
		d := per[st.Question]
		if d == nil {
			d = &validation.Decisions{}
			per[st.Question] = d
			questions = append(questions, st.Question)
		}
		if st.Stratum == api.StratumAnswered {
			d.Answered += st.Population
			all.Answered += st.Population
		} else {
			d.NotFound += st.Population
			all.NotFound += st.Population
		}
	}
	for _, c := range v.loaded.Cells {
		i, ok := v.latest[c.ID]
		if !ok {
			continue
		}
		e := v.entries[i]
		for _, d := range []*validation.Decisions{per[c.Question], &all} {
			if c.Stratum == api.StratumAnswered {
				d.AnsweredSampled++
				switch {
				case e.Verdict == api.VerdictRight:
					d.Right++
				case e.HasAnswer:
					d.WrongHeld++
				}
			} else {
				d.NotFoundSampled++
				if e.Verdict == api.VerdictHasAnswer {
					d.Missed++
				}
			}
		}
	}
	qs := make([]api.ValidationFigures, 0, len(questions))
	ds := make([]validation.Decisions, 0, len(questions))
	for _, q := range questions {
		est, err := validation.Estimate(*per[q], v.in.Confidence)
		f := v.estimate(*per[q], est, err)
		f.Question = q
		qs = append(qs, f)
		ds = append(ds, *per[q])
	}
	if !v.stratified {
		est, err := validation.Estimate(all, v.in.Confidence)
		return v.estimate(all, est, err), qs
	}
	// Each stratum by its population (validation.Stratified); a question
	// whose figures cannot be estimated yet holds the overall ones back.
	for _, f := range qs {
		if f.Error != "" {
			return v.estimate(all, validation.Figures{}, fmt.Errorf("question %q: %s", f.Question, f.Error)), qs
		}
	}
	est, err := validation.Stratified(ds, v.in.Confidence)
	return v.estimate(all, est, err), qs
}

// estimate is the figures of d (its counts) with est, or err's reason.
func (v *validateRun) estimate(d validation.Decisions, est validation.Figures, err error) api.ValidationFigures {
	f := api.ValidationFigures{
		Confidence: v.in.Confidence, Answered: d.Answered, NotFound: d.NotFound, AnsweredSampled: d.AnsweredSampled,
		NotFoundSampled: d.NotFoundSampled, Right: d.Right, WrongHeld: d.WrongHeld, Missed: d.Missed,
	}
	if err != nil {
		f.Error = err.Error()
		return f
	}
	iv := func(i validation.Interval) api.ValidationInterval {
		return api.ValidationInterval{Estimate: i.Estimate, Lower: i.Lower, Upper: i.Upper}
	}
	f.Precision, f.Elusion, f.Richness, f.Recall, f.RecallDefined = iv(est.Precision), iv(est.Elusion), iv(est.Richness), iv(est.Recall), est.RecallDefined
	return f
}

// thresholds judges each threshold on the figures (validation.Judge).
func (v *validateRun) thresholds(overall api.ValidationFigures, questions []api.ValidationFigures) ([]api.ValidationOutcome, bool) {
	out := make([]api.ValidationOutcome, 0, len(v.in.Thresholds))
	passed := true
	for _, t := range v.in.Thresholds {
		o := validation.Judge(t, overall, questions)
		passed = passed && o.Passed
		out = append(out, o)
	}
	return out, passed
}

func (v *validateRun) details() {
	if v.finished != nil {
		workflow.SetCurrentDetails(v.ctx, fmt.Sprintf("**signed off** by %s · %d cells sampled", v.finished.Reviewer, len(v.loaded.Cells)))
		return
	}
	workflow.SetCurrentDetails(v.ctx, fmt.Sprintf("**waiting for decisions** · %d of %d sampled cells pending · %s %s",
		len(v.pending()), len(v.loaded.Cells), v.kind, v.subject))
}

// growth is how an extension asking r grows each stratum's sample: to
// the size for r.Margin at the validation's confidence, or to
// r.SampleSize (a smaller stratum whole); a stratum that large already
// keeps its sample. Deterministic, in the strata's order.
func (v *validateRun) growth(r api.ValidationExtend) ([]api.ValidationGrowth, error) {
	var out []api.ValidationGrowth
	for _, st := range v.loaded.Strata {
		want := min(r.SampleSize, st.Population)
		if r.Margin > 0 {
			n, err := validation.SampleSize(st.Population, r.Margin, v.in.Confidence)
			if err != nil {
				return nil, err
			}
			want = n
		}
		if have := len(st.Sampled); want > have {
			out = append(out, api.ValidationGrowth{Question: st.Question, Stratum: st.Stratum, From: have, To: want})
		}
	}
	return out, nil
}

func (v *validateRun) checkExtend(r api.ValidationExtend) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := v.checkOpen(); err != nil {
		return err
	}
	switch {
	case !v.stratified:
		return errors.New("this validation started before samples could be extended: start a new validation with the margin or sample size you want")
	case v.extending:
		return errors.New("an extension is drawing its cells already: try again once it has")
	}
	if err := v.checkRoom(); err != nil {
		return err
	}
	grown, err := v.growth(r)
	if err != nil {
		return err
	}
	if len(grown) == 0 {
		return fmt.Errorf("every stratum's sample is that large already (%d cells in all): give a narrower --margin or a larger --sample", len(v.loaded.Cells))
	}
	added := 0
	for _, g := range grown {
		added += g.To - g.From
	}
	if total := len(v.loaded.Cells) + added; total > api.MaxValidationSample {
		return fmt.Errorf("the sample would grow to %d cells, over %d: give a wider --margin or a smaller --sample", total, api.MaxValidationSample)
	}
	// The extension, every pending cell decided once, and the sign-off
	// must fit in the entries a validation takes.
	if need := len(v.entries) + 1 + len(v.pending()) + added + 1; need > api.MaxValidationEntries {
		return fmt.Errorf("deciding %d more cells would take the validation past its %d entries: give a wider --margin or a smaller --sample", added, api.MaxValidationEntries)
	}
	return nil
}

// extend grows the sample as r asks: it draws the next cells of each
// growing stratum (ExtendValidation, from the run and populations drawn
// from), adds them to the sample and records the extension.
func (v *validateRun) extend(ctx workflow.Context, r api.ValidationExtend) (api.ValidationView, error) {
	if v.extending {
		return api.ValidationView{}, errors.New("an extension is drawing its cells already: try again once it has")
	}
	grown, err := v.growth(r)
	if err != nil {
		return api.ValidationView{}, err
	}
	v.extending = true
	defer func() { v.extending = false }()
	in := actwire.ExtendValidationInput{WorkflowID: v.subject, Kind: v.kind, RunID: v.loaded.Subject.RunID, Seed: v.in.Seed}
	for _, g := range grown {
		st := v.stratum(g.Question, g.Stratum)
		in.Strata = append(in.Strata, actwire.ExtendValidationPart{Question: g.Question, Stratum: g.Stratum, PopulationHash: st.PopulationHash, From: g.From, To: g.To})
	}
	var out actwire.ExtendValidationOutput
	actx := workflow.WithActivityOptions(ctx, activityOptions(5*time.Minute, 0, temporal.Priority{}, "extend the sample of "+v.kind+" "+v.subject))
	if err := actwire.ExtendValidation.Execute(actx, in).Get(ctx, &out); err != nil {
		return api.ValidationView{}, stageError("extend the sample", err)
	}
	// The cells come stratum by stratum, in the growth's order: check
	// them all before the sample changes.
	i := 0
	for _, g := range grown {
		for range g.To - g.From {
			if i >= len(out.Cells) || out.Cells[i].Question != g.Question || out.Cells[i].Stratum != g.Stratum || v.cell(out.Cells[i].ID) != nil {
				return api.ValidationView{}, fmt.Errorf("the extension drew %d cells, not the %s stratum of question %q's %d to %d", len(out.Cells), g.Stratum, g.Question, g.From, g.To)
			}
			i++
		}
	}
	i = 0
	for _, g := range grown {
		st := v.stratum(g.Question, g.Stratum)
		for range g.To - g.From {
			st.Sampled = append(st.Sampled, out.Cells[i].ID)
			i++
		}
	}
	v.loaded.Cells = append(v.loaded.Cells, out.Cells...)
	v.record(ctx, api.ValidationEntry{Action: "extend", Margin: r.Margin, SampleSize: r.SampleSize, Grown: grown, Comment: r.Comment,
		Reviewer: r.Reviewer, ClientIdentity: r.ClientIdentity})
	if r.Margin > 0 {
		v.stopMargin = r.Margin
	}
	v.details()
	return v.view(r.Reviewer, false), nil
}

func (v *validateRun) stratum(question, stratum string) *api.ValidationStratum {
	for i := range v.loaded.Strata {
		if st := &v.loaded.Strata[i]; st.Question == question && st.Stratum == stratum {
			return st
		}
	}
	return nil
}
