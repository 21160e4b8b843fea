package memclient

import (
	"context"
	"fmt"
	"slices"
	"strings"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// ListRuns returns every run of one workflow id in namespace (its
// continue-as-new generations), oldest first, with their history lengths
// and sizes, as visibility has them.
func ListRuns(ctx context.Context, c client.Client, namespace, id string) ([]*workflowpb.WorkflowExecutionInfo, error) {
	var runs []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: fmt.Sprintf("WorkflowId = '%s'", strings.ReplaceAll(id, "'", "")), NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list runs of %s: %w", id, err)
		}
		runs = append(runs, resp.Executions...)
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	slices.SortFunc(runs, func(a, b *workflowpb.WorkflowExecutionInfo) int {
		return a.GetStartTime().AsTime().Compare(b.GetStartTime().AsTime())
	})
	return runs, nil
}
