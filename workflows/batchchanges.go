package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// BatchChangesChange gates the report's comparison and notify_url (gate:
// see VERSIONS.md, batch-changes). The first run decides and keeps the
// decision in the state, so that the run that writes the report follows it.
const BatchChangesChange = "batch-changes"

// scheduledByKey is the search attribute Temporal sets on every run a
// Schedule starts, naming the schedule.
var scheduledByKey = temporal.NewSearchAttributeKeyKeyword("TemporalScheduledById")

// scheduleOf is the id of the Schedule that started the run, "" when
// none did.
func scheduleOf(ctx workflow.Context) string {
	id, _ := workflow.GetTypedSearchAttributes(ctx).GetKeyword(scheduledByKey)
	return id
}

// Bounds of the notify_url POST: each attempt, and all of them together.
// The activity decides how many attempts there are (one by default, each
// lasting its budget, 30 s, when it does not deliver) and ends them all
// alike whatever the host did; past them the batch completes with notify
// "failed", as the report, changes.json and the search attribute hold
// everything the POST would have said.
const (
	notifyAttemptTimeout = 45 * time.Second
	notifyTotalTimeout   = time.Hour
)

// decideChanges records, in the first run, whether and with what the
// batch compares its report: the input's compare_with, else the previous
// dated report when a Schedule started the batch with dated_report and a
// report_prefix of its own (a default prefix names the workflow id, which
// differs in every run of a schedule).
func decideChanges(ctx workflow.Context, in api.BatchQAInput, st *batchState) {
	if workflow.GetVersion(ctx, BatchChangesChange, workflow.DefaultVersion, 1) < 1 {
		return
	}
	st.Changes = true
	if in.CompareWith != "" {
		st.CompareWith = in.CompareWith
		return
	}
	if !in.DatedReport || in.ReportPrefix == "" {
		return
	}
	if id, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(scheduledByKey); ok && id != "" {
		st.CompareWith, st.CompareAuto = api.CompareWithPrevious, true
	}
}

// explicitCompare is the comparison ExpandManifest checks before any item
// runs: the caller's own, not the one a Schedule implies.
func (st *batchState) explicitCompare() string {
	if st.CompareAuto {
		return ""
	}
	return st.CompareWith
}

// notifyChanges POSTs the batch's notification and says how it went; a
// notification that never succeeds does not fail the batch.
func (b *batchRun) notifyChanges(res *api.BatchQAResult) string {
	// The URL stays out of the summary: it may hold a token.
	opts := activityOptions(notifyAttemptTimeout, 0, b.prio, "notify changes")
	opts.ScheduleToCloseTimeout = notifyTotalTimeout
	actx := workflow.WithActivityOptions(b.ctx, opts)
	info := workflow.GetInfo(b.ctx)
	err := actwire.NotifyChanges.Execute(actx, actwire.NotifyInput{
		URL: b.in.NotifyURL, Notification: actwire.BatchNotification(*res, info.WorkflowExecution.RunID),
	}).Get(b.ctx)
	if err != nil {
		// The activity's errors name the scheme and host only.
		workflow.GetLogger(b.ctx).Warn("notify_url was not notified", "notify_host", api.NotifyHost(b.in.NotifyURL), "err", err)
		return api.NotifyFailed
	}
	return api.NotifySent
}
