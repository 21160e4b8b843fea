package activities

import (
	"context"
	"reflect"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// Registry is the part of a worker (or of a plugin's registry) that
// activities are registered on.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers every memagent activity under its stable name. The
// worker command and the plugin both use it.
//
// Every activity is registered guarded (ownCallers): a workflow of
// anyone's, on any task queue, can schedule an activity on memagent's task
// queue by name with any input, and only memagent's own workflows may have
// memagent's worker run one.
func (a *Activities) Register(r Registry) {
	r = ownCallers{r: r, a: a}
	bind(r, actwire.ConvertDocument, a.convertDocument)
	bind(r, actwire.AssembleCorpus, a.assembleCorpus)
	bind(r, actwire.FindCheckpoint, a.findCheckpoint)
	bind(r, actwire.PrepareDocument, a.prepareDocument)
	bind(r, actwire.UpdateMemory, a.updateMemory)
	bind(r, actwire.Answer, a.answer)
	bind(r, actwire.EstimateCost, a.estimateCost)
	bind(r, actwire.GroundAnswer, a.groundAnswer)
	bind(r, actwire.PrepareReading, a.prepareReading)
	bind(r, actwire.AnswerAndGround, a.answerAndGround)
	bind0(r, actwire.VerifyContinuedRun, a.verifyContinuedRun)
	bind0(r, actwire.ClaimReportPrefix, a.claimScheduleReportPrefix)
	a.registerReview(r)
	a.registerBatch(r)
	a.registerSignOff(r)
	a.registerValidation(r)
}

// memagentWorkflows are the workflow types whose runs may have memagent's
// activities run.
var memagentWorkflows = []string{api.DocumentQAName, api.ReviewDocumentName, api.BatchQAName, api.EstimateName, api.SignOffName, api.ClaimScheduleReportsName, api.ValidateName}

// ownCallers is a Registry that registers each activity wrapped so that
// an activity task runs only when the workflow that scheduled it is one of
// memagent's own, on memagent's task queue, in a chain that started so
// (callerIs, which remembers each run it found memagent's: one describe a
// run). A task scheduled by anyone else fails as memagent.Forbidden before
// the activity reads or writes anything. Local activities need no check:
// only the workflow worker that runs the workflow schedules them.
type ownCallers struct {
	r Registry
	a *Activities
}

func (g ownCallers) RegisterActivityWithOptions(fn any, options activity.RegisterOptions) {
	g.r.RegisterActivityWithOptions(g.a.guard(fn), options)
}

// guard wraps fn, an activity func(ctx, ...) (..., error), in the check of
// its caller; a refusal returns zero values and the error.
func (a *Activities) guard(fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		ctx, _ := args[0].Interface().(context.Context)
		if ctx != nil && activity.IsActivity(ctx) && !activity.GetInfo(ctx).IsLocalActivity {
			if err := a.callerIs(ctx, memagentWorkflows...); err != nil {
				out := make([]reflect.Value, t.NumOut())
				for i := range out {
					out[i] = reflect.Zero(t.Out(i))
				}
				out[len(out)-1] = reflect.ValueOf(&err).Elem()
				return out
			}
		}
		return v.Call(args)
	}).Interface()
}
