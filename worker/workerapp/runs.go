package workerapp

import (
	"context"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/memclient"
)

// ListRuns returns every run of one workflow id (its continue-as-new
// generations), oldest first, with their history lengths and sizes: the
// client's memclient.ListRuns.
func ListRuns(ctx context.Context, c client.Client, namespace, id string) ([]*workflowpb.WorkflowExecutionInfo, error) {
	return memclient.ListRuns(ctx, c, namespace, id)
}
