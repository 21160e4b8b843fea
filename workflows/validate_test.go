package workflows

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/validation"
)

// validateEnv runs Validate over a batch of one question with ten cells:
// 1–6 answered ("answer N"), 7–10 not found, three of each stratum
// sampled, with fake activities.
type validateEnv struct {
	env      *testsuite.TestWorkflowEnvironment
	loaded   *actwire.LoadValidationInput
	written  *actwire.WriteValidationInput
	extended []actwire.ExtendValidationInput
	// marked is what the fake WriteValidation says it marked the gated
	// report with, and its notification.
	marked       string
	notification *api.ChangeNotification
}

func validateStrata(t *testing.T, in actwire.LoadValidationInput) *actwire.LoadValidationOutput {
	t.Helper()
	out := &actwire.LoadValidationOutput{Subject: api.SignOffSubject{Kind: in.Kind, WorkflowID: in.WorkflowID, RunID: "r1",
		Prefix: "s3://b/batches/" + in.WorkflowID + "/report/validation/"}}
	var all []string
	for _, st := range []struct {
		name string
		ids  []string
	}{{api.StratumAnswered, []string{"1", "2", "3", "4", "5", "6"}}, {api.StratumNotFound, []string{"7", "8", "9", "10"}}} {
		all = append(all, st.ids...)
		sample, hash, err := validation.Draw(in.Seed, st.ids, in.SampleSize)
		if err != nil {
			t.Fatal(err)
		}
		out.Strata = append(out.Strata, api.ValidationStratum{Question: "Q?", Stratum: st.name, Population: len(st.ids), PopulationHash: hash, Sampled: sample})
		for _, id := range sample {
			c := api.ValidationCell{ID: id, Question: "Q?", Stratum: st.name}
			if st.name == api.StratumAnswered {
				c.ModelAnswer, c.AnswerPages = "answer "+id, "p. 1"
			}
			out.Cells = append(out.Cells, c)
		}
	}
	out.PopulationHash, _ = validation.PopulationHash(all)
	return out
}

func newValidateEnv(t *testing.T, batch string) *validateEnv {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	e := &validateEnv{env: s.NewTestWorkflowEnvironment()}
	Register(e.env)
	e.env.RegisterActivityWithOptions(func(ctx context.Context, in actwire.LoadValidationInput) (*actwire.LoadValidationOutput, error) {
		e.loaded = &in
		return validateStrata(t, in), nil
	}, activity.RegisterOptions{Name: actwire.LoadValidationName})
	e.env.RegisterActivityWithOptions(func(ctx context.Context, in actwire.WriteValidationInput) (*actwire.WriteValidationOutput, error) {
		e.written = &in
		return &actwire.WriteValidationOutput{JSONURI: in.Prefix + "report.json", HTMLURI: in.Prefix + "report.html", Gate: e.marked, Notification: e.notification}, nil
	}, activity.RegisterOptions{Name: actwire.WriteValidationName})
	e.env.RegisterActivityWithOptions(func(ctx context.Context, in actwire.ExtendValidationInput) (*actwire.ExtendValidationOutput, error) {
		e.extended = append(e.extended, in)
		out := &actwire.ExtendValidationOutput{}
		for _, p := range in.Strata {
			ids := validateIDs[p.Stratum]
			sample, _, err := validation.Draw(in.Seed, ids, p.To)
			if err != nil {
				return nil, err
			}
			for _, id := range sample[p.From:] {
				out.Cells = append(out.Cells, api.ValidationCell{ID: id, Question: p.Question, Stratum: p.Stratum})
			}
		}
		return out, nil
	}, activity.RegisterOptions{Name: actwire.ExtendValidationName})
	e.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: api.ValidationWorkflowID(batch)})
	return e
}

// validateIDs are validateStrata's strata.
var validateIDs = map[string][]string{api.StratumAnswered: {"1", "2", "3", "4", "5", "6"}, api.StratumNotFound: {"7", "8", "9", "10"}}

func (e *validateEnv) update(t *testing.T, name string, arg any, refused *string) {
	t.Helper()
	e.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { *refused = err.Error() },
		OnComplete: func(_ any, err error) {
			if err != nil {
				t.Errorf("%s completed with %v", name, err)
			}
		},
	}, arg)
}

