package plugin

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/workflows"
)

// A client that lists the plugin checks, once it connects, that the
// namespace has memagent's search attributes, and registers them where the
// server allows it: a namespace where `starter setup` never ran gets them.
func TestPluginInClientRegistersSearchAttributes(t *testing.T) {
	st := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns = "plugin-fresh"
	if err := st.dev.Stack.RegisterNamespace(ctx, ns); err != nil {
		t.Fatal(err)
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
