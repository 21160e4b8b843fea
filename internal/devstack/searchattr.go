package devstack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
)

// RegisterSearchAttributes registers custom search attributes (name → type)
// in the stack's namespace through the operator service. Attributes that
// already exist with the same type are left alone, so calling it again, or
// after a restart on the same DataDir, is a no-op. An existing attribute of
// another type, or a system attribute's name, is an error.
func (s *Stack) RegisterSearchAttributes(ctx context.Context, attrs map[string]enumspb.IndexedValueType) error {
	if s.client == nil {
		return errors.New("register search attributes: stack not started")
	}
	op := s.client.OperatorService()
	list, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.Namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of %s: %w", s.Namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		want := attrs[name]
		if _, ok := list.GetSystemAttributes()[name]; ok {
			return fmt.Errorf("search attribute %s is a system attribute: pick another name", name)
		}
		if got, ok := list.GetCustomAttributes()[name]; ok {
			if got != want {
				return fmt.Errorf("search attribute %s exists as %s, not %s: rename it or use a fresh data dir", name, got, want)
			}
			continue
		}
		missing[name] = want
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        s.Namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes to %s: %w", s.Namespace, err)
	}
	return nil
}