func (e *validateEnv) view(t *testing.T, reviewer string) api.ValidationView {
	t.Helper()
	v, err := e.env.QueryWorkflow(api.ValidationQuery, reviewer)
	if err != nil {
		t.Fatal(err)
	}
	var vw api.ValidationView
	if err := v.Get(&vw); err != nil {
		t.Fatal(err)
	}
	return vw
}

func vdecide(cell, verdict, reviewer string) api.ValidationDecision {
	return api.ValidationDecision{Cell: cell, Verdict: verdict, Reviewer: reviewer, ClientIdentity: "test@host"}
}

// TestValidateBlindDecisions walks a validation from its draw to its
// report: the sample is the one validation.Draw gives for the recorded
// seed (the workflow id by default); every refusal the issue names is a
// validator's (unknown or unsampled cell, a verdict of the other stratum,
// a second decision by one reviewer, a blind reviewer who saw the model's
// answer, a sign-off with cells pending or by a reviewer who decided,
// with four eyes); the figures are validation.Estimate's of the decisions
// that count; and the thresholds pass or fail on the intervals' bounds.
func TestValidateBlindDecisions(t *testing.T) {
	const batch = "batch-1"
	e := newValidateEnv(t, batch)
	in := api.ValidateInput{Batch: batch, SampleSize: 3, FourEyes: true, Thresholds: []api.ValidationThreshold{
		{Figure: api.FigurePrecision, Op: ">=", Value: 0.005}, {Figure: api.FigureRecall, Op: ">=", Value: 0.99},
	}}
	want := validateStrata(t, actwire.LoadValidationInput{WorkflowID: batch, Kind: api.SubjectBatch, Seed: api.ValidationWorkflowID(batch), SampleSize: 3})
	answered, notFound := want.Strata[0].Sampled, want.Strata[1].Sampled
	unsampled := ""
	for _, id := range []string{"1", "2", "3", "4", "5", "6"} {
		if !slices.Contains(answered, id) {
			unsampled = id
		}
	}
	a0 := answered[0]
	type step struct {
		name, update string
		arg          any
		refused      string
	}
	wrongHeld := vdecide(answered[1], api.VerdictWrong, "alice")
	wrongHeld.HasAnswer, wrongHeld.Answer, wrongHeld.Page = true, "the right answer", 4
	steps := []step{
		{"unknown cell", api.ValidationDecideUpdate, vdecide("99", api.VerdictRight, "alice"), `cell "99" is not in the validation's sample`},
		{"cell not sampled", api.ValidationDecideUpdate, vdecide(unsampled, api.VerdictRight, "alice"), "is not in the validation's sample"},
		{"alice reveals", api.ValidationRevealUpdate, api.ValidationReveal{Cell: a0, Reviewer: "alice", ClientIdentity: "c"}, ""},
		{"alice reveals again", api.ValidationRevealUpdate, api.ValidationReveal{Cell: a0, Reviewer: "alice", ClientIdentity: "c"}, "alice revealed cell " + a0 + " already"},
		{"alice decides what she saw", api.ValidationDecideUpdate, vdecide(a0, api.VerdictRight, "alice"), "blind review: alice has seen the model's answer of cell " + a0},
		{"verdict of the other stratum", api.ValidationDecideUpdate, vdecide(a0, api.VerdictNoAnswer, "bob"), "decide it right or wrong"},
		{"bob decides", api.ValidationDecideUpdate, vdecide(a0, api.VerdictRight, "bob"), ""},
		{"bob again", api.ValidationDecideUpdate, vdecide(a0, api.VerdictWrong, "bob"), "bob decided cell " + a0 + " already"},
		{"finish with cells pending", api.ValidationFinishUpdate, api.ValidationFinish{Reviewer: "carol", ClientIdentity: "c"}, "5 sampled cells are undecided"},
		{"no reviewer", api.ValidationDecideUpdate, vdecide(answered[1], api.VerdictRight, ""), "reviewer is empty"},
		{"wrong, held", api.ValidationDecideUpdate, wrongHeld, ""},
		{"wrong, none", api.ValidationDecideUpdate, vdecide(answered[2], api.VerdictWrong, "alice"), ""},
		{"no answer", api.ValidationDecideUpdate, vdecide(notFound[0], api.VerdictNoAnswer, "alice"), ""},
		{"has answer", api.ValidationDecideUpdate, vdecide(notFound[1], api.VerdictHasAnswer, "alice"), ""},
		{"no answer 2", api.ValidationDecideUpdate, vdecide(notFound[2], api.VerdictNoAnswer, "alice"), ""},
		{"four eyes", api.ValidationFinishUpdate, api.ValidationFinish{Reviewer: "bob", ClientIdentity: "c"}, "four eyes: bob decided cell " + a0},
		{"carol signs off", api.ValidationFinishUpdate, api.ValidationFinish{Reviewer: "carol", ClientIdentity: "c"}, ""},
	}
	got := make([]string, len(steps))
	for i, s := range steps {
		e.env.RegisterDelayedCallback(func() { e.update(t, s.update, s.arg, &got[i]) }, time.Duration(i+1)*time.Minute)
	}
	// After alice's reveal and bob's decision: alice sees a0's answer,
	// bob (blind) does not, and the figures are not there yet.
	e.env.RegisterDelayedCallback(func() {
		for _, c := range []struct {
			reviewer string
			shown    bool
		}{{"alice", true}, {"bob", false}, {"", false}} {
			vw := e.view(t, c.reviewer)
			cell := vw.Cells[slices.IndexFunc(vw.Cells, func(x api.ValidationCell) bool { return x.ID == a0 })]
			if shown := cell.ModelAnswer != ""; shown != c.shown || cell.Revealed != c.shown {
				t.Errorf("%q sees a0's answer %q (revealed %v), want shown %v", c.reviewer, cell.ModelAnswer, cell.Revealed, c.shown)
			}
			if cell.Decision == nil || cell.Decision.Reviewer != "bob" {
				t.Errorf("a0's decision %+v, want bob's", cell.Decision)
			}
			if vw.Overall.Error == "" || vw.Pending != 5 {
				t.Errorf("figures with no not-found cell decided: error %q, %d pending; want an error and 5", vw.Overall.Error, vw.Pending)
			}
		}
		// A query without the reviewer (the Temporal UI's) is a view as
		// no one: blind.
		v, err := e.env.QueryWorkflow(api.ValidationQuery)
		if err != nil {
			t.Fatalf("query without a reviewer: %v", err)
		}
		var vw api.ValidationView
		if err := v.Get(&vw); err != nil {
			t.Fatal(err)
		}
		for _, c := range vw.Cells {
			if c.ModelAnswer != "" {
				t.Errorf("a query without a reviewer shows cell %s's answer", c.ID)
			}
		}
	}, 7*time.Minute+30*time.Second)
	e.env.ExecuteWorkflow(api.ValidateName, in)
	if err := e.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		switch {
		case s.refused == "" && got[i] != "":
			t.Errorf("%s: refused: %s", s.name, got[i])
		case s.refused != "" && !strings.Contains(got[i], s.refused):
			t.Errorf("%s: refusal %q, want it to hold %q", s.name, got[i], s.refused)
		}
	}
	if e.loaded == nil || e.loaded.Seed != api.ValidationWorkflowID(batch) || e.loaded.Confidence != 0.95 {
		t.Fatalf("LoadValidation got %+v, want the workflow id as seed and confidence 0.95", e.loaded)
	}
	var rep api.ValidationReport
	if err := e.env.GetWorkflowResult(&rep); err != nil {
		t.Fatal(err)
	}
	if rep.Seed != e.loaded.Seed || rep.PopulationHash != want.PopulationHash || !slices.Equal(rep.Strata[0].Sampled, answered) {
		t.Errorf("report: seed %q, hash %s, sample %v; want the recorded draw %v", rep.Seed, rep.PopulationHash, rep.Strata[0].Sampled, answered)
	}
	d := validation.Decisions{Answered: 6, NotFound: 4, AnsweredSampled: 3, Right: 1, WrongHeld: 1, NotFoundSampled: 3, Missed: 1}
	f, err := validation.Estimate(d, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if o := rep.Overall; o.Error != "" || o.Precision.Lower != f.Precision.Lower || o.Recall.Upper != f.Recall.Upper || o.Elusion.Estimate != f.Elusion.Estimate || o.Right != 1 || o.WrongHeld != 1 || o.Missed != 1 {
		t.Errorf("overall figures %+v, want Estimate's %+v", o, f)
	}
	if len(rep.Questions) != 1 || rep.Questions[0].Recall != rep.Overall.Recall {
		t.Errorf("per question %+v, want the one question's, equal to the overall", rep.Questions)
	}
	if len(rep.Thresholds) != 2 || !rep.Thresholds[0].Passed || rep.Thresholds[1].Passed || rep.Passed {
		t.Errorf("thresholds %+v (passed %v), want precision's to pass and recall's to fail", rep.Thresholds, rep.Passed)
	}
	if rep.Finished == nil || rep.Finished.Reviewer != "carol" || rep.ReportURI == "" || rep.HTMLURI == "" {
		t.Errorf("report finished %+v, uris %q %q", rep.Finished, rep.ReportURI, rep.HTMLURI)
	}
	// 1 reveal, 6 decisions, the sign-off.
	if len(rep.Entries) != 8 || rep.Entries[0].Action != "reveal" || rep.Entries[7].Action != "finish" {
		t.Errorf("entries %+v, want 8: the reveal, 6 decisions, the sign-off", rep.Entries)
	}
	for i, en := range rep.Entries {
		if en.Seq != i+1 || en.At.IsZero() || en.UpdateID == "" || en.Reviewer == "" {
			t.Errorf("entry %d: %+v", i+1, en)
		}
	}
	if e.written == nil || e.written.Report.Cells[0].ModelAnswer == "" {
		t.Errorf("WriteValidationReport got %+v, want the report with the model's answers", e.written)
	}
}

