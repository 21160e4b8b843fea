package actwire

import (
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// The names memagent's activities are registered under: stable, since
// histories name them (package activities republishes each, for other
// programs).
const (
	AnswerName             = "memagent.Answer"
	AnswerAndGroundName    = "memagent.AnswerAndGround"
	AppendAuditName        = "memagent.AppendAudit"
	AssembleCorpusName     = "memagent.AssembleCorpus"
	CheckChildrenName      = "memagent.CheckBatchChildren"
	ClaimReportPrefixName  = "memagent.ClaimReportPrefix"
	ConvertDocumentName    = "memagent.ConvertDocument"
	EstimateCostName       = "memagent.EstimateCost"
	ExpandManifestName     = "memagent.ExpandManifest"
	ExtendValidationName   = "memagent.ExtendValidation"
	FindCheckpointName     = "memagent.FindCheckpoint"
	GroundAnswerName       = "memagent.GroundAnswer"
	LoadSignOffName        = "memagent.LoadSignOff"
	LoadValidationName     = "memagent.LoadValidation"
	NotifyChangesName      = "memagent.NotifyChanges"
	PrepareDocumentName    = "memagent.PrepareDocument"
	PrepareReadingName     = "memagent.PrepareReading"
	ReadBatchChildName     = "memagent.ReadBatchChild"
	RequestBatchBudgetName = "memagent.RequestBatchBudget"
	ResolveBatchPageName   = "memagent.ResolveBatchPage"
	ReviewUpdateName       = "memagent.ReviewUpdate"
	UpdateMemoryName       = "memagent.UpdateMemory"
	VerifyContinuedRunName = "memagent.VerifyContinuedRun"
	WriteBatchReportName   = "memagent.WriteBatchReport"
	WriteBatchResultsName  = "memagent.WriteBatchResults"
	WriteReviewName        = "memagent.WriteReview"
	WriteSignOffName       = "memagent.WriteSignOff"
	WriteValidationName    = "memagent.WriteValidationReport"
)

// Ref is a typed reference to one of memagent's activities: its stable
// name, the input it takes and the output it returns (as *O). The
// workflows schedule an activity through its Ref, and package activities'
// Register binds each Ref to its method, so a workflow that sends another
// input, a result read into another type, or a method that takes another
// input than its Ref fails to compile rather than at run time.
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

// The activities' references, one each, under the names above.
var (
	ConvertDocument    = Ref[ConvertInput, ConvertOutput]{ConvertDocumentName}
	AssembleCorpus     = Ref[CorpusInput, ConvertOutput]{AssembleCorpusName}
	FindCheckpoint     = Ref[FindCheckpointInput, FindCheckpointOutput]{FindCheckpointName}
	PrepareDocument    = Ref[PrepareInput, PrepareOutput]{PrepareDocumentName}
	UpdateMemory       = Ref[UpdateInput, UpdateOutput]{UpdateMemoryName}
	Answer             = Ref[AnswerInput, api.DocumentQAResult]{AnswerName}
	EstimateCost       = Ref[EstimateCostInput, api.Estimate]{EstimateCostName}
	GroundAnswer       = Ref[GroundInput, GroundOutput]{GroundAnswerName}
	PrepareReading     = Ref[PrepareReadingInput, PrepareReadingOutput]{PrepareReadingName}
	AnswerAndGround    = Ref[AnswerGroundInput, AnswerGroundOutput]{AnswerAndGroundName}
	VerifyContinuedRun = Ref0[VerifyRunInput]{VerifyContinuedRunName}
	ClaimReportPrefix  = Ref0[api.ClaimScheduleReportsInput]{ClaimReportPrefixName}

	ReviewUpdate = Ref[UpdateInput, ReviewUpdateOutput]{ReviewUpdateName}
	WriteReview  = Ref[WriteReviewInput, WriteReviewOutput]{WriteReviewName}

	ExpandManifest     = Ref[ExpandInput, ExpandOutput]{ExpandManifestName}
	ResolveBatchPage   = Ref[ResolvePageInput, ResolvePageOutput]{ResolveBatchPageName}
	WriteBatchResults  = Ref0[WriteResultsInput]{WriteBatchResultsName}
	WriteBatchReport   = Ref[ReportInput, api.BatchReport]{WriteBatchReportName}
	CheckChildren      = Ref[CheckChildrenInput, CheckChildrenOutput]{CheckChildrenName}
	NotifyChanges      = Ref0[NotifyInput]{NotifyChangesName}
	RequestBatchBudget = Ref[BudgetRequestInput, api.Budget]{RequestBatchBudgetName}
	ReadBatchChild     = Ref[ChildRef, ChildUsage]{ReadBatchChildName}

	LoadSignOff  = Ref[LoadSignOffInput, LoadSignOffOutput]{LoadSignOffName}
	AppendAudit  = Ref0[AppendAuditInput]{AppendAuditName}
	WriteSignOff = Ref[WriteSignOffInput, WriteSignOffOutput]{WriteSignOffName}

	LoadValidation   = Ref[LoadValidationInput, LoadValidationOutput]{LoadValidationName}
	ExtendValidation = Ref[ExtendValidationInput, ExtendValidationOutput]{ExtendValidationName}
	WriteValidation  = Ref[WriteValidationInput, WriteValidationOutput]{WriteValidationName}
)
