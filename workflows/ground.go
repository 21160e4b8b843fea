package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// GroundingChange gates groundAnswers (gate: see VERSIONS.md,
// ground-answers).
const GroundingChange = "ground-answers"

// grounded is one answer's grounding and, from a worker that works it
// out, its citation (nil otherwise: the answer keeps the pages the Answer
// activity cited).
type grounded struct {
	Grounding *api.Grounding
	Citation  *api.Citation
}

// groundAnswers has GroundAnswer find the answers in the document that
// prep describes, one reading for all (their evidence first), and returns
// one grounding per answer, or nil on a run at DefaultVersion. Grounding
// adds to an answer already paid for: when it fails for good the answers
// stay, without grounding (the failure is logged); only a cancellation
// fails the run.
func groundAnswers(ctx workflow.Context, prep actwire.PrepareOutput, runID string, hb time.Duration, prio temporal.Priority, answers []actwire.GroundItem) ([]grounded, error) {
	return groundAnswersAt(ctx, gates{}, prep, runID, hb, prio, answers)
}

// groundAnswersAt is groundAnswers with the run's gates.
func groundAnswersAt(ctx workflow.Context, g gates, prep actwire.PrepareOutput, runID string, hb time.Duration, prio temporal.Priority, answers []actwire.GroundItem) ([]grounded, error) {
	if !g.at(ctx, GroundingChange) || len(answers) == 0 {
		return nil, nil
	}
	actx := workflow.WithActivityOptions(ctx, activityOptions(30*time.Minute, hb, prio, "ground answers"))
	var out actwire.GroundOutput
	err := actwire.GroundAnswer.Execute(actx, actwire.GroundInput{
		Document: prep.Document, ETag: prep.ETag, IndexURI: prep.IndexURI, Answers: answers, RunID: runID,
	}).Get(ctx, &out)
	if err != nil {
		if temporal.IsCanceledError(err) {
			return nil, err
		}
		workflow.GetLogger(ctx).Warn("answers not grounded", "error", err)
		return make([]grounded, len(answers)), nil
	}
	return groundedOf(&out, len(answers)), nil
}

// groundedOf is GroundAnswer's output for n answers as one grounded each;
// a nil out (grounding failed for good) grounds none of them.
func groundedOf(out *actwire.GroundOutput, n int) []grounded {
	gs := make([]grounded, n)
	if out == nil {
		return gs
	}
	for i := range gs {
		if i < len(out.Groundings) {
			g := out.Groundings[i]
			gs[i].Grounding = &g
		}
		if len(out.Citations) == n {
			c := out.Citations[i]
			gs[i].Citation = &c
		}
	}
	return gs
}
