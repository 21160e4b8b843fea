package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/workflow"
)

// Worker Versioning. DocumentQA, ReviewDocument, BatchQA and Estimate
// register as Pinned (Register): on a versioned worker
// (TEMPORAL_DEPLOYMENT_NAME) a run stays on the build that started it, so a
// new build never replays a run in flight. Every continue-as-new starts the
// next run on the task queue's target version (continueAsNew), and a run
// whose target version changed continues as new at its next boundary
// (targetMoved): the next chunk for DocumentQA, the next round of memory
// updates for ReviewDocument, the next page for BatchQA. The state a run
// hands over is the one thing two builds share: the next build must read
// it, so it changes only additively (docs/DEPLOY.md, Upgrading).
//
// Unversioned, nothing of this shows: the target version never changes,
// and the continue-as-new option is ignored.

// MoveToTargetChange gates targetMoved, awaitRoom and leaveWait: a run
// whose target version changed continues as new at its next boundary
// (gate: see VERSIONS.md, move-to-target-version). It is asked for only
// where it changes what a run does, so most runs record no marker.
const MoveToTargetChange = "move-to-target-version"

// moveCheckEvery is how often a run paused at its budget wakes to see
// whether its target version changed: a paused run holds its build until
// it moves, so this bounds how long a paused run keeps an old build from
// draining.
var moveCheckEvery = 10 * time.Minute

// errContinueAsNew ends a wait that the run should leave to continue as
// new (awaitRoom): its target version changed, or Temporal suggests it.
var errContinueAsNew = errors.New("the run continues as new")

// continueAsNew is the continue-as-new of every memagent workflow: the
// next run's first task goes to the task queue's target version (the
// current one, or the ramping one for runs the ramp selects), where the
// run is pinned again (its registered behaviour). Without the option a
// pinned run's next run would inherit its build for ever. The option is a
// field of the command, which replay does not compare: it needs no gate,
// and an unversioned server ignores it.
func continueAsNew(ctx workflow.Context, name string, arg any) error {
	return workflow.NewContinueAsNewErrorWithOptions(ctx, workflow.ContinueAsNewErrorOptions{
		InitialVersioningBehavior: workflow.ContinueAsNewVersioningBehaviorAutoUpgrade,
	}, name, arg)
}

// targetMoved reports whether the run should continue as new now because
// its target version changed: Temporal says so (the flag of the last
// workflow task, which history keeps, so it replays) and the run is at
// MoveToTargetChange. The change is asked for only when Temporal says so,
// so the runs of an unversioned worker record no marker.
func targetMoved(ctx workflow.Context) bool {
	return workflow.GetInfo(ctx).GetTargetWorkerDeploymentVersionChanged() &&
		workflow.GetVersion(ctx, MoveToTargetChange, workflow.DefaultVersion, 1) >= 1
}

// awaitRoom waits until cond, as workflow.Await does, for a run paused at
// its budget. At MoveToTargetChange it wakes every moveCheckEvery and
// returns errContinueAsNew when the run's target version changed, or when
// its wake-ups have made its history long enough that Temporal suggests
// continuing as new, for the caller to continue as new. canMove false (a
// batch with items in hand) waits as workflow.Await does.
func awaitRoom(ctx workflow.Context, canMove bool, cond func() bool) error {
	if !canMove || workflow.GetVersion(ctx, MoveToTargetChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return workflow.Await(ctx, cond)
	}
	for {
		ok, err := workflow.AwaitWithTimeout(ctx, moveCheckEvery, cond)
		if err != nil || ok {
			return err
		}
		if info := workflow.GetInfo(ctx); info.GetTargetWorkerDeploymentVersionChanged() || info.GetContinueAsNewSuggested() {
			return errContinueAsNew
		}
	}
}

// leaveWait reports whether a run that waits in a loop of its own (a batch
// child asking for a grant) should continue as new now: its target
// version changed, or Temporal suggests it, and the run is at
// MoveToTargetChange (asked for only then).
func leaveWait(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return (info.GetTargetWorkerDeploymentVersionChanged() || info.GetContinueAsNewSuggested()) &&
		workflow.GetVersion(ctx, MoveToTargetChange, workflow.DefaultVersion, 1) >= 1
}
