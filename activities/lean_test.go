package activities

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
)

// PrepareReading returns what its steps' own activities return for the
// same inputs.
func TestPrepareReadingIsItsSteps(t *testing.T) {
	f := newFixture(t, groundDoc())
	opts := api.ModelOptions{ChunkTokens: 100000}
	var out actwire.PrepareReadingOutput
	if err := f.exec(t, actwire.PrepareReadingName, actwire.PrepareReadingInput{
		Prepare: actwire.PrepareInput{Document: testDocURI, Question: testQuestion, Options: opts},
		Convert: true, Find: &actwire.FindCheckpointInput{Question: testQuestion, Options: opts},
	}, &out); err != nil {
		t.Fatalf("PrepareReading: %v", err)
	}
	var conv actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: testDocURI}, &conv); err != nil {
		t.Fatal(err)
	}
	p := f.prepare(t, opts)
	var cp actwire.FindCheckpointOutput
	if err := f.exec(t, FindCheckpointName, actwire.FindCheckpointInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI,
		Question: testQuestion, Options: api.ModelOptions{ChunkTokens: 100000, Model: p.Model}}, &cp); err != nil {
		t.Fatal(err)
	}
	p.Reused = out.Prepared.Reused // the second indexing finds the first's index
	switch {
	case out.Converted == nil || !reflect.DeepEqual(*out.Converted, conv):
		t.Errorf("converted %+v, want %+v", out.Converted, conv)
	case out.Prepared != p:
		t.Errorf("prepared %+v, want %+v", out.Prepared, p)
	case out.Checkpoint == nil || out.Checkpoint.Chunks != cp.Chunks:
		t.Errorf("checkpoint %+v, want %+v", out.Checkpoint, cp)
	}
}

// A step's failure names the step and keeps its classification.
func TestPrepareReadingNamesTheFailedStep(t *testing.T) {
	f := newFixture(t, nil) // no document
	err := f.exec(t, actwire.PrepareReadingName, actwire.PrepareReadingInput{
		Prepare: actwire.PrepareInput{Document: testDocURI, Question: testQuestion}, Convert: true,
	}, &actwire.PrepareReadingOutput{})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrDocumentNotFound || !appErr.NonRetryable() ||
		!strings.HasPrefix(appErr.Message(), "convert document: ") {
		t.Errorf("err = %v, want a non-retryable %s naming the conversion", err, api.ErrDocumentNotFound)
	}
}

func TestStepFailure(t *testing.T) {
	later := temporal.NewApplicationErrorWithOptions("pool busy", api.ErrModelUnavailable, temporal.ApplicationErrorOptions{NextRetryDelay: time.Minute})
	for _, tc := range []struct {
		err          error
		typ          string
		nonRetryable bool
		delay        time.Duration
	}{
		{badInput(errors.New("bad")), api.ErrBadInput, true, 0},
		{later, api.ErrModelUnavailable, false, time.Minute},
	} {
		var appErr *temporal.ApplicationError
		err := stepFailure("answer", tc.err)
		if !errors.As(err, &appErr) || appErr.Type() != tc.typ || appErr.NonRetryable() != tc.nonRetryable ||
			appErr.NextRetryDelay() != tc.delay || !strings.HasPrefix(appErr.Message(), "answer: ") {
			t.Errorf("stepFailure(%v) = %v, want type %s, non-retryable %v, delay %v", tc.err, err, tc.typ, tc.nonRetryable, tc.delay)
		}
	}
	if err := stepFailure("answer", errors.New("S3 is down")); err.Error() != "answer: S3 is down" {
		t.Errorf("plain error: %v", err)
	}
}

// AnswerAndGround answers once, grounds the answer, and keeps the answer
// when grounding fails for good.
func TestAnswerAndGround(t *testing.T) {
	for _, tc := range []struct {
		name     string
		indexURI func(actwire.PrepareOutput) string
		grounded bool
	}{
		{"grounded", func(p actwire.PrepareOutput) string { return p.IndexURI }, true},
		// An index the worker did not make is refused for good.
		{"grounding refused", func(actwire.PrepareOutput) string { return "s3://elsewhere/indexes/x.json" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, groundDoc())
			p := f.prepare(t, api.ModelOptions{ChunkTokens: 100000})
			f.model.Respond = func(inference.Request) (string, error) { return "\\boxed{7391-ALPHA}", nil }
			var out actwire.AnswerGroundOutput
			if err := f.exec(t, actwire.AnswerAndGroundName, actwire.AnswerGroundInput{
				Answer: actwire.AnswerInput{Question: testQuestion, Memory: "the code is 7391-ALPHA", Options: api.ModelOptions{AnswerMaxTokens: 64},
					ResultURI: tracePrefix + "result.json", Result: api.DocumentQAResult{WorkflowID: "wf-1", RunID: "run-1", Chunks: 1}},
				Document: p.Document, ETag: p.ETag, IndexURI: tc.indexURI(p),
			}, &out); err != nil {
				t.Fatalf("AnswerAndGround: %v", err)
			}
			if out.Result.Answer != "7391-ALPHA" || out.Result.Usage.Calls != 1 || len(f.model.Calls()) != 1 {
				t.Errorf("answer %q, %d calls (%d made): want 7391-ALPHA, one call", out.Result.Answer, out.Result.Usage.Calls, len(f.model.Calls()))
			}
			if got := out.Ground != nil && len(out.Ground.Groundings) == 1 && out.Ground.Groundings[0].Status == api.GroundingVerbatim; got != tc.grounded {
				t.Errorf("ground %+v, want grounded %v", out.Ground, tc.grounded)
			}
		})
	}
}
