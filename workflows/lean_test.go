package workflows

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
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

// resultDown fails the first write into a result.json that already
// exists: the grounding's, after the answer wrote the result.
type resultDown struct {
	*activitiestest.Store
	failed bool
}

func (s *resultDown) Put(ctx context.Context, loc s3store.Location, data []byte, contentType string) error {
	if !s.failed && strings.HasSuffix(loc.Key, "result.json") && s.Object(loc) != nil {
		s.failed = true
		return errors.New("S3 is down")
	}
	return s.Store.Put(ctx, loc, data, contentType)
}

// A grounding that fails after the answer was paid for retries
// AnswerAndGround, which takes the answer it paid for instead of calling
// the model again, and grounds it.
func TestDocumentQALeanAnswerPaidOnce(t *testing.T) {
	f := newFixture(t, makeDoc(3))
	store := &resultDown{Store: f.store}
	f.acts.Store = store
	var answers int
	f.setup = func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
			if info.ActivityType.Name == actwire.AnswerAndGroundName {
				answers++
			}
		})
	}
	res, _ := f.runToEnd(t, api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q?", Options: api.ModelOptions{ChunkTokens: 100}})
	if !store.failed || answers != 2 {
		t.Fatalf("grounding failed %v, AnswerAndGround started %d times: want a failure and a retry", store.failed, answers)
	}
	finals := 0
	for _, c := range f.model.Calls() {
		if !sectionRE.MatchString(c.Prompt) {
			finals++
		}
	}
	if finals != 1 || res.Usage.Calls != 4 || res.Usage.RepeatedCalls != 0 {
		t.Errorf("%d answer calls, usage %d calls (%d repeated): want the answer paid once, 3 chunks and 1 answer", finals, res.Usage.Calls, res.Usage.RepeatedCalls)
	}
	if res.Answer != "w002" || res.Grounding == nil {
		t.Errorf("answer %q, grounding %+v: want w002, grounded", res.Answer, res.Grounding)
	}
}
