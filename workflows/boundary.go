package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/contract"
)

// StatusLifecycleChange gates the closed status of runs: StageContinued,
// StageCanceled, and StageFailed for input that does not decode (gate: see
// VERSIONS.md, status-lifecycle).
const StatusLifecycleChange = "status-lifecycle"

// boundary is what every workflow does at its edges: it decodes the input
// strictly, and it tags the run's closed status.
type boundary struct {
	ctx       workflow.Context
	lifecycle bool
}

// newBoundary must be called before the workflow issues any command other
// than its own GetVersion markers.
func newBoundary(ctx workflow.Context) boundary {
	return newBoundaryAt(ctx, gates{})
}

// newBoundaryAt is newBoundary with the run's gates.
func newBoundaryAt(ctx workflow.Context, g gates) boundary {
	return boundary{ctx: ctx, lifecycle: g.at(ctx, StatusLifecycleChange)}
}

// decode reads the workflow's one argument, a JSON object, into v
// strictly: unknown members, wrong types and malformed JSON fail as
// memagent.BadInput naming the JSON path. The check is pure, so it replays.
func (b boundary) decode(raw converter.RawValue, v any) error {
	p := raw.Payload()
	if p == nil || len(p.GetData()) == 0 {
		return badInput(errors.New("input is missing: start the workflow with one JSON object"))
	}
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		return badInput(fmt.Errorf("input is encoded as %q: send one JSON object (encoding %q)", enc, converter.MetadataEncodingJSON))
	}
	// workflowcheck flags encoding/json's reflection and the map walk of
	// contract.Decode, which sorts the keys before it uses them: the
	// decoding is a pure function of the payload.
	//workflowcheck:ignore
	if err := contract.Decode(p.GetData(), v); err != nil {
		var fe contract.FieldErrors
		if errors.As(err, &fe) {
			return badInput(fmt.Errorf("input: %w", fe))
		}
		return err
	}
	return nil
}

// closedStatus is the MemagentStatus for a run that ends with err, or ""
// when this run's version leaves it as it was.
func (b boundary) closedStatus(err error) string {
	var can *workflow.ContinueAsNewError
	switch {
	case err == nil:
		return api.StageDone
	case errors.As(err, &can):
		if b.lifecycle {
			return api.StageContinued
		}
		return ""
	case temporal.IsCanceledError(err) && b.lifecycle:
		return api.StageCanceled
	}
	return api.StageFailed
}

func badInput(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), api.ErrBadInput, nil)
}
