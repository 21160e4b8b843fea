package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// BatchWholeReadingsChange is the workflow.GetVersion change id under
// which a BatchQA whose input ReadsWhole (a rollout group, or reuse
// "none") reuses no earlier answer (ResolvePageInput.Whole) and starts
// every child with reuse "none", so that each sample reads every chunk in
// its own run. Runs recorded before it replay as workflow.DefaultVersion:
// they took earlier answers and passed reuse to their children as it was.
// Each run of a batch decides on its own, so a batch in flight across the
// upgrade reads whole from its next run on.
const BatchWholeReadingsChange = "batch-whole-readings"

// reuse says whether this run reads whole (no earlier answer is taken)
// and the reuse its DocumentQA children get. A batch whose input does not
// read whole records no marker: it runs exactly as before the change.
func (b *batchRun) reuse() (whole bool, child string) {
	switch {
	case b.in.Reuse == api.ReuseAlways:
		// No run recorded before ReuseAlways holds it: the children start
		// from checkpoints, as reuse "auto" has them.
		return false, api.ReuseAuto
	case !b.in.ReadsWhole():
		return false, b.in.Reuse
	case workflow.GetVersion(b.ctx, BatchWholeReadingsChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion:
		return false, b.in.Reuse
	}
	return true, api.ReuseNone
}
