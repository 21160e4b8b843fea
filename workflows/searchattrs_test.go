package workflows

import (
	"maps"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// upserts records every UpsertTypedSearchAttributes call of the runs it is
// installed in, as name → value.
type upserts struct{ calls []map[string]any }

func (u *upserts) install(env *testsuite.TestWorkflowEnvironment) {
	env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		call := map[string]any{}
		for k, v := range args.Get(0).(temporal.SearchAttributes).GetUntypedValues() {
			call[k.GetName()] = v
		}
		u.calls = append(u.calls, call)
	})
}

// merged is what visibility holds after all the calls.
func (u *upserts) merged() map[string]any {
	m := map[string]any{}
	for _, c := range u.calls {
		maps.Copy(m, c)
	}
	return m
}

func TestDocumentQAUpsertsSearchAttributes(t *testing.T) {
	tests := []struct {
		name     string
		chunks   int
		perRun   int
		wantRuns int
		// perChunk runs the workflow as recorded before
		// CoalesceUpsertsChange: a chunk count upsert after every chunk.
		// Else the chunks, all read within progressUpsertEvery, upsert no
		// count of their own.
		perChunk bool
	}{
		{"one run", 5, 0, 1, false},
		{"continued as new every 2 chunks", 5, 2, 3, false},
		{"one run, before coalescing", 5, 0, 1, true},
		{"continued as new every 2 chunks, before coalescing", 5, 2, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, makeDoc(tt.chunks))
			var u upserts
			f.setup = func(env *testsuite.TestWorkflowEnvironment) {
				u.install(env)
				if tt.perChunk {
					// A run from before LeanItemChange, which asks the gate.
					env.OnGetVersion(QuietProgressChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
					env.OnGetVersion(LeanItemChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
					env.OnGetVersion(CoalesceUpsertsChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
				}
			}
			in := api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q?", BatchID: "eval-7",
				Options: api.ModelOptions{ChunkTokens: 100}, ChunksPerRun: tt.perRun}
			_, runs := f.runToEnd(t, in)
			if runs != tt.wantRuns {
				t.Fatalf("runs = %d, want %d", runs, tt.wantRuns)
			}
			want := map[string]any{
				api.AttrDocument: "s3://docs/doc.txt", api.AttrModel: "fake", api.AttrQuestionDigest: api.QuestionDigest("q?"),
				api.AttrBatch: "eval-7", api.AttrChunksDone: int64(tt.chunks), api.AttrChunksTotal: int64(tt.chunks), api.AttrStatus: api.StageDone,
			}
			if got := u.merged(); !maps.Equal(got, want) {
				t.Errorf("search attributes = %v, want %v", got, want)
			}
			// Per run: one at its start and, but for the last, "continued"
			// at its end; in the first, one after prepare; before
			// coalescing, one per chunk but the last, whose count goes with
			// "answering"; and "done".
			perChunk := 0
			if tt.perChunk {
				perChunk = tt.chunks - 1
			}
			if want := tt.wantRuns + (tt.wantRuns - 1) + 1 + perChunk + 2; len(u.calls) != want {
				t.Errorf("%d upserts, want %d: %v", len(u.calls), want, u.calls)
			}
			var statuses []any
			last := int64(-1)
			for _, c := range u.calls {
				if s, ok := c[api.AttrStatus]; ok {
					statuses = append(statuses, s)
				}
				if n, ok := c[api.AttrChunksDone].(int64); ok {
					if n < last {
						t.Errorf("chunks done went from %d back to %d", last, n)
					}
					last = n
				}
			}
			if statuses[0] != api.StagePreparing || statuses[len(statuses)-1] != api.StageDone {
				t.Errorf("statuses %v, want preparing first and done last", statuses)
			}
		})
	}
}

func TestDocumentQAUpsertsFailedStatus(t *testing.T) {
	f := newFixture(t, makeDoc(2))
	var u upserts
	f.setup = u.install
	_, err := f.run(t, api.DocumentQAInput{Document: "s3://docs/missing.txt", Question: "q"})
	if err == nil {
		t.Fatal("run of a missing document succeeded")
	}
	if got := u.merged()[api.AttrStatus]; got != api.StageFailed {
		t.Errorf("%s = %v, want %q; upserts %v", api.AttrStatus, got, api.StageFailed, u.calls)
	}
}

