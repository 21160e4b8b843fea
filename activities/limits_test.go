package activities

import (
	"strings"
	"testing"
)

func TestPrepareDocumentLimits(t *testing.T) {
	tests := []struct {
		name     string
		limits   Limits
		question string
		want     string
	}{
		{"document too large", Limits{MaxDocumentBytes: 100}, testQuestion, "over the worker's limit of 100"},
		{"too many chunks", Limits{MaxChunks: 2}, testQuestion, "has 5 chunks, over the worker's limit of 2: raise --chunk-tokens"},
		{"question too long", Limits{}, strings.Repeat("why ", MaxQuestionBytes), "over the limit of 16384: shorten it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []byte(makeDoc(5)))
			f.acts.Limits = tt.limits
			var out PrepareOutput
			err := f.exec(t, PrepareDocumentName, PrepareInput{Document: testDocURI, Question: tt.question, Options: ModelOptions{ChunkTokens: 100}}, &out)
			appErr := appError(t, err)
			if appErr.Type() != ErrBadInput || !appErr.NonRetryable() || !strings.Contains(appErr.Error(), tt.want) {
				t.Errorf("error %v (type %s), want a non-retryable %s containing %q", appErr, appErr.Type(), ErrBadInput, tt.want)
			}
		})
	}
}
