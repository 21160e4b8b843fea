package workflows

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// TestClaimScheduleReports: the workflow hands its input to the worker's
// claim activity as it is, returns the activity's refusal with its type
// (the CLI maps memagent.Forbidden to --report-prefix), and refuses an
// input without a schedule as memagent.BadInput before any activity.
func TestClaimScheduleReports(t *testing.T) {
	forbidden := temporal.NewNonRetryableApplicationError("report_prefix s3://b/x/ is inside another claim", api.ErrForbidden, nil)
	for _, tt := range []struct {
		name     string
		in       api.ClaimScheduleReportsInput
		actErr   error
		wantType string // "" = success
		wantCall bool
	}{
		{"claimed", api.ClaimScheduleReportsInput{ScheduleID: "nightly", ReportPrefix: "s3://b/reports/nightly/"}, nil, "", true},
		{"refused", api.ClaimScheduleReportsInput{ScheduleID: "nightly", ReportPrefix: "s3://b/x/"}, forbidden, api.ErrForbidden, true},
		{"no schedule", api.ClaimScheduleReportsInput{ReportPrefix: "s3://b/x/"}, nil, api.ErrBadInput, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(ClaimScheduleReports, workflow.RegisterOptions{Name: api.ClaimScheduleReportsName})
			var got *api.ClaimScheduleReportsInput
			env.RegisterActivityWithOptions(func(_ context.Context, in api.ClaimScheduleReportsInput) error {
				got = &in
				return tt.actErr
			}, activity.RegisterOptions{Name: actwire.ClaimReportPrefixName})
			env.ExecuteWorkflow(api.ClaimScheduleReportsName, tt.in)
			if !env.IsWorkflowCompleted() {
				t.Fatal("the workflow did not complete")
			}
			err := env.GetWorkflowError()
			var appErr *temporal.ApplicationError
			switch {
			case tt.wantType == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.wantType != "" && (!errors.As(err, &appErr) || appErr.Type() != tt.wantType):
				t.Fatalf("error %v, want one of type %s", err, tt.wantType)
			}
			if (got != nil) != tt.wantCall || (got != nil && *got != tt.in) {
				t.Errorf("activity input %+v, want called %v with %+v", got, tt.wantCall, tt.in)
			}
		})
	}
}
