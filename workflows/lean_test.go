package workflows

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// askedGates records the change ids a run asks for, answering lean for
// LeanItemChange and version 1 for every other.
func askedGates(env *testsuite.TestWorkflowEnvironment, lean workflow.Version, asked *[]string) {
	env.OnGetVersion(mock.Anything, workflow.DefaultVersion, 1).Return(func(id string, _, _ workflow.Version) workflow.Version {
		*asked = append(*asked, id)
		if id == LeanItemChange {
			return lean
		}
		return 1
	})
}

// A run at LeanItemChange asks that gate alone, in every run of its chain;
// a run from before it asks every gate of its path as it did.
func TestDocumentQALeanAsksOneGate(t *testing.T) {
	for _, tt := range []struct {
		name string
		lean workflow.Version
		// want are the gates each run asks, in order; the first run's
		// and the others'.
		first, later []string
	}{
		{"lean", 1, []string{LeanItemChange}, []string{LeanItemChange}},
		{"before lean", workflow.DefaultVersion,
			[]string{LeanItemChange, SearchAttributesChange, StatusLifecycleChange, CheckpointsChange, ConvertDocumentChange, ProvenanceChange, CoalesceUpsertsChange},
			[]string{LeanItemChange, SearchAttributesChange, StatusLifecycleChange, CarryChange, VerifyCarryChange, CoalesceUpsertsChange}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, makeDoc(5))
			var runs [][]string
			f.setup = func(env *testsuite.TestWorkflowEnvironment) {
				runs = append(runs, nil)
				askedGates(env, tt.lean, &runs[len(runs)-1])
				env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil)
			}
			res, n := f.runToEnd(t, api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q?",
				Options: api.ModelOptions{ChunkTokens: 100}, ChunksPerRun: 2})
			if n != 3 || res.Answer == "" {
				t.Fatalf("%d runs, answer %q: want 3 runs and an answer", n, res.Answer)
			}
			for i, got := range runs {
				want := tt.later
				if i == 0 {
					want = tt.first
				}
				if i == len(runs)-1 && tt.lean == workflow.DefaultVersion {
					want = append(slices.Clone(want), GroundingChange)
				}
				if !slices.Equal(got, want) {
					t.Errorf("run %d asked %v, want %v", i+1, got, want)
				}
			}
		})
	}
}
