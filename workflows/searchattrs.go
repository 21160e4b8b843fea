package workflows

import (
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/memagent/memagent/internal/searchattrs"
)

// SearchAttributes returns every custom search attribute the workflows set,
// by name, with its type: the one list that `starter setup` and the dev
// stack register, kept in internal/searchattrs so that the libraries
// registering it need not link the workflows.
func SearchAttributes() map[string]enumspb.IndexedValueType { return searchattrs.Memagent() }
