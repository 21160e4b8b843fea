package workflows

import (
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/memagent/memagent/activities"
)

// RawJSON is rawJSON for the external tests: one argument as a client in
// another language sends it.
var RawJSON = rawJSON

// testRunID is the run id the SDK's test environment gives every run: a
// test that runs a continued generation names it as the previous run.
const testRunID = "default-test-run-id"

// ReviewRunInput is the input of a continued ReviewDocument run, for the
// external tests that follow continue-as-new.
type ReviewRunInput = reviewRunInput

// TestRunID is testRunID for the external tests.
const TestRunID = testRunID

// ReviewState and ReviewQuestionState let the external tests build a
// review's carried state.
type (
	ReviewState         = reviewState
	ReviewQuestionState = reviewQuestionState
)

// ContinuedFrom makes env's run a continuation of testRunID that
// VerifyContinuedRun proves memagent's own, as Temporal would answer for a
// run memagent's worker continued as new (the test environment has no
// server to ask).
func ContinuedFrom(env *testsuite.TestWorkflowEnvironment) {
	env.SetContinuedExecutionRunID(testRunID)
	env.OnActivity(activities.VerifyContinuedRunName, mock.Anything, mock.Anything).Return(nil)
}
