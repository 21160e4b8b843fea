package searchattrs

import (
	"context"
	"errors"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc"
)

// fakeOperator serves the two calls Ensure makes; the embedded interface
// panics on any other.
type fakeOperator struct {
	operatorservice.OperatorServiceClient
	custom map[string]enumspb.IndexedValueType
	addErr error
	added  map[string]enumspb.IndexedValueType
}

func (f *fakeOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: f.custom,
		SystemAttributes: map[string]enumspb.IndexedValueType{"WorkflowId": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}, nil
}

func (f *fakeOperator) AddSearchAttributes(_ context.Context, r *operatorservice.AddSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	if f.addErr != nil {
		return nil, f.addErr
	}
	f.added = r.GetSearchAttributes()
	return &operatorservice.AddSearchAttributesResponse{}, nil
}

func TestEnsure(t *testing.T) {
	want := map[string]enumspb.IndexedValueType{"A": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "B": enumspb.INDEXED_VALUE_TYPE_INT}
	ctx := context.Background()

	t.Run("present", func(t *testing.T) {
		op := &fakeOperator{custom: want}
		if added, err := Ensure(ctx, op, "ns", want, true); err != nil || len(added) != 0 || op.added != nil {
			t.Fatalf("added %v, err %v, calls %v", added, err, op.added)
		}
	})
	t.Run("missing, added", func(t *testing.T) {
		op := &fakeOperator{custom: map[string]enumspb.IndexedValueType{"A": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}
		added, err := Ensure(ctx, op, "ns", want, true)
		if err != nil || len(added) != 1 || added[0] != "B" || len(op.added) != 1 {
			t.Fatalf("added %v (sent %v), err %v", added, op.added, err)
		}
	})
	t.Run("missing, not to be added", func(t *testing.T) {
		var missing *MissingError
		_, err := Ensure(ctx, &fakeOperator{}, "ns", want, false)
		if !errors.As(err, &missing) || strings.Join(missing.Names, ",") != "A,B" {
			t.Fatalf("err %v, want a MissingError naming A and B", err)
		}
	})
	t.Run("missing, refused", func(t *testing.T) {
		var missing *MissingError
		_, err := Ensure(ctx, &fakeOperator{addErr: serviceerror.NewPermissionDenied("no", "")}, "ns", want, true)
		if !errors.As(err, &missing) || missing.Cause == nil || !strings.Contains(err.Error(), "could not be added") {
			t.Fatalf("err %v, want a MissingError with the refusal", err)
		}
	})
	t.Run("other type", func(t *testing.T) {
		_, err := Ensure(ctx, &fakeOperator{custom: map[string]enumspb.IndexedValueType{"A": enumspb.INDEXED_VALUE_TYPE_TEXT}}, "ns", want, true)
		if err == nil || !strings.Contains(err.Error(), "exists in namespace ns as") {
			t.Fatalf("err %v", err)
		}
	})
}
