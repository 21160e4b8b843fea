package workflows_test

import (
	"strings"
	"sync/atomic"
	"testing"

	sdkpb "go.temporal.io/api/sdk/v1"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/inference"
)

// TestReviewReusesAnswers asks a review of the same document again with
// two of its questions and a new one: the two reuse every chunk and their
// answers with no call (AnswerReuseChange), the new one reads every chunk,
// and the progress counts what was read and what was reused apart.
func TestReviewReusesAnswers(t *testing.T) {
	f := newReviewFixture(t, reviewDocument(6))
	var finals atomic.Int32
	respond := f.model.Respond
	f.model.Respond = func(req inference.Request) (string, error) {
		if !strings.Contains(req.Prompt, "<section>") {
			finals.Add(1)
		}
		return respond(req)
	}
	first, _ := f.result(t, reviewInput())
	if first.Usage.Calls != 21 || finals.Load() != 3 {
		t.Fatalf("first review: %d calls, %d answers asked; want 21 and 3", first.Usage.Calls, finals.Load())
	}
	for _, r := range first.Rows {
		if r.AnswerReused || r.ChunksReused != 0 {
			t.Errorf("first review, %s: answer_reused %v, chunks_reused %d: nothing was there to reuse", r.ID, r.AnswerReused, r.ChunksReused)
		}
	}

	f.model.mu.Lock()
	f.model.updates = nil
	f.model.mu.Unlock()
	finals.Store(0)
	qs := reviewQuestions()
	in := reviewInput()
	in.Questions = []api.ReviewQuestion{qs[0], qs[1], {ID: "ferry", Question: "Who rows the ferry boat?"}}
	env, err, _ := f.run(t, in)
	if err != nil {
		t.Fatalf("second review: %v", err)
	}
	var res api.ReviewGrid
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if got := finals.Load(); got != 1 {
		t.Errorf("second review asked for %d answers, want 1 (the new question's)", got)
	}
	if got := len(f.model.updates); got != 6 {
		t.Errorf("second review made %d memory updates, want 6 (the new question's)", got)
	}
	for i, r := range res.Rows {
		reused := i < 2
		wantCalls := 0
		if !reused {
			wantCalls = 7
		}
		if r.AnswerReused != reused || r.Usage.Calls != wantCalls || r.Answer != first.Rows[min(i, 1)].Answer && reused {
			t.Errorf("row %s: answer %q, answer_reused %v, %d calls; want answer_reused %v, %d calls", r.ID, r.Answer, r.AnswerReused, r.Usage.Calls, reused, wantCalls)
		}
		if wantReused := map[bool]int{true: 6, false: 0}[reused]; r.ChunksReused != wantReused || r.ChunksRead != 6 {
			t.Errorf("row %s: %d chunks read, %d reused; want 6 and %d", r.ID, r.ChunksRead, r.ChunksReused, wantReused)
		}
	}
	if res.Usage.Calls != 7 {
		t.Errorf("grid usage %d calls, want 7: the reused answers made none", res.Usage.Calls)
	}

	v, err := env.QueryWorkflow(api.ProgressQuery)
	if err != nil {
		t.Fatal(err)
	}
	var p api.ReviewProgress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	tokens := p.TokensTotal
	if tokens == 0 {
		t.Fatalf("progress has no tokens: %+v", p)
	}
	if p.TokensDone != tokens || p.ChunksRead != 6 || p.ChunksReused != 12 || p.TokensRead != tokens || p.TokensReused != 2*tokens ||
		p.AnswersReused != 2 || p.Usage.Calls != 7 || p.UpdatesDone != 18 {
		t.Errorf("progress = done %d/%d tokens, chunks read %d reused %d, tokens read %d reused %d, %d answers reused, %d calls, %d updates; "+
			"want %d/%d, 6 and 12, %d and %d, 2, 7, 18", p.TokensDone, p.TokensTotal, p.ChunksRead, p.ChunksReused, p.TokensRead, p.TokensReused,
			p.AnswersReused, p.Usage.Calls, p.UpdatesDone, tokens, tokens, tokens, 2*tokens)
	}
	// The Temporal UI's details say so too.
	md, err := env.QueryWorkflow("__temporal_workflow_metadata")
	if err != nil {
		t.Fatal(err)
	}
	var meta sdkpb.WorkflowMetadata
	if err := md.Get(&meta); err != nil {
		t.Fatal(err)
	}
	if want := "chunk readings: 6 read, 12 reused · 2 answers reused"; !strings.Contains(meta.GetCurrentDetails(), want) {
		t.Errorf("current details %q lack %q", meta.GetCurrentDetails(), want)
	}
	for i, q := range p.Questions {
		if reused := i < 2; q.AnswerReused != reused || (q.TokensReused == tokens) != reused || (q.TokensRead == tokens) == reused {
			t.Errorf("question %s: %+v", q.ID, q)
		}
	}
}

// TestReviewReadsWholeWithReuseNone: reuse "none" takes no kept answer.
func TestReviewReadsWholeWithReuseNone(t *testing.T) {
	f := newReviewFixture(t, reviewDocument(6))
	f.result(t, reviewInput())
	in := reviewInput()
	in.Reuse = api.ReuseNone
	res, _ := f.result(t, in)
	for _, r := range res.Rows {
		if r.AnswerReused || r.ChunksReused != 0 || r.Usage.Calls != 7 {
			t.Errorf("row %s: answer_reused %v, chunks_reused %d, %d calls; want a whole reading, 7 calls", r.ID, r.AnswerReused, r.ChunksReused, r.Usage.Calls)
		}
	}
}
