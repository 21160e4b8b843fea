package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/actwire"
)

// An item's steps that run back to back in its workflow are one activity
// each at the workflow's LeanItemChange: every activity costs the server
// a workflow task (a read of the run's history and two writes of its
// state) and three events. Each step below is the activity it stands for,
// called in process with the input the workflow would have given it; the
// old activities stay registered for the runs that schedule them.

// prepareReading runs the steps before a reading's first chunk: the
// conversion (or the corpus), the index, and the checkpoint search. Each
// is idempotent as its own activity is (conversions and indexes are
// stored and found again, the search only reads), so a retry repeats
// checks, not work.
func (a *Activities) prepareReading(ctx context.Context, in actwire.PrepareReadingInput) (*actwire.PrepareReadingOutput, error) {
	prep, out := in.Prepare, &actwire.PrepareReadingOutput{}
	switch {
	case in.Corpus != nil:
		conv, err := a.assembleCorpus(ctx, *in.Corpus)
		if err != nil {
			return nil, stepFailure("assemble corpus", err)
		}
		prep.Document, prep.Converted, out.Converted = conv.Document, conv, conv
	case in.Convert:
		conv, err := a.convertDocument(ctx, actwire.ConvertInput{
			Document: prep.Document, OCR: prep.Options.OCR, OCRLanguages: prep.Options.OCRLanguages,
		})
		if err != nil {
			return nil, stepFailure("convert document", err)
		}
		if conv.Source != "" {
			prep.Document, prep.Converted = conv.Document, conv
		}
		out.Converted = conv
	}
	p, err := a.prepareDocument(ctx, prep)
	if err != nil {
		return nil, stepFailure("prepare document", err)
	}
	out.Prepared = *p
	if in.Find != nil {
		find := *in.Find
		find.Document, find.ETag, find.IndexURI = p.Document, p.ETag, p.IndexURI
		if find.Options.Model == "" {
			find.Options.Model = p.Model
		}
		cp, err := a.findCheckpoint(ctx, find)
		if err != nil {
			return nil, stepFailure("find checkpoint", err)
		}
		out.Checkpoint = cp
	}
	return out, nil
}

// answerAndGround answers (Answer's step) and grounds the answer
// (GroundAnswer's step) under one heartbeat, whose details keep the paid
// completion until the activity ends: a retry after a grounding that
// failed takes the answer from them, or from the result already written,
// and never pays for it again. A grounding that fails for good leaves the
// answer without grounding, as a run whose GroundAnswer failed does;
// any other failure is retried, the answer with it (paid once).
func (a *Activities) answerAndGround(ctx context.Context, in actwire.AnswerGroundInput) (*actwire.AnswerGroundOutput, error) {
	ctx, hb := a.beginHeartbeat(ctx)
	defer hb.stop()
	res, paid, err := a.answerWith(ctx, hb, in.Answer)
	if err != nil {
		return nil, stepFailure("answer", err)
	}
	out := &actwire.AnswerGroundOutput{Result: *res}
	g, err := a.groundAnswer(ctx, actwire.GroundInput{
		Document: in.Document, ETag: in.ETag, IndexURI: in.IndexURI, RunID: in.Answer.Result.RunID,
		Answers: []actwire.GroundItem{{Answer: res.Answer, AnswerFound: res.AnswerFound, ResultURI: res.ResultURI,
			Evidence: actwire.GroundEvidenceOf(res.Evidence)}},
	})
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		out.Ground = g
	case errors.As(err, &appErr) && appErr.NonRetryable():
		a.logger().WarnContext(ctx, "answers not grounded", "err", err)
	default:
		return nil, stepFailure("ground answers", err)
	}
	paid()
	return out, nil
}

// stepFailure names the step of a merged activity that failed in its
// error's message, keeping the error's type, whether it is retried and
// the retry delay it asks for.
func stepFailure(step string, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return temporal.NewApplicationErrorWithOptions(step+": "+appErr.Message(), appErr.Type(), temporal.ApplicationErrorOptions{
			NonRetryable: appErr.NonRetryable(), NextRetryDelay: appErr.NextRetryDelay(),
		})
	}
	return fmt.Errorf("%s: %w", step, err)
}