// TestValidateBadInput: input that can never succeed is refused as
// memagent.BadInput before anything is read.
func TestValidateBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		in   api.ValidateInput
		id   string
		want string
	}{
		{"margin too wide", api.ValidateInput{Batch: "b", Margin: 0.5}, "", "margin 0.5 is not between 0 and 0.5"},
		{"margin negative", api.ValidateInput{Batch: "b", Margin: -0.1}, "", "margin -0.1 is not between 0 and 0.5"},
		{"margin and sample", api.ValidateInput{Batch: "b", Margin: 0.1, SampleSize: 3}, "", "both margin and sample_size"},
		{"no subject", api.ValidateInput{}, "", "neither batch nor review"},
		{"threshold", api.ValidateInput{Batch: "b", Thresholds: []api.ValidationThreshold{{Figure: "recall", Op: ">=", Value: 2}}}, "", "between 0 and 1"},
		{"another id", api.ValidateInput{Batch: "b"}, "b.other", `runs as workflow "b.validate"`},
		{"notify_url not http", api.ValidateInput{Batch: "b", NotifyURL: "ftp://hooks.example/x"}, "", "notify_url"},
		{"notify_url with a review", api.ValidateInput{Review: "b", NotifyURL: "https://hooks.example/x"}, "", "notify_url with a review"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newValidateEnv(t, "b")
			if c.id != "" {
				e.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: c.id})
			}
			e.env.ExecuteWorkflow(api.ValidateName, c.in)
			err := e.env.GetWorkflowError()
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != api.ErrBadInput || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %s holding %q", err, api.ErrBadInput, c.want)
			}
			if e.loaded != nil {
				t.Errorf("LoadValidation ran for bad input")
			}
		})
	}
}

