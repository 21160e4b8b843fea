package activities

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// historian is the part of a Temporal client that reads a run's history.
type historian interface {
	GetWorkflowHistory(ctx context.Context, workflowID, runID string, isLongPoll bool, filterType enumspb.HistoryEventFilterType) client.HistoryEventIterator
}

// checkAuditEntries refuses to write audit lines that no accepted Update
// of the calling run stands behind: every entry the log gains must be the
// next line (Seq from+1, from+2, …), name the calling run, and carry the id
// of an Update that this run's history records as accepted, at a time
// within the run (from its first event to the last one read, the append's
// own scheduling): an Update accepted while a continued run proves its
// state is applied, and so dated, a workflow task or more after its
// acceptance. A sign-off writes the audit
// lines of the Updates it accepted in the same run (it continues as new
// only once the log holds every entry), so a genuine run always passes;
// entries in a state handed to the run by anyone else (a forged
// continue-as-new, which checkCarry also refuses) do not.
func checkAuditEntries(ctx context.Context, c historian, workflowID, runID string, from int, entries []api.SignOffEntry) error {
	if len(entries) == 0 {
		return nil
	}
	accepted := map[string]bool{}
	var start, last time.Time
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return fmt.Errorf("read the sign-off's history: %w", err)
		}
		if start.IsZero() {
			start = ev.GetEventTime().AsTime()
		}
		last = ev.GetEventTime().AsTime()
		if a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil {
			accepted[a.GetAcceptedRequest().GetMeta().GetUpdateId()] = true
		}
	}
	for i, e := range entries {
		seq := from + i + 1
		switch {
		case e.Seq != seq:
			return forbidden("audit entry %d is numbered %d: the audit log takes its lines in order; nothing was written", seq, e.Seq)
		case e.WorkflowID != workflowID || e.RunID != runID:
			return forbidden("audit entry %d names run %s of %s, not the sign-off run writing it (%s): nothing was written", seq, e.RunID, e.WorkflowID, runID)
		case e.UpdateID == "" || !accepted[e.UpdateID]:
			return forbidden("audit entry %d names Update %q, which the sign-off run %s never accepted: nothing was written", seq, e.UpdateID, runID)
		case e.At.Before(start) || e.At.After(last):
			return forbidden("audit entry %d is dated %s, outside the run that accepted its Update (%s to %s): nothing was written",
				seq, e.At.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))
		}
	}
	return nil
}
