package workflows

import (
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// ClaimScheduleReports is the memagent.ClaimScheduleReports workflow: one
// activity (ClaimReportPrefix) that claims a schedule's report prefix
// under the worker's configuration, before `starter schedule create`
// creates the schedule. A refusal is the activity's memagent.Forbidden
// (or BadInput), returned as it is.
// Its one argument is an api.ClaimScheduleReportsInput as JSON, decoded
// strictly.
func ClaimScheduleReports(ctx workflow.Context, input converter.RawValue) error {
	edge := newBoundary(ctx)
	var in api.ClaimScheduleReportsInput
	if err := edge.decode(input, &in); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return badInput(err)
	}
	prio := taskPriority(ctx, api.Scheduling{}, api.PriorityQuestion)
	actx := workflow.WithActivityOptions(ctx, activityOptions(5*time.Minute, 0, prio, "claim the report prefix"))
	return actwire.ClaimReportPrefix.Execute(actx, in).Get(ctx)
}
