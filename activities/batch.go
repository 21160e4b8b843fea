package activities

import (
	"fmt"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// Names of the BatchQA activities. They are part of the wire format.
const (
	ExpandManifestName    = actwire.ExpandManifestName
	ResolveBatchPageName  = actwire.ResolveBatchPageName
	WriteBatchResultsName = actwire.WriteBatchResultsName
	WriteBatchReportName  = actwire.WriteBatchReportName
	CheckChildrenName     = actwire.CheckChildrenName
	// NotifyChangesName POSTs a batch's change notification to its
	// notify_url.
	NotifyChangesName = actwire.NotifyChangesName
)

// ErrBatchIncomplete is the type of WriteBatchReport's failure when an item
// of the manifest has no outcome in the parts it was given.
const ErrBatchIncomplete = "memagent.BatchIncomplete"

// Batch defaults and bounds.
const (
	defaultPageSize = api.DefaultPageSize
	maxPageSize     = api.MaxPageSize
	// pageBytes closes a page early, so that the items of one page (which
	// enter workflow history as ResolveBatchPage's output) stay small.
	pageBytes = 256 << 10
	// maxManifestErrors is how many bad items an expansion lists before it
	// gives up.
	maxManifestErrors = 10
	// resolveParallel bounds the S3 requests one ResolveBatchPage makes at
	// once.
	resolveParallel = 8
	// MaxBatchUnits bounds a batch's items × samples: the report keeps a
	// small record per outcome (16 bytes), 64 MB at this bound.
	MaxBatchUnits = 4_000_000
)

// registerBatch registers the activities of the BatchQA workflow.
func (a *Activities) registerBatch(r Registry) {
	bind(r, actwire.ExpandManifest, a.expandManifest)
	bind(r, actwire.ResolveBatchPage, a.resolveBatchPage)
	bind0(r, actwire.WriteBatchResults, a.writeBatchResults)
	bind(r, actwire.WriteBatchReport, a.writeBatchReport)
	bind(r, actwire.CheckChildren, a.checkBatchChildren)
	bind0(r, actwire.NotifyChanges, a.notifyChanges)
	bind(r, actwire.RequestBatchBudget, a.requestBatchBudget)
	bind(r, actwire.ReadBatchChild, a.readBatchChild)
}

// PagePath is the path of page n under a batch's work prefix.
func PagePath(n int) string { return fmt.Sprintf("items/%06d.jsonl", n) }
