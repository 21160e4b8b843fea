package workflows

import (
	"reflect"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

func TestActivityOptions(t *testing.T) {
	question := temporal.Priority{PriorityKey: api.PriorityQuestion, FairnessKey: "team", FairnessWeight: 2}
	batch := temporal.Priority{PriorityKey: api.PriorityBatch}
	for _, tt := range []struct {
		name string
		got  workflow.ActivityOptions
		want workflow.ActivityOptions
	}{
		{"a question's activity runs eagerly", activityOptions(15*time.Minute, 7*time.Second, question, "final answer"),
			workflow.ActivityOptions{StartToCloseTimeout: 15 * time.Minute, HeartbeatTimeout: 7 * time.Second,
				RetryPolicy: retryPolicy(), Priority: question, Summary: "final answer"}},
		{"a batch's activity goes through the queue", activityOptions(2*time.Hour, 2*time.Minute, batch, "write report"),
			workflow.ActivityOptions{StartToCloseTimeout: 2 * time.Hour, HeartbeatTimeout: 2 * time.Minute,
				RetryPolicy: retryPolicy(), Priority: batch, DisableEagerExecution: true, Summary: "write report"}},
		{"no priority, no heartbeat", activityOptions(5*time.Minute, 0, temporal.Priority{}, "read review r"),
			workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute, RetryPolicy: retryPolicy(), Summary: "read review r"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %+v\nwant %+v", tt.got, tt.want)
			}
		})
	}
}