// Runs recorded before search attributes replay as DefaultVersion and must
// not upsert: an upsert their history lacks is a nondeterminism error.
func TestDocumentQAAtDefaultVersionUpsertsNothing(t *testing.T) {
	f := newFixture(t, makeDoc(3))
	var u upserts
	f.setup = func(env *testsuite.TestWorkflowEnvironment) {
		env.OnGetVersion(QuietProgressChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		env.OnGetVersion(LeanItemChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		env.OnGetVersion(SearchAttributesChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		u.install(env)
	}
	res, _ := f.runToEnd(t, api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q?", Options: api.ModelOptions{ChunkTokens: 100}})
	if res.Answer != "w002" {
		t.Errorf("answer = %q, want w002", res.Answer)
	}
	if len(u.calls) != 0 {
		t.Errorf("%d upserts at DefaultVersion, want none: %v", len(u.calls), u.calls)
	}
}

func TestSearchAttributesFitSQLVisibility(t *testing.T) {
	counts := map[string]int{}
	for name, typ := range SearchAttributes() {
		if !strings.HasPrefix(name, "Memagent") {
			t.Errorf("search attribute %s lacks the Memagent prefix", name)
		}
		counts[typ.String()]++
	}
	// SQL visibility: at most 3 Int, 10 Keyword and 3 Text per namespace,
	// shared with whatever else runs there.
	if counts["Int"] > 3 || counts["Keyword"] > 10 || len(counts) != 2 {
		t.Errorf("search attribute types %v, want at most 3 Int and 10 Keyword and nothing else", counts)
	}
	for _, k := range []temporal.SearchAttributeKey{api.DocumentKey, api.ModelKey, api.QuestionDigestKey, api.BatchKey, api.ChunksDoneKey, api.ChunksTotalKey, api.StatusKey} {
		typ, ok := SearchAttributes()[k.GetName()]
		if !ok || typ != k.GetValueType() {
			t.Errorf("key %s has type %v, SearchAttributes lists %v", k.GetName(), k.GetValueType(), typ)
		}
	}
}

func TestKeywordValue(t *testing.T) {
	long := "s3://bucket/" + strings.Repeat("é", 200) // 412 bytes
	tests := []struct {
		name, in string
		wantLen  int
	}{
		{"short", "s3://b/k.txt", len("s3://b/k.txt")},
		{"exactly the limit", strings.Repeat("a", api.MaxKeywordBytes), api.MaxKeywordBytes},
		{"clipped at a character boundary", long, api.MaxKeywordBytes - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := api.KeywordValue(tt.in)
			if len(got) != tt.wantLen || !strings.HasPrefix(tt.in, got) || !utf8.ValidString(got) {
				t.Errorf("KeywordValue(%d bytes) = %d bytes (valid UTF-8: %v), want a %d-byte prefix", len(tt.in), len(got), utf8.ValidString(got), tt.wantLen)
			}
		})
	}
}

func TestQuestionDigest(t *testing.T) {
	// The first 16 hex digits of sha256("What is the access code?").
	if got, want := api.QuestionDigest("What is the access code?"), "79c8cc29c4c8616a"; got != want {
		t.Errorf("QuestionDigest = %q, want %q", got, want)
	}
}

func TestDetails(t *testing.T) {
	tests := []struct {
		p    api.Progress
		want string
	}{
		{api.Progress{Stage: api.StagePreparing, Run: 1}, "**preparing**"},
		{api.Progress{Stage: api.StageReading, Run: 1, ChunksDone: 17, ChunksTotal: 700, TokensDone: 85_000, TokensTotal: 3_500_000},
			"**reading** · chunk 17/700 · 85K/3.5M tokens"},
		{api.Progress{Stage: api.StageReading, Run: 3, ChunksDone: 417, ChunksTotal: 700, TokensDone: 2_085_000, TokensTotal: 3_500_000},
			"**reading** · chunk 417/700 · 2.1M/3.5M tokens · run 3"},
	}
	for _, tt := range tests {
		if got := details(tt.p); got != tt.want {
			t.Errorf("details(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestDocumentQAUpsertsCanceledStatus(t *testing.T) {
	f := newFixture(t, makeDoc(2))
	var u upserts
	f.setup = func(env *testsuite.TestWorkflowEnvironment) {
		u.install(env)
		// Prepare never finishes before the cancellation at one second.
		env.OnActivity(actwire.PrepareReadingName, mock.Anything, mock.Anything).
			After(time.Hour).Return(actwire.PrepareReadingOutput{}, nil)
		env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	}
	_, err := f.run(t, api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q"})
	if !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error %v, want a cancellation", err)
	}
	if got := u.merged()[api.AttrStatus]; got != api.StageCanceled {
		t.Errorf("%s = %v, want %q; upserts %v", api.AttrStatus, got, api.StageCanceled, u.calls)
	}
}
