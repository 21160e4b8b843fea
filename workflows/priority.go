package workflows

import (
	"cmp"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// taskPriority is the priority every activity and child of the run carries:
// the input's fields, else what the run was started with, else def for the
// level. Fairness has no default: without a key, every task of a priority
// is in one queue, first come first served.
func taskPriority(ctx workflow.Context, s api.Scheduling, def int) temporal.Priority {
	started := workflow.GetInfo(ctx).Priority
	p := s.Start(cmp.Or(started.PriorityKey, def))
	if p.FairnessKey == "" {
		p.FairnessKey = started.FairnessKey
		if p.FairnessWeight == 0 {
			p.FairnessWeight = started.FairnessWeight
		}
	}
	return p
}

// skipsEagerExecution says whether the run's activities go through the
// task queue rather than straight back to the worker. An activity handed
// straight back (eager execution) skips the queue, and with it the queue's
// priority: a batch that keeps every activity slot of a worker busy would
// take each freed slot before a waiting question could. Runs at batch
// priority or lower go through the queue.
func skipsEagerExecution(p temporal.Priority) bool { return p.PriorityKey >= api.PriorityBatch }
