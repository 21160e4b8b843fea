package workflows

import (
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// ValidationGateChange gates the validation a gated batch starts (gate:
// see VERSIONS.md, batch-validation-gate).
const ValidationGateChange = "batch-validation-gate"

// startValidation starts, for a batch with a validation gate
// (BatchQAInput.Validation), the validation of this batch as its last
// command: memagent.Validate under api.ValidationWorkflowID of the batch,
// with the gate's settings, on the batch's task queue, abandoned so that
// it outlives the batch. Its sample is drawn once the batch has completed
// (LoadValidation waits for the run that started it), and then waits for
// reviewers. A batch that notified its notify_url hands it to the
// validation, which notifies it again once it marks the report. A start
// Temporal refuses (a validation of the batch already
// running under that id) leaves the report provisional, for a validation
// started by hand to decide; it never fails the batch.
func (b *batchRun) startValidation(res *api.BatchQAResult) {
	if b.in.Validation == nil || res.Validation == nil {
		return
	}
	if workflow.GetVersion(b.ctx, ValidationGateChange, workflow.DefaultVersion, 1) < 1 {
		return
	}
	info := workflow.GetInfo(b.ctx)
	id := info.WorkflowExecution.ID
	cctx := workflow.WithChildOptions(b.ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        api.ValidationWorkflowID(id),
		TaskQueue:         info.TaskQueueName,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		Priority:          b.prio,
		StaticSummary:     "validation of batch " + b.st.Name,
	})
	vin := b.in.Validation.Input(id)
	if res.Notify != "" {
		// The validation that marks the report POSTs it again (the
		// validation's notify_url); a batch that posted nothing has it
		// post nothing either. Inputs are not compared on replay: no gate.
		vin.NotifyURL = b.in.NotifyURL
	}
	f := workflow.ExecuteChildWorkflow(cctx, api.ValidateName, vin)
	// The run closes only once the start is recorded: a start pending
	// when the run completes is dropped.
	var x workflow.Execution
	if err := f.GetChildWorkflowExecution().Get(b.ctx, &x); err != nil {
		workflow.GetLogger(b.ctx).Warn("the gate's validation did not start: start it with starter validate", "validation", api.ValidationWorkflowID(id), "err", err)
		return
	}
	res.Validation.ValidationRunID = x.RunID
}
