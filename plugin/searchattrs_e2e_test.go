package plugin

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/memagent/memagent/workflows"
)

// A client that lists the plugin checks, once it connects, that the
// namespace has memagent's search attributes, and registers them where the
// server allows it: a namespace where `starter setup` never ran gets them.
func TestPluginInClientRegistersSearchAttributes(t *testing.T) {
	st := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := st.dial(ctx, t, nil)
	const ns = "plugin-fresh"
	if _, err := admin.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := admin.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns}); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("namespace never appeared")
		}
		time.Sleep(100 * time.Millisecond)
	}
	p, err := New(st.options())
	if err != nil {
		t.Fatal(err)
	}
	c := st.dial(ctx, t, func(o *client.Options) { o.Namespace, o.Plugins = ns, []client.Plugin{p} })
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for name := range workflows.SearchAttributes() {
		if _, ok := list.GetCustomAttributes()[name]; !ok {
			t.Errorf("namespace %s lacks %s after a client with the plugin connected; has %v", ns, name, slices.Sorted(maps.Keys(list.GetCustomAttributes())))
		}
	}
}