// TestValidateExtend grows a sample of 2 a stratum: an extension to 4
// takes each stratum's next cells of the same draw (the grown sample is
// the draw of 4, what was decided stays decided), is recorded with its
// sizes, and is refused when it would add nothing or asks both a margin
// and a sample; the sign-off then needs the new cells decided; the
// margin an extension asks becomes the one the figures are held to.
func TestValidateExtend(t *testing.T) {
	const batch = "batch-2"
	e := newValidateEnv(t, batch)
	seed := api.ValidationWorkflowID(batch)
	first := validateStrata(t, actwire.LoadValidationInput{WorkflowID: batch, Kind: api.SubjectBatch, Seed: seed, SampleSize: 2})
	a0 := first.Strata[0].Sampled[0]
	ext := func(margin float64, sample int) api.ValidationExtend {
		return api.ValidationExtend{Margin: margin, SampleSize: sample, Reviewer: "dave", ClientIdentity: "c"}
	}
	type step struct {
		name, update string
		arg          any
		refused      string
	}
	steps := []step{
		{"decide before", api.ValidationDecideUpdate, vdecide(a0, api.VerdictRight, "alice"), ""},
		{"nothing to add", api.ValidationExtendUpdate, ext(0, 2), "every stratum's sample is that large already"},
		{"both", api.ValidationExtendUpdate, ext(0.1, 4), "both margin and sample_size"},
		{"margin out of range", api.ValidationExtendUpdate, ext(0.5, 0), "margin 0.5 is not between 0 and 0.5"},
		{"no reviewer", api.ValidationExtendUpdate, api.ValidationExtend{SampleSize: 4}, "reviewer is empty"},
		{"extend to 4", api.ValidationExtendUpdate, ext(0, 4), ""},
		{"again to 4", api.ValidationExtendUpdate, ext(0, 4), "every stratum's sample is that large already"},
		{"finish with new cells pending", api.ValidationFinishUpdate, api.ValidationFinish{Reviewer: "carol", ClientIdentity: "c"}, "7 sampled cells are undecided"},
		{"extend by margin", api.ValidationExtendUpdate, ext(0.1, 0), ""},
	}
	got := make([]string, len(steps))
	for i, s := range steps {
		e.env.RegisterDelayedCallback(func() { e.update(t, s.update, s.arg, &got[i]) }, time.Duration(i+1)*time.Minute)
	}
	var mid api.ValidationView
	e.env.RegisterDelayedCallback(func() { mid = e.view(t, "") }, 8*time.Minute+30*time.Second)
	// Then every cell is decided and carol signs off.
	e.env.RegisterDelayedCallback(func() {
		vw := e.view(t, "")
		for _, c := range vw.Cells {
			if c.Decision != nil {
				continue
			}
			verdict := api.VerdictRight
			if c.Stratum == api.StratumNotFound {
				verdict = api.VerdictNoAnswer
			}
			var refused string
			e.update(t, api.ValidationDecideUpdate, vdecide(c.ID, verdict, "bob"), &refused)
			if refused != "" {
				t.Errorf("decide %s: %s", c.ID, refused)
			}
		}
	}, 20*time.Minute)
	var signed string
	e.env.RegisterDelayedCallback(func() {
		e.update(t, api.ValidationFinishUpdate, api.ValidationFinish{Reviewer: "carol", ClientIdentity: "c"}, &signed)
	}, 21*time.Minute)
	e.env.ExecuteWorkflow(api.ValidateName, api.ValidateInput{Batch: batch, SampleSize: 2})
	if err := e.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		switch {
		case s.refused == "" && got[i] != "":
			t.Errorf("%s: refused: %s", s.name, got[i])
		case s.refused != "" && !strings.Contains(got[i], s.refused):
			t.Errorf("%s: refusal %q, want it to hold %q", s.name, got[i], s.refused)
		}
	}
	if signed != "" {
		t.Fatalf("sign-off refused: %s", signed)
	}
	// After the extension to 4: each stratum is the draw of 4, a0 still
	// decided by alice, the stop margin that of no margin (sample mode).
	for i, st := range mid.Strata {
		want, _, _ := validation.Draw(seed, validateIDs[st.Stratum], 4)
		if !slices.Equal(st.Sampled, want) || !slices.Equal(st.Sampled[:2], first.Strata[i].Sampled) {
			t.Errorf("stratum %s grown to %v, want the draw of 4 %v, starting with %v", st.Stratum, st.Sampled, want, first.Strata[i].Sampled)
		}
	}
	if len(mid.Cells) != 8 || mid.Cells[0].Decision == nil || mid.Cells[0].Decision.Reviewer != "alice" || mid.StopMargin != 0 || mid.WithinMargin {
		t.Errorf("after the extension: %d cells, first decided %+v, stop margin %v", len(mid.Cells), mid.Cells[0].Decision, mid.StopMargin)
	}
	if len(e.extended) != 2 || e.extended[0].RunID != "r1" || e.extended[0].Strata[0].PopulationHash != first.Strata[0].PopulationHash {
		t.Errorf("ExtendValidation got %+v, want two calls naming the run and population drawn from", e.extended)
	}
	var rep api.ValidationReport
	if err := e.env.GetWorkflowResult(&rep); err != nil {
		t.Fatal(err)
	}
	var exts []api.ValidationEntry
	for _, en := range rep.Entries {
		if en.Action == "extend" {
			exts = append(exts, en)
		}
	}
	wantGrown := []api.ValidationGrowth{{Question: "Q?", Stratum: api.StratumAnswered, From: 2, To: 4}, {Question: "Q?", Stratum: api.StratumNotFound, From: 2, To: 4}}
	if len(exts) != 2 || exts[0].Reviewer != "dave" || exts[0].SampleSize != 4 || !slices.Equal(exts[0].Grown, wantGrown) || exts[0].At.IsZero() {
		t.Errorf("extension entries %+v, want dave's to 4 a stratum with %+v", exts, wantGrown)
	}
	// ±10% at 95% needs 6 of 6 answered (n₀ = 96) and 4 of 4 not found:
	// the strata are whole, every interval a point, within the margin.
	if exts[1].Margin != 0.1 || len(rep.Cells) != 10 || rep.StopMargin != 0.1 || !rep.WithinMargin || !rep.Overall.Precision.WithinMargin {
		t.Errorf("after the margin's extension: entry %+v, %d cells, stop margin %v, within %v", exts[1], len(rep.Cells), rep.StopMargin, rep.WithinMargin)
	}
}

