package workflows

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// rawJSON is a payload as a client in any language sends it.
func rawJSON(s string) converter.RawValue {
	return converter.NewRawValue(&commonpb.Payload{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)},
		Data:     []byte(s),
	})
}

func TestBoundaryRejectsBadInput(t *testing.T) {
	tests := []struct {
		name, workflow string
		input          converter.RawValue
		want           string
	}{
		{"typo", api.DocumentQAName, rawJSON(`{"document":"s3://docs/doc.txt","question":"q","options":{"chunk_token":1000}}`),
			"input: options.chunk_token: unknown field; did you mean options.chunk_tokens?"},
		{"wrong type", api.DocumentQAName, rawJSON(`{"document":"s3://docs/doc.txt","question":"q","options":{"chunk_tokens":"1000"}}`),
			`input: options.chunk_tokens: expected an integer, got a string ("1000")`},
		{"gold answers under both names", api.DocumentQAName, rawJSON(`{"document":"s3://d/x","question":"q","answers":["a"],"gold_answers":["b"]}`),
			"answers is an alias of gold_answers"},
		{"missing question names the field", api.DocumentQAName, rawJSON(`{"document":"s3://docs/doc.txt"}`),
			"question is empty: set question"},
		{"not JSON", api.DocumentQAName, converter.NewRawValue(&commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/plain")}, Data: []byte("x")}),
			`input is encoded as "binary/plain"`},
		{"questions as strings", api.ReviewDocumentName, rawJSON(`{"document":"s3://docs/doc.txt","questions":["Who?","What?"]}`),
			`input: questions[0]: expected an object {"id", "question", "gold_answers"}, got a string ("Who?")`},
		{"batch typo", api.BatchQAName, rawJSON(`{"manifest":"s3://m/x.jsonl","concurrancy":4}`),
			"input: concurrancy: unknown field; did you mean concurrency?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			Register(env)
			var u upserts
			u.install(env)
			env.ExecuteWorkflow(tt.workflow, tt.input)
			err := env.GetWorkflowError()
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() {
				t.Fatalf("error %v, want a non-retryable %s", err, api.ErrBadInput)
			}
			if !strings.Contains(appErr.Error(), tt.want) {
				t.Errorf("message %q lacks %q", appErr.Error(), tt.want)
			}
			if strings.Contains(appErr.Error(), "--") {
				t.Errorf("message %q names a CLI flag", appErr.Error())
			}
			if got := u.merged()[api.AttrStatus]; got != api.StageFailed {
				t.Errorf("%s = %v, want %q", api.AttrStatus, got, api.StageFailed)
			}
			// Every workflow answers its progress query for input it
			// refused: "failed", never "unknown query type".
			v, err := env.QueryWorkflow(api.ProgressQuery)
			if err != nil {
				t.Fatalf("progress query: %v", err)
			}
			var p struct{ Stage string }
			if err := v.Get(&p); err != nil || p.Stage != api.StageFailed {
				t.Errorf("progress stage = %q (%v), want %q", p.Stage, err, api.StageFailed)
			}
		})
	}
}

func TestBoundaryAcceptsGoldAnswersAlias(t *testing.T) {
	f := newFixture(t, makeDoc(2))
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(DocumentQA, workflow.RegisterOptions{Name: api.DocumentQAName})
	f.acts.Register(env)
	env.ExecuteWorkflow(api.DocumentQAName, rawJSON(`{"document":"s3://docs/doc.txt","question":"q","answers":["line1"],"options":{"chunk_tokens":100}}`))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res DocumentQAResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if len(res.GoldAnswers) != 1 || res.GoldAnswers[0] != "line1" {
		t.Errorf("gold answers %q, want [line1]", res.GoldAnswers)
	}
}

func TestClosedStatus(t *testing.T) {
	can := &workflow.ContinueAsNewError{}
	canceled := fmt.Errorf("update memory at chunk 3: %w", temporal.NewCanceledError())
	failed := badInput(errors.New("x"))
	tests := []struct {
		lifecycle bool
		err       error
		want      string
	}{
		{true, nil, api.StageDone}, {true, can, api.StageContinued}, {true, canceled, api.StageCanceled}, {true, failed, api.StageFailed},
		// Histories recorded before the change replay as they ran.
		{false, nil, api.StageDone}, {false, can, ""}, {false, canceled, api.StageFailed}, {false, failed, api.StageFailed},
	}
	for _, tt := range tests {
		if got := (boundary{lifecycle: tt.lifecycle}).closedStatus(tt.err); got != tt.want {
			t.Errorf("lifecycle %t, error %v: status %q, want %q", tt.lifecycle, tt.err, got, tt.want)
		}
	}
}
