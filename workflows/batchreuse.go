package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// BatchWholeReadingsChange gates whole readings for a batch whose input
// ReadsWhole: no earlier answer (ResolvePageInput.Whole), children with
// reuse "none" (gate: see VERSIONS.md, batch-whole-readings). Each run
// decides on its own.
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
