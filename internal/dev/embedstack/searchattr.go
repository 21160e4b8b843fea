package embedstack

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/memagent/memagent/internal/searchattrs"
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
	_, err := searchattrs.Ensure(ctx, s.client.OperatorService(), s.Namespace, attrs, true)
	return err
}
