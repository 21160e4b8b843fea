package main

import (
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
)

func TestTaskCounts(t *testing.T) {
	const (
		sched   = enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
		started = enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED
		done    = enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
		timeout = enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT
		failed  = enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED
		sticky  = enumspb.TASK_QUEUE_KIND_STICKY
		normal  = enumspb.TASK_QUEUE_KIND_NORMAL
		s2s     = enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
		s2c     = enumspb.TIMEOUT_TYPE_START_TO_CLOSE
		none    = enumspb.TIMEOUT_TYPE_UNSPECIFIED
		other   = enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
	)
	// A run's first task on the normal queue, a sticky one that timed
	// out before a worker took it, its retry on the normal queue, a
	// sticky task that failed and one that completed.
	types := []enumspb.EventType{sched, started, done, other, sched, timeout, sched, started, done, sched, started, failed, sched, started, done, timeout}
	kinds := []enumspb.TaskQueueKind{normal, 0, 0, 0, sticky, 0, normal, 0, 0, sticky, 0, 0, sticky, 0, 0, 0}
	timeouts := []enumspb.TimeoutType{none, none, none, none, none, s2s, none, none, none, none, none, none, none, none, none, s2c}
	var got taskCounts
	got.add(types, kinds, timeouts, make([]bool, len(types)))
	// A gate's marker and the SDK's upsert beside it, and memagent's own upsert.
	got.add([]enumspb.EventType{enumspb.EVENT_TYPE_MARKER_RECORDED, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES},
		make([]enumspb.TaskQueueKind, 3), make([]enumspb.TimeoutType, 3), []bool{false, true, false})
	want := taskCounts{Executions: 2, Started: 4, Sticky: 3, Normal: 2, StickyTimeouts: 1, CloseTimeouts: 1, Failed: 1, Upserts: 2, VersionUpserts: 1, Markers: 1}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if note := readsNote(8, got, 1); !strings.Contains(note, "8.00 an item") || !strings.Contains(note, "started: 4.00 an item") || !strings.Contains(note, "`TemporalChangeVersion` 1.00") {
		t.Errorf("note %q: want the reads and the tasks an item", note)
	}
	if note := readsNote(-1, got, 1); !strings.Contains(note, "history_node`): —;") {
		t.Errorf("note %q: want no reads without PostgreSQL", note)
	}
}
