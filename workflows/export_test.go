package workflows

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
