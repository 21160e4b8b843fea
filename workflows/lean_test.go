package workflows

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

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

// askedGates records the change ids a run asks for, answering quiet for
// QuietProgressChange, lean for LeanItemChange and version 1 for every
// other.
func askedGates(env *testsuite.TestWorkflowEnvironment, quiet, lean workflow.Version, asked *[]string) {
	env.OnGetVersion(mock.Anything, workflow.DefaultVersion, 1).Return(func(id string, _, _ workflow.Version) workflow.Version {
		*asked = append(*asked, id)
		switch id {
		case QuietProgressChange:
			return quiet
		case LeanItemChange:
			return lean
		}
		return 1
	})
}

// A run at QuietProgressChange asks that gate alone, in every run of its
// chain; a run from before it asks LeanItemChange next, and alone at it; a
// run from before both asks every gate of its path as it did.
func TestDocumentQALeanAsksOneGate(t *testing.T) {
	for _, tt := range []struct {
		name        string
		quiet, lean workflow.Version
		// want are the gates each run asks, in order; the first run's
		// and the others'.
		first, later []string
	}{
		{"quiet", 1, 1, []string{QuietProgressChange}, []string{QuietProgressChange}},
		{"lean", workflow.DefaultVersion, 1, []string{QuietProgressChange, LeanItemChange}, []string{QuietProgressChange, LeanItemChange}},
		{"before lean", workflow.DefaultVersion, workflow.DefaultVersion,
			[]string{QuietProgressChange, LeanItemChange, SearchAttributesChange, StatusLifecycleChange, CheckpointsChange, ConvertDocumentChange, ProvenanceChange, CoalesceUpsertsChange},
			[]string{QuietProgressChange, LeanItemChange, SearchAttributesChange, StatusLifecycleChange, CarryChange, VerifyCarryChange, CoalesceUpsertsChange}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, makeDoc(5))
			var runs [][]string
			f.setup = func(env *testsuite.TestWorkflowEnvironment) {
				runs = append(runs, nil)
				askedGates(env, tt.quiet, tt.lean, &runs[len(runs)-1])
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

// A run at QuietProgressChange upserts its chunk counts at most every
// quietProgressUpsertEvery; a lean run, every progressUpsertEvery.
func TestQuietProgressCoalescesChunkCounts(t *testing.T) {
	for _, tt := range []struct {
		name string
		g    gates
		want int
	}{
		// 40 chunks 4.5 s apart (180 s): due every 2 chunks (9 s), or
		// every 7 (31.5 s).
		{"lean", gates{lean: true}, 20},
		{"quiet", gates{lean: true, quiet: true}, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			due := 0
			env.ExecuteWorkflow(func(ctx workflow.Context) error {
				v := newVisibility(ctx, 1)
				v.coalesceChunksAt(tt.g)
				for range 40 {
					if err := workflow.Sleep(ctx, 4500*time.Millisecond); err != nil {
						return err
					}
					if v.chunksDue() {
						due++
					}
				}
				return nil
			})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if due != tt.want {
				t.Errorf("%d chunk counts due over 40 chunks of 4.5 s, want %d", due, tt.want)
			}
		})
	}
}
