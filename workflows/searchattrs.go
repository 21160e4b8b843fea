package workflows

import (
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/memagent/memagent/api"
)

// SearchAttributes returns every custom search attribute the workflows set,
// by name, with its type: the one list that `starter setup` and the dev
// stack register. SQL visibility allows 3 Int, 10 Keyword and 3 Text custom
// attributes per namespace; this list uses 3 Int and 6 Keyword.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		api.AttrDocument:       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrModel:          enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrQuestionDigest: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrBatch:          enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrChunksDone:     enumspb.INDEXED_VALUE_TYPE_INT,
		api.AttrChunksTotal:    enumspb.INDEXED_VALUE_TYPE_INT,
		api.AttrStatus:         enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		api.AttrChangedItems:   enumspb.INDEXED_VALUE_TYPE_INT,
		api.AttrSignoff:        enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}
