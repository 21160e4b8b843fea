package workflows

import "go.temporal.io/sdk/workflow"

// LeanItemChange is the one gate a DocumentQA run asks at its start (gate:
// see VERSIONS.md, lean-item). At version 1 the run asks none of the older
// gates of its path and takes each at version 1, as a new run took them
// anyway: one Version marker (and one SDK TemporalChangeVersion upsert) a
// run instead of one each. A history recorded before it has no marker,
// replays at DefaultVersion and asks the old gates exactly as it did.
//
// Gates asked only when Temporal says the run's target version moved
// (MoveToTargetChange) are still asked: most runs never record them.
const LeanItemChange = "lean-item"

// QuietProgressChange is the gate a DocumentQA run asks first, before
// LeanItemChange (gate: see VERSIONS.md, quiet-progress). At version 1 the
// run is lean (LeanItemChange's version 1, without asking it: one marker a
// run still) and upserts its chunk counts at most every
// quietProgressUpsertEvery instead of progressUpsertEvery. A history
// recorded before it has no marker for it, replays at DefaultVersion and
// asks LeanItemChange exactly as it did.
const QuietProgressChange = "quiet-progress"

// gates answers the version gates of one run. Its zero value asks each
// gate of Temporal (workflow.GetVersion), as every workflow but DocumentQA
// does; a DocumentQA run at LeanItemChange takes every gate at version 1
// without asking, and one at QuietProgressChange also coalesces its chunk
// counts over quietProgressUpsertEvery.
type gates struct{ lean, quiet bool }

// askLean asks QuietProgressChange, and LeanItemChange only when the run
// is not at it: it must be the run's first call that can record a marker
// or a command.
func askLean(ctx workflow.Context) gates {
	if workflow.GetVersion(ctx, QuietProgressChange, workflow.DefaultVersion, 1) >= 1 {
		return gates{lean: true, quiet: true}
	}
	return gates{lean: workflow.GetVersion(ctx, LeanItemChange, workflow.DefaultVersion, 1) >= 1}
}

// version is change's version for the run: 1 at LeanItemChange, else what
// Temporal answers.
func (g gates) version(ctx workflow.Context, change string) workflow.Version {
	if g.lean {
		return 1
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1)
}

// at reports whether change is at version 1 (every gate of the package
// takes version 1 at most).
func (g gates) at(ctx workflow.Context, change string) bool {
	return g.version(ctx, change) >= 1
}
