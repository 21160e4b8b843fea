package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/searchattrs"
	"github.com/memagent/memagent/workflows"
)

// fakeOperator holds one namespace's search attributes, as the operator
// service reports them.
type fakeOperator struct {
	operatorservice.OperatorServiceClient // unused methods panic
	custom, system                        map[string]enumspb.IndexedValueType
	adds                                  int
}

func (f *fakeOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: maps.Clone(f.custom), SystemAttributes: f.system}, nil
}

func (f *fakeOperator) AddSearchAttributes(_ context.Context, req *operatorservice.AddSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	f.adds++
	maps.Copy(f.custom, req.GetSearchAttributes())
	return &operatorservice.AddSearchAttributesResponse{}, nil
}

func TestRegisterSearchAttributes(t *testing.T) {
	all := workflows.SearchAttributes()
	tests := []struct {
		name      string
		custom    map[string]enumspb.IndexedValueType
		system    map[string]enumspb.IndexedValueType
		wantAdded int
		wantErr   string
	}{
		{"fresh namespace", map[string]enumspb.IndexedValueType{}, nil, len(all), ""},
		{"already registered", maps.Clone(all), nil, 0, ""},
		{"some registered, others kept", map[string]enumspb.IndexedValueType{
			api.AttrDocument: enumspb.INDEXED_VALUE_TYPE_KEYWORD, "CustomerId": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		}, nil, len(all) - 1, ""},
		{"same name, other type", map[string]enumspb.IndexedValueType{api.AttrChunksDone: enumspb.INDEXED_VALUE_TYPE_TEXT},
			nil, 0, "MemagentChunksDone exists in namespace qa as Text, memagent needs Int"},
		{"a system attribute's name", map[string]enumspb.IndexedValueType{},
			map[string]enumspb.IndexedValueType{api.AttrStatus: enumspb.INDEXED_VALUE_TYPE_KEYWORD}, 0, "MemagentStatus is a system attribute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := &fakeOperator{custom: tt.custom, system: tt.system}
			added, err := searchattrs.Ensure(context.Background(), op, "qa", all, true)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				if op.adds != 0 {
					t.Errorf("%d AddSearchAttributes calls after a conflict, want none", op.adds)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(added) != tt.wantAdded {
				t.Errorf("added %v, want %d attributes", added, tt.wantAdded)
			}
			for name, typ := range all {
				if op.custom[name] != typ {
					t.Errorf("after setup %s = %v, want %v", name, op.custom[name], typ)
				}
			}
			// A second setup adds nothing.
			again, err := searchattrs.Ensure(context.Background(), op, "qa", all, true)
			if err != nil || len(again) != 0 {
				t.Errorf("second setup: added %v, err %v; want nothing and no error", again, err)
			}
			if !slices.IsSorted(added) {
				t.Errorf("added %v, want sorted names", added)
			}
		})
	}
}

// fakeNamespaces registers namespaces as the workflow service does.
type fakeNamespaces struct {
	workflowservice.WorkflowServiceClient // unused methods panic
	retention                             map[string]time.Duration
}

func (f *fakeNamespaces) RegisterNamespace(_ context.Context, req *workflowservice.RegisterNamespaceRequest, _ ...grpc.CallOption) (*workflowservice.RegisterNamespaceResponse, error) {
	if _, ok := f.retention[req.GetNamespace()]; ok {
		return nil, serviceerror.NewNamespaceAlreadyExists("namespace already exists")
	}
	f.retention[req.GetNamespace()] = req.GetWorkflowExecutionRetentionPeriod().AsDuration()
	return &workflowservice.RegisterNamespaceResponse{}, nil
}

func TestEnsureNamespace(t *testing.T) {
	ws := &fakeNamespaces{retention: map[string]time.Duration{"qa": 24 * time.Hour}}
	for _, tt := range []struct {
		name        string
		namespace   string
		wantCreated bool
		wantKept    time.Duration
	}{
		{"new", "memagent", true, 72 * time.Hour},
		{"again", "memagent", false, 72 * time.Hour},
		{"existing keeps its retention", "qa", false, 24 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			created, err := ensureNamespace(context.Background(), ws, tt.namespace, 72*time.Hour)
			if err != nil || created != tt.wantCreated {
				t.Fatalf("ensureNamespace(%s) = %v, %v; want %v, nil", tt.namespace, created, err, tt.wantCreated)
			}
			if got := ws.retention[tt.namespace]; got != tt.wantKept {
				t.Errorf("retention of %s = %s, want %s", tt.namespace, got, tt.wantKept)
			}
		})
	}
}

func TestEnsureAttributesWaitsForANewNamespace(t *testing.T) {
	calls := 0
	added, err := ensureAttributes(context.Background(), func() ([]string, error) {
		calls++
		if calls < 2 {
			return nil, fmt.Errorf("list search attributes of namespace qa: %w", serviceerror.NewNamespaceNotFound("qa"))
		}
		return []string{"MemagentStatus"}, nil
	})
	if err != nil || calls != 2 || len(added) != 1 {
		t.Errorf("ensureAttributes = %v, %v after %d calls; want one attribute after 2", added, err, calls)
	}
}