// TestValidateOverallStratified: with two questions sampled at unequal
// fractions the overall figures are validation.Stratified's (each
// stratum by its population), not the pooled decisions'; a run from
// before the change pools them as it did.
func TestValidateOverallStratified(t *testing.T) {
	v := &validateRun{in: api.ValidateInput{Confidence: 0.95}, info: &workflow.Info{}, stratified: true, latest: map[string]int{}, stopMargin: 0.2}
	v.loaded = &actwire.LoadValidationOutput{Strata: []api.ValidationStratum{
		{Question: "q1", Stratum: api.StratumAnswered, Population: 1000, Sampled: []string{"a1", "a2", "a3", "a4"}},
		{Question: "q1", Stratum: api.StratumNotFound, Population: 10, Sampled: []string{"b1", "b2"}},
		{Question: "q2", Stratum: api.StratumAnswered, Population: 10, Sampled: []string{"c1", "c2", "c3", "c4"}},
		{Question: "q2", Stratum: api.StratumNotFound, Population: 1000, Sampled: []string{"d1", "d2"}},
	}}
	for _, st := range v.loaded.Strata {
		for _, id := range st.Sampled {
			v.loaded.Cells = append(v.loaded.Cells, api.ValidationCell{ID: id, Question: st.Question, Stratum: st.Stratum})
			verdict := api.VerdictNoAnswer
			switch {
			case st.Question == "q1" && st.Stratum == api.StratumAnswered:
				verdict = api.VerdictWrong // q1's answers all wrong
			case st.Stratum == api.StratumAnswered:
				verdict = api.VerdictRight
			}
			v.entries = append(v.entries, api.ValidationEntry{Action: "decide", Cell: id, Verdict: verdict})
			v.latest[id] = len(v.entries) - 1
		}
	}
	q1 := validation.Decisions{Answered: 1000, NotFound: 10, AnsweredSampled: 4, NotFoundSampled: 2}
	q2 := validation.Decisions{Answered: 10, NotFound: 1000, AnsweredSampled: 4, Right: 4, NotFoundSampled: 2}
	want, err := validation.Stratified([]validation.Decisions{q1, q2}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	vw := v.view("", true)
	if vw.OverallMethod != api.MethodStratified || vw.Overall.Precision.Estimate != want.Precision.Estimate || vw.Overall.Precision.Upper != want.Precision.Upper {
		t.Errorf("overall precision %+v by %q, want Stratified's %+v", vw.Overall.Precision, vw.OverallMethod, want.Precision)
	}
	if !near(vw.Overall.Precision.Estimate, 10.0/1010) {
		t.Errorf("overall precision %v, want 10/1010 (pooling would say 50%%)", vw.Overall.Precision.Estimate)
	}
	if hw := vw.Overall.Precision.HalfWidth; !near(hw, (want.Precision.Upper-want.Precision.Lower)/2) || vw.Overall.Precision.WithinMargin != (hw <= 0.2) {
		t.Errorf("half-width %v, within %v", hw, vw.Overall.Precision.WithinMargin)
	}
	if vw.Overall.Right != 4 || vw.Overall.AnsweredSampled != 8 {
		t.Errorf("overall counts %+v, want the sums", vw.Overall)
	}
	v.stratified = false
	pooled, _ := validation.Estimate(validation.Decisions{Answered: 1010, NotFound: 1010, AnsweredSampled: 8, Right: 4, NotFoundSampled: 4}, 0.95)
	if vw := v.view("", true); vw.OverallMethod != api.MethodPooled || vw.Overall.Precision.Estimate != pooled.Precision.Estimate {
		t.Errorf("a run from before: overall precision %+v by %q, want the pooled %+v", vw.Overall.Precision, vw.OverallMethod, pooled.Precision)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestValidateNotifiesTheMarkedReport: a validation whose WriteValidation
// marked its batch's gated report and handed back the batch's
// notification POSTs it to the validation's notify_url once, under the
// marking's own Idempotency-Key (the batch's is "<id>/<run>"); with no
// notify_url, or nothing marked, it POSTs nothing; an undelivered POST
// fails nothing.
func TestValidateNotifiesTheMarkedReport(t *testing.T) {
	const batch, hook = "batch-1", "https://hooks.example.com/memagent?token=secret"
	marked := &api.ChangeNotification{Name: "nightly", WorkflowID: batch, RunID: "r1", ReportURI: "s3://b/r/report.json", Items: 10, Succeeded: 10,
		Validation: &api.ReportValidation{State: api.ReportFinal, Validation: api.ValidationWorkflowID(batch), SignedOffBy: "carol"}}
	for _, c := range []struct {
		name         string
		url          string
		notification *api.ChangeNotification
		undelivered  bool
		posts        int
	}{
		{"marked", hook, marked, false, 1},
		{"undelivered", hook, marked, true, 1},
		{"no notify_url", "", marked, false, 0},
		{"nothing marked", hook, nil, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newValidateEnv(t, batch)
			if c.notification != nil {
				e.marked, e.notification = c.notification.Validation.State, c.notification
			}
			var posts []actwire.NotifyInput
			e.env.RegisterActivityWithOptions(func(ctx context.Context, in actwire.NotifyInput) error {
				posts = append(posts, in)
				if c.undelivered {
					return temporal.NewNonRetryableApplicationError("notify https://hooks.example.com: not delivered", api.ErrNotifyRejected, nil)
				}
				return nil
			}, activity.RegisterOptions{Name: actwire.NotifyChangesName})
			e.env.RegisterDelayedCallback(func() {
				vw := e.view(t, "")
				for _, cell := range vw.Cells {
					verdict := api.VerdictNoAnswer
					if cell.Stratum == api.StratumAnswered {
						verdict = api.VerdictRight
					}
					var refused string
					e.update(t, api.ValidationDecideUpdate, vdecide(cell.ID, verdict, "alice"), &refused)
				}
				var refused string
				e.update(t, api.ValidationFinishUpdate, api.ValidationFinish{Reviewer: "carol", ClientIdentity: "test@host"}, &refused)
			}, time.Minute)
			e.env.ExecuteWorkflow(api.ValidateName, api.ValidateInput{Batch: batch, SampleSize: 3, NotifyURL: c.url})
			if err := e.env.GetWorkflowError(); err != nil {
				t.Fatalf("validation: %v", err)
			}
			if len(posts) != c.posts {
				t.Fatalf("%d POSTs %+v, want %d", len(posts), posts, c.posts)
			}
			if c.posts == 0 {
				return
			}
			p := posts[0]
			if p.URL != hook || p.IdempotencyKey != batch+"/r1/validation" || p.Notification.Validation == nil ||
				p.Notification.Validation.State != api.ReportFinal || p.Notification.ReportURI != marked.ReportURI || p.Notification.Items != 10 {
				t.Errorf("POST %+v, want the marked notification to %s under key %s/r1/validation", p, hook, batch)
			}
		})
	}
}
