package plugin

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

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

// lockedBuffer is a log's output that workers' goroutines write while a
// test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A worker whose plugin is in its options only says at start that the
// search attributes were not checked, and what to do, unless its host
// checked them through Plugin.CheckSearchAttributes (as memagent's own
// worker and the dev stack do): then it says nothing of the kind.
func TestWorkerSaysWhetherSearchAttributesWereChecked(t *testing.T) {
	st := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const notChecked = "search attributes were not checked"
	for i, hostChecks := range []bool{false, true} {
		t.Run(fmt.Sprintf("host checks %v", hostChecks), func(t *testing.T) {
			var logs lockedBuffer
			opts := st.options()
			opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			p, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			c := st.dial(ctx, t, nil)
			if hostChecks {
				if err := p.CheckSearchAttributes(ctx, c, st.addr.Namespace); err != nil {
					t.Fatal(err)
				}
			}
			w := worker.New(c, fmt.Sprintf("attrs-checked-%d", i), worker.Options{Plugins: []worker.Plugin{p}})
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			w.Stop()
			said := strings.Contains(logs.String(), notChecked)
			switch {
			case hostChecks && said:
				t.Errorf("the host checked the search attributes, and the worker logged:\n%s", logs.String())
			case !hostChecks && !said:
				t.Errorf("the worker did not say the search attributes were not checked; it logged:\n%s", logs.String())
			case !hostChecks && !strings.Contains(logs.String(), "call Plugin.CheckSearchAttributes before starting the worker"):
				t.Errorf("the worker's warning does not name Plugin.CheckSearchAttributes:\n%s", logs.String())
			}
		})
	}
}
