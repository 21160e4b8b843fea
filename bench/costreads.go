package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// changeVersionKey is the search attribute the Go SDK upserts the first
// time a run asks each workflow.GetVersion gate (its internal
// TemporalChangeVersion, not exported).
const changeVersionKey = "TemporalChangeVersion"

// historyReadsQuery counts PostgreSQL's reads of history events since the
// last reset: the statements that select event batches from history_node
// (the persistence layer's getHistoryNodesQuery and its reverse).
const historyReadsQuery = "select coalesce(sum(calls),0) from pg_stat_statements where query ilike 'select%from history_node%' and query not ilike 'select node_id, prev_txn_id, txn_id from%'"

// historyReads returns the reads of history events PostgreSQL ran since
// the last reset of pg_stat_statements.
func historyReads(ctx context.Context, url string) (int64, error) {
	out, err := psql(ctx, url, historyReadsQuery)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("history reads %q: %w", out, err)
	}
	return n, nil
}

// taskCounts is what the histories on a task queue say of their workflow
// tasks: the Temporal server reads history (history_node) once for every
// workflow task it hands a worker (RecordWorkflowTaskStarted: the whole
// history for a task on the normal queue, the events since the last task
// for one on the worker's sticky queue), so these set the reads a batch
// costs, beside the client's own reads (GetWorkflowExecutionHistory).
type taskCounts struct {
	Executions     int64
	Started        int64 // WorkflowTaskStarted
	Sticky         int64 // scheduled on a worker's sticky queue
	Normal         int64 // scheduled on the normal queue: the first of each run, and after a sticky miss
	StickyTimeouts int64 // schedule-to-start timeouts (a sticky task no worker took in time)
	CloseTimeouts  int64 // start-to-close timeouts
	Failed         int64
	// Upserts are UpsertWorkflowSearchAttributes events, VersionUpserts
	// those of them that set TemporalChangeVersion (the SDK's, one for
	// each GetVersion gate a new run asks), Markers the version markers.
	Upserts, VersionUpserts, Markers int64
}

// visibilityQuery counts PostgreSQL's writes of visibility records and
// visibility tasks since the last reset: each search-attribute upsert is
// a visibility task (UpsertExecutionVisibilityTask) that rewrites the
// run's visibility row.
const visibilityQuery = "select coalesce(sum(calls) filter (where query ilike '%executions_visibility%' and query not ilike 'select%'),0), coalesce(sum(calls) filter (where query ilike 'insert into visibility_tasks%'),0) from pg_stat_statements"

// visibilityWrites returns the visibility rows and visibility tasks
// PostgreSQL wrote since the last reset of pg_stat_statements.
func visibilityWrites(ctx context.Context, url string) (rows, tasks int64, err error) {
	out, err := psql(ctx, url, visibilityQuery)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Split(out, "|")
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("visibility writes: %q", out)
	}
	if rows, err = strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("visibility writes %q: %w", out, err)
	}
	if tasks, err = strconv.ParseInt(strings.TrimSpace(f[1]), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("visibility writes %q: %w", out, err)
	}
	return rows, tasks, nil
}

// add counts one history's events.
func (t *taskCounts) add(types []enumspb.EventType, kinds []enumspb.TaskQueueKind, timeouts []enumspb.TimeoutType, version []bool) {
	t.Executions++
	for i, e := range types {
		switch e {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			t.Markers++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			t.Upserts++
			if version[i] {
				t.VersionUpserts++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			t.Started++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			if kinds[i] == enumspb.TASK_QUEUE_KIND_STICKY {
				t.Sticky++
			} else {
				t.Normal++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			if timeouts[i] == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				t.StickyTimeouts++
			} else {
				t.CloseTimeouts++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			t.Failed++
		}
	}
}

// queueTasks reads the history of every closed execution on queue and
// counts its workflow tasks. It reads history itself, so it runs after
// the phase's readings.
func queueTasks(ctx context.Context, c client.Client, queue string) (taskCounts, error) {
	var t taskCounts
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus != 'Running'", queue), NextPageToken: token, PageSize: 1000})
		if err != nil {
			return t, fmt.Errorf("list workflows on %s: %w", queue, err)
		}
		for _, e := range resp.GetExecutions() {
			var types []enumspb.EventType
			var kinds []enumspb.TaskQueueKind
			var timeouts []enumspb.TimeoutType
			var version []bool
			it := c.GetWorkflowHistory(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					return t, fmt.Errorf("history of %s: %w", e.GetExecution().GetWorkflowId(), err)
				}
				types = append(types, ev.GetEventType())
				kinds = append(kinds, ev.GetWorkflowTaskScheduledEventAttributes().GetTaskQueue().GetKind())
				timeouts = append(timeouts, ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType())
				_, v := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()[changeVersionKey]
				version = append(version, v)
			}
			t.add(types, kinds, timeouts, version)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return t, nil
		}
	}
}

// readsNote says what the history reads were, per item; reads < 0 when
// the server's database was not PostgreSQL.
func readsNote(reads int64, t taskCounts, items int) string {
	return readsLine(reads, t, items) + " " + upsertsLine(t, items)
}

// upsertsLine says what the search-attribute upserts and version markers
// were, per item.
func upsertsLine(t taskCounts, items int) string {
	per := func(n int64) float64 { return float64(n) / float64(max(items, 1)) }
	return fmt.Sprintf("Search-attribute upserts: %.2f an item, of them the SDK's `TemporalChangeVersion` %.2f; version markers %.2f an item.",
		per(t.Upserts), per(t.VersionUpserts), per(t.Markers))
}

// readsLine says what the history reads and workflow tasks were, per item.
func readsLine(reads int64, t taskCounts, items int) string {
	per := func(n int64) float64 { return float64(n) / float64(max(items, 1)) }
	r := "—"
	if reads >= 0 {
		r = fmt.Sprintf("%.2f an item", per(reads))
	}
	return fmt.Sprintf("Reads of history (`SELECT … FROM history_node`): %s; workflow tasks started: %.2f an item (%d executions), of them scheduled on a worker's sticky queue %.2f and on the normal queue %.2f; sticky schedule-to-start timeouts %.2f, start-to-close timeouts %.2f, failed tasks %.2f an item.",
		r, per(t.Started), t.Executions, per(t.Sticky), per(t.Normal), per(t.StickyTimeouts), per(t.CloseTimeouts), per(t.Failed))
}
