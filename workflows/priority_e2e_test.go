package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/workflows"
)

// priorities lists the priority of every activity scheduled and every child
// started in a workflow's history, as "kind:level/key/weight".
func priorities(t *testing.T, c client.Client, id string) []string {
	t.Helper()
	var out []string
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	show := func(kind string, p *commonpb.Priority) string {
		return fmt.Sprintf("%s:%d/%s/%g", kind, p.GetPriorityKey(), p.GetFairnessKey(), p.GetFairnessWeight())
	}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			out = append(out, show("activity", a.GetPriority()))
		}
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			out = append(out, show("child", a.GetPriority()))
		}
	}
	return out
}

// TestPriorityOnTheEmbeddedStack: priority and fairness given in the JSON
// input by a client that sets no Temporal priority reach every activity; a
// batch's children inherit its key unless their item names one; and values
// Temporal would refuse fail as BadInput.
func TestPriorityOnTheEmbeddedStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	s := startContractStack(t)
	ctx := context.Background()

	t.Run("DocumentQA from raw JSON", func(t *testing.T) {
		run := s.start(t, "prio-qa", api.DocumentQAName, fmt.Sprintf(
			`{"document": %q, "question": "What is the vault code?", "priority": 1, "fairness_key": "tenant-a", "fairness_weight": 2}`, s.doc))
		var res workflows.DocumentQAResult
		if err := run.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		if res.Answer != "7391-ALPHA" {
			t.Errorf("answer %q", res.Answer)
		}
		got := priorities(t, s.c, "prio-qa")
		if len(got) < 3 {
			t.Fatalf("activities %v, want prepare, updates and answer", got)
		}
		for _, p := range got {
			if p != "activity:1/tenant-a/2" {
				t.Errorf("activity priority %s, want 1/tenant-a/2 (all: %v)", p, got)
				break
			}
		}
	})

	t.Run("DocumentQA defaults to the question level", func(t *testing.T) {
		run := s.start(t, "prio-qa-default", api.DocumentQAName, fmt.Sprintf(`{"document": %q, "question": "What is the vault code?"}`, s.doc))
		if err := run.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, p := range priorities(t, s.c, "prio-qa-default") {
			if p != fmt.Sprintf("activity:%d//0", api.PriorityQuestion) {
				t.Fatalf("activity priority %s, want level %d and no key", p, api.PriorityQuestion)
			}
		}
	})

	t.Run("batch children inherit the batch's key unless the item names one", func(t *testing.T) {
		manifest := fmt.Sprintf("{\"id\": \"a\", \"document\": %q, \"question\": \"What is the vault code?\"}\n"+
			"{\"id\": \"b\", \"document\": %q, \"question\": \"What is the vault code, again?\", \"fairness_key\": \"client-b\"}\n", s.doc, s.doc)
		loc := s3store.Location{Bucket: s.Dev.Stack.Bucket, Key: "manifests/prio.jsonl"}
		if err := s.store.Put(ctx, loc, []byte(manifest), "application/x-ndjson"); err != nil {
			t.Fatal(err)
		}
		run := s.start(t, "prio-batch", api.BatchQAName, fmt.Sprintf(`{"manifest": %q, "fairness_key": "tenant-x"}`, loc.String()))
		var res api.BatchQAResult
		if err := run.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		if res.Succeeded != 2 {
			t.Fatalf("batch: %+v", res)
		}
		var children []string
		for _, p := range priorities(t, s.c, "prio-batch") {
			if strings.HasPrefix(p, "child:") {
				children = append(children, p)
			} else if p != "activity:4/tenant-x/0" {
				t.Errorf("batch activity priority %s, want 4/tenant-x", p)
			}
		}
		if strings.Join(children, " ") != "child:4/tenant-x/0 child:4/client-b/0" && strings.Join(children, " ") != "child:4/client-b/0 child:4/tenant-x/0" {
			t.Errorf("children %v, want one of tenant-x and one of client-b, both level 4", children)
		}
		for _, p := range priorities(t, s.c, api.BatchItemWorkflowID("prio-batch", 1, 0)) {
			if p != "activity:4/client-b/0" {
				t.Errorf("item b's activity priority %s, want 4/client-b", p)
			}
		}
	})

	t.Run("bad values fail as BadInput", func(t *testing.T) {
		for i, tt := range []struct{ input, want string }{
			{fmt.Sprintf(`{"document": %q, "question": "Q?", "priority": 9}`, s.doc), "priority"},
			{fmt.Sprintf(`{"document": %q, "question": "Q?", "fairness_weight": 2}`, s.doc), "fairness_key"},
			{fmt.Sprintf(`{"document": %q, "question": "Q?", "fairness_key": %q}`, s.doc, strings.Repeat("k", 65)), "fairness_key"},
		} {
			err := s.start(t, fmt.Sprintf("prio-bad-%d", i), api.DocumentQAName, tt.input).Get(ctx, nil)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput || !strings.Contains(appErr.Message(), tt.want) {
				t.Errorf("%s: error %v, want %s naming %s", tt.input, err, api.ErrBadInput, tt.want)
			}
		}
	})
}
