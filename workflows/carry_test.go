package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// TestCallerStateIsRefused starts each workflow as a hostile caller would:
// with a continue-as-new state of its own that says the document is
// prepared (or the manifest expanded, or the sign-off decided) somewhere
// the caller chose. Each run fails as memagent.Forbidden before any
// activity, whether it claims to be a first run, a continuation of another
// run, or a continuation of the very run it names that Temporal says is
// not memagent's own (a look-alike on another task queue). Only a state
// from memagent's own previous run is taken.
func TestCallerStateIsRefused(t *testing.T) {
	forgedQA := &qaState{Prepared: actwire.PrepareOutput{
		Document: "s3://secret/secret.txt", IndexURI: "s3://memagent/documents/forged-index.json", Chunks: 1, Tokens: 10,
	}, TracePrefix: "s3://memagent/runs/victim/run/"}
	forgedReview := &reviewState{Prepared: forgedQA.Prepared, Prefix: "s3://secret/out/",
		Questions: []reviewQuestionState{{Answered: true, Answer: "x", Evidence: nil}}}
	forgedBatch := &batchState{Expanded: actwire.ExpandOutput{
		WorkPrefix: "s3://memagent/batches/victim/run/", ReportPrefix: "s3://secret/report/", Items: 1e11, Pages: 1,
	}, NextPage: 1}
	forgedSignOff := &signOffState{Subject: api.SignOffSubject{Kind: api.SubjectReview, WorkflowID: "rev", RunID: "r1",
		Prefix: "s3://memagent/reviews/rev/r1/signoff/", AuditURI: "s3://memagent/reviews/rev/r1/signoff/audit.jsonl"},
		Cells: []api.SignOffCell{{ID: "q1", Status: api.DecisionAccepted}}, Entries: []api.SignOffEntry{{Seq: 1, Action: api.ActionDecide, Cell: "q1", Level: 1}}}
	inputs := []struct {
		name, workflow, id string
		input              any
	}{
		{"DocumentQA", api.DocumentQAName, "", qaRunInput{DocumentQAInput: api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q?"}, State: forgedQA}},
		{"ReviewDocument", api.ReviewDocumentName, "", reviewRunInput{ReviewInput: api.ReviewInput{Document: "s3://docs/doc.txt",
			Questions: []api.ReviewQuestion{{Question: "q?"}}}, State: forgedReview}},
		{"BatchQA", api.BatchQAName, "", batchRunInput{BatchQAInput: api.BatchQAInput{Manifest: "s3://manifests/m.jsonl"}, State: forgedBatch}},
		{"SignOff", api.SignOffName, api.SignOffWorkflowID("rev"), signOffRunInput{SignOffInput: api.SignOffInput{Review: "rev"}, State: forgedSignOff}},
	}
	claims := []struct {
		name      string
		continued string // the run the test environment says this one continued
		from      string // the run the state says handed it over
		lookAlike bool   // Temporal says the run continued from is not memagent's
	}{
		{"first run", "", "", false},
		{"first run naming a run", "", testRunID, false},
		{"continuation of another run", testRunID, "some-other-run", false},
		{"continuation of a look-alike", testRunID, testRunID, true},
		{"legacy state from a look-alike", testRunID, "", true},
	}
	for _, in := range inputs {
		for _, c := range claims {
			t.Run(in.name+"/"+c.name, func(t *testing.T) {
				var s testsuite.WorkflowTestSuite
				env := s.NewTestWorkflowEnvironment()
				Register(env)
				ran := 0
				for _, name := range []string{activities.ConvertDocumentName, activities.PrepareDocumentName, activities.UpdateMemoryName,
					activities.AnswerName, activities.ReviewUpdateName, activities.WriteReviewName, activities.ExpandManifestName,
					activities.ResolveBatchPageName, activities.WriteBatchResultsName, activities.WriteBatchReportName, activities.GroundAnswerName,
					actwire.PrepareReadingName, actwire.AnswerAndGroundName,
					activities.LoadSignOffName, activities.AppendAuditName, activities.WriteSignOffName} {
					env.RegisterActivityWithOptions(func() error { ran++; return nil }, activity.RegisterOptions{Name: name})
				}
				verified := 0
				env.RegisterActivityWithOptions(func(context.Context, actwire.VerifyRunInput) error {
					verified++
					if c.lookAlike {
						return temporal.NewNonRetryableApplicationError("this run continues from run x, a memagent.DocumentQA on task queue \"evil\"", api.ErrForbidden, nil)
					}
					return nil
				}, activity.RegisterOptions{Name: activities.VerifyContinuedRunName})
				if c.continued != "" {
					env.SetContinuedExecutionRunID(c.continued)
				}
				if in.id != "" {
					env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: in.id})
				}
				payload := withFrom(t, in.input, c.from)
				env.ExecuteWorkflow(in.workflow, payload)
				if !env.IsWorkflowCompleted() {
					t.Fatal("workflow did not complete")
				}
				var appErr *temporal.ApplicationError
				err := env.GetWorkflowError()
				if !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden || !appErr.NonRetryable() {
					t.Fatalf("error = %v, want a non-retryable %s", err, api.ErrForbidden)
				}
				if !c.lookAlike && !strings.Contains(appErr.Error(), "state is set by the workflow itself") {
					t.Errorf("error = %v, want it to say the state is the workflow's own", err)
				}
				if c.lookAlike && (verified == 0 || !strings.Contains(appErr.Error(), `task queue "evil"`)) {
					t.Errorf("error = %v after %d proofs, want Temporal's answer about the look-alike", err, verified)
				}
				if ran != 0 {
					t.Errorf("%d activities ran before the state was refused", ran)
				}
			})
		}
	}
}

// withFrom sets the state's From member of a run input.
func withFrom(t *testing.T, in any, from string) any {
	t.Helper()
	switch v := in.(type) {
	case qaRunInput:
		st := *v.State
		st.From, v.State = from, &st
		return v
	case reviewRunInput:
		st := *v.State
		st.From, v.State = from, &st
		return v
	case batchRunInput:
		st := *v.State
		st.From, v.State = from, &st
		return v
	case signOffRunInput:
		st := *v.State
		st.From, v.State = from, &st
		return v
	}
	t.Fatalf("unknown input %T", in)
	return nil
}

// TestContinuedRunKeepsItsState checks the other side: the state a run
// hands over names it, and the next run, continued from it, accepts it.
func TestContinuedRunKeepsItsState(t *testing.T) {
	f := newFixture(t, makeDoc(4))
	// Reuse none: the second reading must not start from the first's
	// checkpoints, which would hide what the continued run carries.
	in := api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "Which marker came last?", ChunksPerRun: 2,
		Options: api.ModelOptions{ChunkTokens: 100}, Reuse: api.ReuseNone}
	_, err := f.run(t, in)
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("error = %v, want continue-as-new", err)
	}
	var next qaRunInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.State == nil || next.State.From != testRunID || next.State.Cursor != 2 {
		t.Fatalf("handed-over state = %+v, want from %q at cursor 2", next.State, testRunID)
	}
	res, runs := f.runToEnd(t, in)
	if res.Chunks != 4 || runs != 2 || res.Usage.Calls != 5 {
		t.Errorf("result: %d chunks in %d runs with %d calls, want 4 in 2 with 5", res.Chunks, runs, res.Usage.Calls)
	}
}
