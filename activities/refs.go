package activities

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// Ref is a typed reference to one of memagent's activities: its stable
// name, the input it takes and the output it returns (as *O). The
// workflows schedule an activity through its Ref, and Register binds each
// Ref to its method with bind, so a workflow that sends another input, a
// result read into another type, or a method that takes another input
// than its Ref fails to compile rather than at run time.
type Ref[I, O any] struct{ Name string }

// Execute schedules the activity with in, under the activity options of
// ctx.
func (r Ref[I, O]) Execute(ctx workflow.Context, in I) Future[O] {
	return Future[O]{workflow.ExecuteActivity(ctx, r.Name, in)}
}

// Future is the result of an activity with output O to come. Its Future
// field is the SDK's, for a selector.
type Future[O any] struct{ workflow.Future }

// Get waits for the activity and fills out with its output.
func (f Future[O]) Get(ctx workflow.Context, out *O) error { return f.Future.Get(ctx, out) }

// Ref0 is a Ref to an activity that returns only an error.
type Ref0[I any] struct{ Name string }

// Execute schedules the activity with in, under the activity options of
// ctx.
func (r Ref0[I]) Execute(ctx workflow.Context, in I) Future0 {
	return Future0{workflow.ExecuteActivity(ctx, r.Name, in)}
}

// ExecuteLocal runs the activity as a local activity with in, under the
// local activity options of ctx.
func (r Ref0[I]) ExecuteLocal(ctx workflow.Context, in I) Future0 {
	return Future0{workflow.ExecuteLocalActivity(ctx, r.Name, in)}
}

// Future0 is the outcome of an activity that returns only an error.
type Future0 struct{ workflow.Future }

// Get waits for the activity and returns its error.
func (f Future0) Get(ctx workflow.Context) error { return f.Future.Get(ctx, nil) }

// bind registers fn under ref's name: fn's input and output must be ref's.
func bind[I, O any](r Registry, ref Ref[I, O], fn func(context.Context, I) (*O, error)) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: ref.Name})
}

// bind0 registers fn, which returns only an error, under ref's name.
func bind0[I any](r Registry, ref Ref0[I], fn func(context.Context, I) error) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: ref.Name})
}

// The activities' references, one each, beside the names they are
// registered under (types.go).
var (
	ConvertDocument    = Ref[actwire.ConvertInput, actwire.ConvertOutput]{ConvertDocumentName}
	AssembleCorpus     = Ref[actwire.CorpusInput, actwire.ConvertOutput]{AssembleCorpusName}
	FindCheckpoint     = Ref[actwire.FindCheckpointInput, actwire.FindCheckpointOutput]{FindCheckpointName}
	PrepareDocument    = Ref[actwire.PrepareInput, actwire.PrepareOutput]{PrepareDocumentName}
	UpdateMemory       = Ref[actwire.UpdateInput, actwire.UpdateOutput]{UpdateMemoryName}
	Answer             = Ref[actwire.AnswerInput, api.DocumentQAResult]{AnswerName}
	EstimateCost       = Ref[actwire.EstimateCostInput, api.Estimate]{EstimateCostName}
	GroundAnswer       = Ref[actwire.GroundInput, actwire.GroundOutput]{GroundAnswerName}
	VerifyContinuedRun = Ref0[actwire.VerifyRunInput]{VerifyContinuedRunName}

	ReviewUpdate = Ref[actwire.UpdateInput, actwire.ReviewUpdateOutput]{ReviewUpdateName}
	WriteReview  = Ref[actwire.WriteReviewInput, actwire.WriteReviewOutput]{WriteReviewName}

	ExpandManifest     = Ref[actwire.ExpandInput, actwire.ExpandOutput]{ExpandManifestName}
	ResolveBatchPage   = Ref[actwire.ResolvePageInput, actwire.ResolvePageOutput]{ResolveBatchPageName}
	WriteBatchResults  = Ref0[actwire.WriteResultsInput]{WriteBatchResultsName}
	WriteBatchReport   = Ref[actwire.ReportInput, api.BatchReport]{WriteBatchReportName}
	CheckChildren      = Ref[actwire.CheckChildrenInput, actwire.CheckChildrenOutput]{CheckChildrenName}
	NotifyChanges      = Ref0[actwire.NotifyInput]{NotifyChangesName}
	RequestBatchBudget = Ref[actwire.BudgetRequestInput, api.Budget]{RequestBatchBudgetName}
	ReadBatchChild     = Ref[actwire.ChildRef, actwire.ChildUsage]{ReadBatchChildName}

	LoadSignOff  = Ref[actwire.LoadSignOffInput, actwire.LoadSignOffOutput]{LoadSignOffName}
	AppendAudit  = Ref0[actwire.AppendAuditInput]{AppendAuditName}
	WriteSignOff = Ref[actwire.WriteSignOffInput, actwire.WriteSignOffOutput]{WriteSignOffName}
)
