package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// activityOptions are the options every activity of the workflows starts
// with: a start-to-close bound, a heartbeat timeout (0 for an activity
// that does not heartbeat), retryPolicy, the run's priority and fairness
// (with eager execution off at batch priority, see skipsEagerExecution),
// and the summary the UI shows. A call site that needs more (a
// schedule-to-close bound, a bounded retry) sets it on the result.
func activityOptions(startToClose, heartbeat time.Duration, prio temporal.Priority, summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout:   startToClose,
		HeartbeatTimeout:      heartbeat,
		RetryPolicy:           retryPolicy(),
		Priority:              prio,
		DisableEagerExecution: skipsEagerExecution(prio),
		Summary:               summary,
	}
}

// retryPolicy retries transient failures without a limit: a pool that is
// down for an hour delays the run, it does not lose it. Permanent failures
// are non-retryable errors and stop at once.
func retryPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    2 * time.Minute,
	}
}

// askRetryPolicy gives up after five attempts, at most 30 s apart: it is
// for a question between a batch and its child (the child's grant, the
// child's usage), which the asker puts again later rather than wait on a
// run that does not answer.
func askRetryPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5}
}
