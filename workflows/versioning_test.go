package workflows

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
)

// patient lets a workflow task run 20s before the test environment calls
// it a deadlock: a loaded machine holds a task up past the default 1s.
func patient(env *testsuite.TestWorkflowEnvironment) {
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
}

// continued decodes a run's continue-as-new and checks that its next run
// starts on the target version.
func continued(t *testing.T, err error) qaRunInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("run ended with %v, want a continue-as-new", err)
	}
	if can.InitialVersioningBehavior != workflow.ContinueAsNewVersioningBehaviorAutoUpgrade {
		t.Errorf("continue-as-new with initial behaviour %v, want AutoUpgrade: the next run would stay on this build", can.InitialVersioningBehavior)
	}
	var next qaRunInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatalf("decode continue-as-new input: %v", err)
	}
	if next.State == nil {
		t.Fatal("continue-as-new without a state")
	}
	return next
}

// TestDocumentQAMovesToItsTargetVersion: Temporal says, as the third chunk
// completes, that the run's target version changed. The run continues as
// new before the fourth chunk, well before its 200 chunks a run, onto the
// target version, carrying its cursor and memory; the chain then reads
// every chunk once, in order, and answers as an undisturbed run does.
// Every continue-as-new of a chain moves to the target version, a move or
// not (ChunksPerRun).
func TestDocumentQAMovesToItsTargetVersion(t *testing.T) {
	for _, tc := range []struct {
		name         string
		chunksPerRun int
		wantRuns     int
	}{
		{"moved after chunk 3", 0, 2},
		{"moved after chunk 3, 4 chunks a run", 4, 3}, // chunks 0-2 | 3-6 | 7-9 and the answer
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, makeDoc(10))
			updates, runs := 0, 0
			f.setup = func(env *testsuite.TestWorkflowEnvironment) {
				patient(env)
				runs++
				if runs > 1 {
					return // the next runs are on the target version
				}
				env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, err error) {
					if info.ActivityType.Name == activities.UpdateMemoryName && err == nil {
						if updates++; updates == 3 {
							env.SetTargetWorkerDeploymentVersionChanged(true)
						}
					}
				})
			}
			in := qaRunInput{DocumentQAInput: api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "Which marker came last?",
				GoldAnswers: []string{"w009"}, ChunksPerRun: tc.chunksPerRun, Options: api.ModelOptions{ChunkTokens: 100}}}
			_, err := f.runWith(t, in)
			in = continued(t, err)
			if in.State.Cursor != 3 || len(f.model.Calls()) != 3 {
				t.Fatalf("the moving run handed over cursor %d after %d model calls, want 3 and 3", in.State.Cursor, len(f.model.Calls()))
			}
			var res DocumentQAResult
			for n := 2; ; n++ {
				env, err := f.runWith(t, in)
				if err == nil {
					if err := env.GetWorkflowResult(&res); err != nil {
						t.Fatal(err)
					}
					if n != tc.wantRuns {
						t.Errorf("%d runs, want %d", n, tc.wantRuns)
					}
					break
				}
				in = continued(t, err)
			}
			if res.Answer != "w009" || res.Chunks != 10 || res.Usage.Calls != 11 || len(f.model.Calls()) != 11 {
				t.Errorf("answer %q over %d chunks, %d calls (usage %d); want w009, 10 chunks, 11 calls", res.Answer, res.Chunks, len(f.model.Calls()), res.Usage.Calls)
			}
		})
	}
}

// TestPausedDocumentQAWakesToMove: a run paused at its budget wakes every
// moveCheckEvery. While nothing calls for it, it goes on waiting and makes
// no model call; once its target version changed (or its wake-ups made
// Temporal suggest a continue-as-new), it continues as new at the next
// wake-up, paused still, carrying what it read. Raised in time, it just
// goes on.
func TestPausedDocumentQAWakesToMove(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(env *testsuite.TestWorkflowEnvironment)
		// wantContinued: the run continues as new at its third wake-up;
		// else the budget is raised after 45 minutes and it answers.
		wantContinued bool
	}{
		{"target version changed", func(env *testsuite.TestWorkflowEnvironment) { env.SetTargetWorkerDeploymentVersionChanged(true) }, true},
		{"continue-as-new suggested", func(env *testsuite.TestWorkflowEnvironment) { env.SetContinueAsNewSuggested(true) }, true},
		{"nothing: raised", func(env *testsuite.TestWorkflowEnvironment) {
			env.UpdateWorkflow(api.RaiseBudgetUpdate, "raise", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { panic(err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
			}, api.Budget{MaxCalls: 100})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, makeDoc(4))
			var began time.Time
			var env *testsuite.TestWorkflowEnvironment
			f.setup = func(e *testsuite.TestWorkflowEnvironment) {
				patient(e)
				env, began = e, e.Now()
				delay := 25 * time.Minute
				if !tc.wantContinued {
					delay = 45 * time.Minute
				}
				e.RegisterDelayedCallback(func() { tc.at(e) }, delay)
			}
			_, err := f.runWith(t, qaRunInput{DocumentQAInput: api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "Which marker came last?",
				Budget: &api.Budget{MaxCalls: 2}, Options: api.ModelOptions{ChunkTokens: 100}}})
			if !tc.wantContinued {
				if err != nil || len(f.model.Calls()) != 5 {
					t.Fatalf("raised run: %v after %d model calls, want its answer after 5", err, len(f.model.Calls()))
				}
				return
			}
			next := continued(t, err)
			if next.State.Cursor != 2 || len(f.model.Calls()) != 2 {
				t.Errorf("handed over cursor %d after %d model calls, want 2 and 2", next.State.Cursor, len(f.model.Calls()))
			}
			if waited := env.Now().Sub(began); waited < 3*moveCheckEvery || waited >= 4*moveCheckEvery {
				t.Errorf("continued after %v paused, want at the wake-up after the change (%v)", waited, 3*moveCheckEvery)
			}
		})
	}
}
