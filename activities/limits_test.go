package activities

import (
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

func TestPrepareDocumentLimits(t *testing.T) {
	tests := []struct {
		name     string
		limits   Limits
		question string
		want     string
	}{
		{"document too large", Limits{MaxDocumentBytes: 100}, testQuestion, "over the worker's limit of 100"},
		{"too many chunks", Limits{MaxChunks: 2}, testQuestion, "has 5 chunks, over the worker's limit of 2: raise options.chunk_tokens"},
		{"question too long", Limits{}, strings.Repeat("why ", api.MaxQuestionBytes), "over the limit of 16384: shorten it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []byte(makeDoc(5)))
			f.acts.Limits = tt.limits
			var out actwire.PrepareOutput
			err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: testDocURI, Question: tt.question, Options: api.ModelOptions{ChunkTokens: 100}}, &out)
			appErr := appError(t, err)
			if appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() || !strings.Contains(appErr.Error(), tt.want) {
				t.Errorf("error %v (type %s), want a non-retryable %s containing %q", appErr, appErr.Type(), api.ErrBadInput, tt.want)
			}
		})
	}
}

func TestInvalidUTF8Policy(t *testing.T) {
	doc := []byte(makeDoc(3) + "bad \xff\xfe bytes\n")
	tests := []struct {
		policy   string
		wantErr  string
		replaced int64
	}{
		{"", "not UTF-8 text: invalid byte at offset", 0},
		{api.InvalidUTF8Reject, "or ask with invalid_utf8", 0},
		{api.InvalidUTF8Replace, "", 2},
	}
	for _, tt := range tests {
		t.Run("policy "+tt.policy, func(t *testing.T) {
			f := newFixture(t, doc)
			var out actwire.PrepareOutput
			err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: testDocURI, Question: testQuestion,
				Options: api.ModelOptions{ChunkTokens: 100, InvalidUTF8: tt.policy}}, &out)
			if tt.wantErr != "" {
				if appErr := appError(t, err); appErr.Type() != api.ErrBadInput || !strings.Contains(appErr.Error(), tt.wantErr) {
					t.Errorf("error %v, want BadInput containing %q", appErr, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.InvalidBytesReplaced != tt.replaced || out.Document == testDocURI || !strings.Contains(out.Document, "utf8-replaced") {
				t.Fatalf("prepare = %+v, want %d bytes replaced and a cleaned copy", out, tt.replaced)
			}
			// The chunks are read from the copy, which is valid UTF-8.
			var up actwire.UpdateOutput
			in := f.updateInput(out, out.Chunks-1)
			if err := f.exec(t, UpdateMemoryName, in, &up); err != nil {
				t.Fatalf("update of the last chunk: %v", err)
			}
			if last := f.model.Calls()[len(f.model.Calls())-1].Prompt; !strings.Contains(last, "bad \uFFFD\uFFFD bytes") {
				t.Errorf("the last chunk's prompt does not carry the replaced bytes")
			}
			// Asking again reuses the index and still reads the copy.
			var again actwire.PrepareOutput
			if err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: testDocURI, Question: testQuestion,
				Options: api.ModelOptions{ChunkTokens: 100, InvalidUTF8: tt.policy}}, &again); err != nil || !again.Reused || again.Document != out.Document {
				t.Errorf("second prepare = %+v, %v; want the reused index and the same copy", again, err)
			}
			// The reused index does not turn a later "reject" into a replace.
			err = f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: testDocURI, Question: testQuestion, Options: api.ModelOptions{ChunkTokens: 100}}, &again)
			if appErr := appError(t, err); appErr.Type() != api.ErrBadInput || !strings.Contains(appErr.Error(), "2 invalid bytes") {
				t.Errorf("reject after replace: %v, want BadInput naming 2 invalid bytes", appErr)
			}
		})
	}
}
