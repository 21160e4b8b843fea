package memclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// StartValidation starts the validation of a completed batch or review
// (api.ValidateName) under api.ValidationWorkflowID of it, or joins the
// one already there, and returns its workflow id. It refuses, before
// anything starts, input that can never succeed (in.Validate) and a
// subject that is not a completed batch or review of memagent's.
func (c *Client) StartValidation(ctx context.Context, in api.ValidateInput) (string, error) {
	if err := in.Validate(); err != nil {
		return "", fmt.Errorf("memagent: %w", err)
	}
	subject, kind := in.Subject()
	typ := api.BatchQAName
	if kind == api.SubjectReview {
		typ = api.ReviewDocumentName
	}
	x, err := c.Verify(ctx, subject, "", typ)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return "", fmt.Errorf("memagent: no %s %q: name the workflow id of a finished %s", kind, subject, kind)
	case err != nil:
		return "", fmt.Errorf("memagent: %s %s: %w", kind, subject, err)
	case x.Status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "", fmt.Errorf("memagent: %s %s is %s: only a completed %s is validated; start the validation once it completes",
			kind, subject, strings.ToLower(strings.TrimPrefix(x.Status.String(), "WORKFLOW_EXECUTION_STATUS_")), kind)
	}
	id := api.ValidationWorkflowID(subject)
	_, err = c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: c.taskQueue,
		// A validation that failed (bad input) may be started again; a
		// signed-off one is final, and is joined.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "validation of " + subject,
	}, api.ValidateName, in)
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &exists) {
		return "", fmt.Errorf("memagent: start the validation of %s: %w", subject, err)
	}
	return id, nil
}

// AwaitValidation waits until validation id has drawn its sample and
// returns its view as no reviewer sees it, or returns the error it failed
// with (a subject not completed, a sample larger than its stratum:
// memagent.BadInput) when it failed while drawing.
func (c *Client) AwaitValidation(ctx context.Context, id string) (*api.ValidationView, error) {
	for {
		x, err := c.validation(ctx, id)
		if err != nil {
			return nil, err
		}
		switch x.Status {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		default:
			if err := c.c.GetWorkflow(ctx, x.WorkflowID, x.RunID).Get(ctx, nil); err != nil {
				return nil, fmt.Errorf("memagent: validation %s: %w", id, err)
			}
			return nil, fmt.Errorf("memagent: validation %s is %s", id, strings.ToLower(strings.TrimPrefix(x.Status.String(), "WORKFLOW_EXECUTION_STATUS_")))
		}
		vw, err := c.Validation(ctx, id, "")
		if err == nil || !strings.Contains(err.Error(), "still drawing") {
			return vw, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// validation verifies that the execution under id is memagent's Validate.
func (c *Client) validation(ctx context.Context, id string) (Execution, error) {
	x, err := c.Verify(ctx, id, "", api.ValidateName)
	if err != nil {
		return Execution{}, fmt.Errorf("memagent: validation %s: %w", id, err)
	}
	return x, nil
}

// Validation returns the validation id as reviewer ("" for none) sees
// it: the sample (in blind mode without the model's answers the reviewer
// has not revealed) and the figures so far. For a completed validation it
// returns its report.
func (c *Client) Validation(ctx context.Context, id, reviewer string) (*api.ValidationView, error) {
	x, err := c.validation(ctx, id)
	if err != nil {
		return nil, err
	}
	var vw api.ValidationView
	if x.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		if err := c.c.GetWorkflow(ctx, x.WorkflowID, x.RunID).Get(ctx, &vw); err != nil {
			return nil, fmt.Errorf("memagent: report of %s: %w", id, err)
		}
		return &vw, nil
	}
	v, err := c.c.QueryWorkflow(ctx, x.WorkflowID, x.RunID, api.ValidationQuery, reviewer)
	if err != nil {
		return nil, fmt.Errorf("memagent: validation %s: %w", id, err)
	}
	if err := v.Get(&vw); err != nil {
		return nil, fmt.Errorf("memagent: validation %s: %w", id, err)
	}
	return &vw, nil
}

func validationUpdate[T any](ctx context.Context, c *Client, id, name string, arg any) (*T, error) {
	x, err := c.validation(ctx, id)
	if err != nil {
		return nil, err
	}
	return updateVerified[T](ctx, c, x, name, arg)
}

// DecideValidation records a reviewer's decision on a sampled cell of
// validation id; a refusal (the workflow's validator) is the error.
func (c *Client) DecideValidation(ctx context.Context, id string, r api.ValidationDecision) (*api.ValidationView, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return validationUpdate[api.ValidationView](ctx, c, id, api.ValidationDecideUpdate, r)
}

// RevealValidation shows a reviewer the model's answer of a sampled cell,
// recorded: in blind mode the reviewer can no longer decide that cell.
func (c *Client) RevealValidation(ctx context.Context, id string, r api.ValidationReveal) (*api.ValidationCell, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return validationUpdate[api.ValidationCell](ctx, c, id, api.ValidationRevealUpdate, r)
}

// ExtendValidation grows the sample of validation id for a narrower
// margin or a larger sample a stratum (api.ValidationExtend): each
// stratum takes the next cells of the same draw. It returns the view once
// the new cells are drawn; a refusal (the workflow's validator) is the
// error.
func (c *Client) ExtendValidation(ctx context.Context, id string, r api.ValidationExtend) (*api.ValidationView, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return validationUpdate[api.ValidationView](ctx, c, id, api.ValidationExtendUpdate, r)
}

// FinishValidation signs validation id off; the workflow writes its
// report and completes with it.
func (c *Client) FinishValidation(ctx context.Context, id string, r api.ValidationFinish) (*api.ValidationReport, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	if _, err := validationUpdate[api.ValidationView](ctx, c, id, api.ValidationFinishUpdate, r); err != nil {
		return nil, err
	}
	x, err := c.validation(ctx, id)
	if err != nil {
		return nil, err
	}
	var rep api.ValidationReport
	if err := c.c.GetWorkflow(ctx, x.WorkflowID, "").Get(ctx, &rep); err != nil {
		return nil, fmt.Errorf("memagent: report of %s: %w", id, err)
	}
	return &rep, nil
}
