package workflows_test

// ReviewDocument's tests: unit tests on the SDK's test environment with
// in-memory fakes (activitiestest), and the replay test of its recorded
// histories (testdata/review_run{N}.json, frozen, from before
// ConvertDocumentChange, testdata/review_convert_run{N}.json, frozen,
// from before GroundingChange, testdata/review_ground_run{N}.json, frozen,
// from before CoalesceUpsertsChange, testdata/review_coalesce_run{N}.json,
// frozen, from before CheckpointsChange, testdata/review_checkpoints_run{N}.json,
// frozen, from before ProvenanceChange, testdata/review_provenance_run{N}.json,
// frozen, from before VerifyCarryChange, and
// testdata/review_verified_run{N}.json, the current generation; record that
// again with
// go test ./workflows -run TestReplayReview -update).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
	"github.com/memagent/memagent/workflows"
)

const reviewDocURI = "s3://docs/review.txt"

// reviewFacts are planted at the end of their line; line N is chunk N
// (100 words a line, WordTokenizer, chunk_tokens 100).
var reviewFacts = map[int]string{1: "The gate code is 7391.", 4: "The vault key is 5512."}

func reviewDocument(lines int) string {
	var b strings.Builder
	for i := range lines {
		fact, ok := reviewFacts[i]
		if !ok {
			fmt.Fprintf(&b, "w%03d%s\n", i, strings.Repeat(" filler", 99))
			continue
		}
		fmt.Fprintf(&b, "w%03d%s filler. %s\n", i, strings.Repeat(" filler", 98-len(strings.Fields(fact))), fact)
	}
	return b.String()
}

func reviewQuestions() []api.ReviewQuestion {
	return []api.ReviewQuestion{
		{Question: "What is the gate code?", GoldAnswers: []string{"7391"}},
		{ID: "vault", Question: "Which vault key?", GoldAnswers: []string{"5512"}},
		{Question: "Who is the ferry captain?"},
	}
}

var (
	problemRE = regexp.MustCompile(`(?s)<problem>\s*(.*?)\s*</problem>`)
	memoryRE  = regexp.MustCompile(`(?s)<memory>\s*(.*?)\s*</memory>`)
	sectionRE = regexp.MustCompile(`(?s)<section>\s*(.*?)\s*</section>`)
	digitsRE  = regexp.MustCompile(`\d+`)
)

// extractiveModel is a small stand-in for the simulator: the memory keeps
// the sentences that hold a word of four letters or more of the question;
// the answer is the memory's number. It records each update as
// "question|chunk marker" and tracks the updates in flight.
type extractiveModel struct {
	activitiestest.Model
	delay time.Duration
	// fail, when set, fails the calls for which it returns an error.
	fail func(question string) error

	mu          sync.Mutex
	updates     []string
	inFlight    int
	maxInFlight int
	// started records, for each update started, the least number of
	// updates completed for the chunk before it (to check lockstep).
	doneByChunk map[string]int
	violations  []string
	lockstep    int // questions; 0: not checked
	// barrier holds the first barrier updates until that many are in
	// flight together (or a deadline passes), so that a test of the bound
	// on parallelism does not depend on timing.
	barrier int
}

func newExtractiveModel() *extractiveModel {
	m := &extractiveModel{doneByChunk: map[string]int{}}
	m.Respond = m.respond
	return m
}

func keywords(question string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(question), func(r rune) bool { return r < 'a' || r > 'z' }) {
		if len(w) >= 4 && w != "what" && w != "which" {
			out = append(out, w)
		}
	}
	return out
}

func (m *extractiveModel) respond(req inference.Request) (string, error) {
	question := problemRE.FindStringSubmatch(req.Prompt)[1]
	memory := memoryRE.FindStringSubmatch(req.Prompt)[1]
	if m.fail != nil {
		if err := m.fail(question); err != nil {
			return "", err
		}
	}
	sec := sectionRE.FindStringSubmatch(req.Prompt)
	if sec == nil {
		if d := digitsRE.FindString(memory); d != "" {
			return `The answer is \boxed{` + d + `}.`, nil
		}
		return `\boxed{unknown}`, nil
	}
	marker := strings.Fields(sec[1])[0]
	if n := m.begin(question, marker); n < m.barrier {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			m.mu.Lock()
			all := m.inFlight >= m.barrier
			m.mu.Unlock()
			if all {
				break
			}
		}
	}
	defer m.end(marker)
	time.Sleep(m.delay)
	var kept []string
	text := sec[1]
	if memory != memagent.InitialMemory && !strings.HasPrefix(memory, "No relevant") {
		text = memory + " " + text
	}
	for _, s := range strings.SplitAfter(text, ".") {
		s = strings.TrimSpace(s)
		for _, k := range keywords(question) {
			if strings.Contains(strings.ToLower(s), k) {
				kept = append(kept, s)
				break
			}
		}
	}
	if len(kept) == 0 {
		return "No relevant information yet.", nil
	}
	return strings.Join(kept, " "), nil
}

// begin records an update starting and returns how many started before.
func (m *extractiveModel) begin(question, marker string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.updates = append(m.updates, question+"|"+marker)
	m.inFlight++
	m.maxInFlight = max(m.maxInFlight, m.inFlight)
	if m.lockstep > 0 && marker != "w000" {
		var n int
		fmt.Sscanf(marker, "w%d", &n)
		if prev := fmt.Sprintf("w%03d", n-1); m.doneByChunk[prev] < m.lockstep {
			m.violations = append(m.violations, fmt.Sprintf("%s started with %d of %d updates of %s done", marker, m.doneByChunk[prev], m.lockstep, prev))
		}
	}
	return len(m.updates) - 1
}

func (m *extractiveModel) end(marker string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
	m.doneByChunk[marker]++
}

type reviewFixture struct {
	store *activitiestest.Store
	model *extractiveModel
	acts  *activities.Activities
}

func newReviewFixture(t *testing.T, doc string) *reviewFixture {
	t.Helper()
	f := &reviewFixture{store: activitiestest.NewStore(), model: newExtractiveModel()}
	loc, _ := s3store.ParseURI(reviewDocURI)
	if err := f.store.Put(context.Background(), loc, []byte(doc), ""); err != nil {
		t.Fatal(err)
	}
	f.acts = &activities.Activities{
		// The SDK's test environment has no server to describe a run in.
		SkipExecutionChecks: true,
		ReadPrefixes:        []string{"s3://"}, WritePrefixes: []string{"s3://"}, // any bucket: the tests use several
		Store: f.store, Model: f.model, DefaultModel: "fake", Bucket: "memagent",
		Templates:  memagent.DefaultTemplates(),
		Tokenizers: func(string) (memagent.Tokenizer, error) { return activitiestest.WordTokenizer{}, nil },
	}
	return f
}

func (f *reviewFixture) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(reviewTestWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	// The environment's default, 3 s of wall time a run, is less than a
	// review's first run in a fresh process took on CI's two loaded cores
	// (TestReviewDocumentParallelism, 3.08 s; 0.4 s alone).
	env.SetTestTimeout(30 * time.Second)
	workflows.Register(env)
	f.acts.Register(env)
	return env
}

// run follows continue-as-new generations to the end, returning the last
// environment, its error and the number of runs.
func (f *reviewFixture) run(t *testing.T, first api.ReviewInput) (*testsuite.TestWorkflowEnvironment, error, int) {
	t.Helper()
	return f.runFrom(t, workflows.ReviewRunInput{ReviewInput: first})
}

// runFrom is run from a first generation that may carry a state (a
// continued run).
func (f *reviewFixture) runFrom(t *testing.T, in workflows.ReviewRunInput) (*testsuite.TestWorkflowEnvironment, error, int) {
	t.Helper()
	for runs := 1; runs <= 100; runs++ {
		env := f.env(t)
		if in.State != nil {
			workflows.ContinuedFrom(env)
		}
		env.ExecuteWorkflow(api.ReviewDocumentName, in)
		if !env.IsWorkflowCompleted() {
			t.Fatal("workflow did not complete")
		}
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) {
			return env, err, runs
		}
		if can.WorkflowType.Name != api.ReviewDocumentName {
			t.Fatalf("continue-as-new to %q", can.WorkflowType.Name)
		}
		in = workflows.ReviewRunInput{}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatalf("decode continue-as-new input: %v", err)
		}
		if in.State == nil {
			t.Fatal("continue-as-new without a state")
		}
	}
	t.Fatal("more than 100 runs")
	return nil, nil, 0
}

func (f *reviewFixture) result(t *testing.T, in api.ReviewInput) (*workflows.ReviewResult, int) {
	t.Helper()
	env, err, runs := f.run(t, in)
	if err != nil {
		t.Fatalf("review: %v", err)
	}
	var res workflows.ReviewResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return &res, runs
}

type reviewTestWriter struct{ t *testing.T }

func (w reviewTestWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func reviewInput() api.ReviewInput {
	return api.ReviewInput{Document: reviewDocURI, Questions: reviewQuestions(), Options: api.ModelOptions{ChunkTokens: 100}}
}

// checkReview checks the outcome of the standard review of a 6-chunk
// document: every question read every chunk once, the evidence points at
// the planted facts and the answers are right.
func checkReview(t *testing.T, f *reviewFixture, res *workflows.ReviewResult, doc string) {
	t.Helper()
	const chunks = 6
	if res.Chunks != chunks || len(res.Rows) != 3 {
		t.Fatalf("chunks %d, rows %d; want %d and 3", res.Chunks, len(res.Rows), chunks)
	}
	seen := map[string]int{}
	for _, u := range f.model.updates {
		seen[u]++
	}
	for _, q := range reviewQuestions() {
		for c := range chunks {
			if n := seen[fmt.Sprintf("%s|w%03d", q.Question, c)]; n != 1 {
				t.Errorf("%q read chunk %d %d times, want once", q.Question, c, n)
			}
		}
	}
	if len(f.model.updates) != 3*chunks {
		t.Errorf("%d memory updates, want %d", len(f.model.updates), 3*chunks)
	}
	wantEvidence := map[string]int{"q1": 1, "vault": 4, "q3": -1}
	wantAnswer := map[string]string{"q1": "7391", "vault": "5512", "q3": "unknown"}
	for _, row := range res.Rows {
		if row.Status != api.ReviewStatusDone || row.Answer != wantAnswer[row.ID] || row.ChunksRead != chunks {
			t.Errorf("%s: status %s, answer %q, chunks read %d; want done, %q, %d", row.ID, row.Status, row.Answer, row.ChunksRead, wantAnswer[row.ID], chunks)
		}
		want := wantEvidence[row.ID]
		if want < 0 {
			if len(row.Evidence) != 0 {
				t.Errorf("%s: evidence %+v, want none", row.ID, row.Evidence)
			}
			continue
		}
		if len(row.Evidence) != 1 || row.Evidence[0].Chunk != want || !row.Evidence[0].SupportsAnswer {
			t.Fatalf("%s: evidence %+v, want chunk %d supporting the answer", row.ID, row.Evidence, want)
		}
		p := row.Evidence[0].Passage
		if p == nil || doc[p.Start:p.End] != reviewFacts[want] {
			t.Errorf("%s: passage %+v, want the bytes of %q", row.ID, p, reviewFacts[want])
		}
		if row.Scores == nil || !row.Scores.ExactMatch {
			t.Errorf("%s: scores %+v, want an exact match", row.ID, row.Scores)
		}
		if row.Usage.Calls != chunks+1 {
			t.Errorf("%s: %d calls, want %d updates and 1 answer", row.ID, row.Usage.Calls, chunks)
		}
	}
	if res.Usage.Calls != 3*(chunks+1) {
		t.Errorf("usage: %d calls, want %d", res.Usage.Calls, 3*(chunks+1))
	}
	// What lands in S3: traces and results per question, grid and report.
	prefix := res.Prefix
	if !strings.HasPrefix(prefix, "s3://memagent/reviews/") {
		t.Errorf("prefix = %q, want the default under s3://memagent/reviews/", prefix)
	}
	for _, key := range []string{"questions/q1/chunks/000000.json", "questions/vault/chunks/000005.json", "questions/q3/result.json",
		activities.ReviewGridJSON, activities.ReviewGridCSV, activities.ReviewHTML} {
		loc, _ := s3store.ParseURI(prefix + key)
		if f.store.Object(loc) == nil {
			t.Errorf("nothing at %s", prefix+key)
		}
	}
}

func TestReviewDocument(t *testing.T) {
	doc := reviewDocument(6)
	f := newReviewFixture(t, doc)
	res, runs := f.result(t, reviewInput())
	if runs != 1 {
		t.Errorf("runs = %d, want 1", runs)
	}
	checkReview(t, f, res, doc)
	// One worker's cache: every chunk was read from the store once, plus
	// one small read per evidence passage for the report, plus the first
	// bytes ConvertDocument reads to tell the format, plus one quote per
	// answer found in the document (GroundAnswer finds the evidence chunks
	// it searches first in the worker's chunk cache, and streams the
	// document, unranged, only for answers not found there).
	quotes := 0
	evidence := map[[2]int64]bool{}
	for _, r := range res.Rows {
		for _, e := range r.Evidence {
			evidence[[2]int64{e.Start, e.End}] = true
		}
		if r.Status == api.ReviewStatusDone && r.Grounding == nil {
			t.Errorf("question %s has no grounding", r.ID)
		}
		if r.Grounding.Found() {
			quotes++
		}
	}
	if quotes == 0 {
		t.Error("no answer of the review was found in its document")
	}
	if want := 6 + 2 + 1 + quotes; f.store.Ranges != want || len(evidence) == 0 {
		t.Errorf("%d ranged reads, want %d (6 chunks + 2 passages + 1 format sniff + %d quotes; %d evidence chunks from the cache)", f.store.Ranges, want, quotes, len(evidence))
	}
	for _, r := range res.Rows {
		if r.Grounding.Found() && r.Grounding.FoundIn != api.GroundingInPassage {
			t.Errorf("question %s: found in %q, want its evidence passage", r.ID, r.Grounding.FoundIn)
		}
	}
}

func TestReviewDocumentContinuesAsNew(t *testing.T) {
	doc := reviewDocument(6)
	f := newReviewFixture(t, doc)
	in := reviewInput()
	in.ActivitiesPerRun = 4
	in.Parallelism = 2
	res, runs := f.result(t, in)
	// 18 updates and 3 answers, at most 4 activities a run.
	if runs < 6 || res.Runs != runs {
		t.Errorf("runs = %d (result says %d), want at least 6", runs, res.Runs)
	}
	checkReview(t, f, res, doc)
}

// TestReviewDocumentMovesToItsTargetVersion: Temporal says, as the
// review's fourth memory update completes, that the run's target version
// changed. The run launches nothing more, lets what is in flight finish (a
// chunk boundary of every question) and continues as new onto the target
// version, long before its activities a run; the chain then reads each
// chunk once per question and writes the same grid as an undisturbed
// review.
func TestReviewDocumentMovesToItsTargetVersion(t *testing.T) {
	doc := reviewDocument(6)
	f := newReviewFixture(t, doc)
	in := reviewInput()
	in.Parallelism = 2
	env := f.env(t)
	updates := 0
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, err error) {
		if info.ActivityType.Name == activities.ReviewUpdateName {
			if updates++; updates == 4 {
				env.SetTargetWorkerDeploymentVersionChanged(true)
			}
		}
	})
	env.ExecuteWorkflow(api.ReviewDocumentName, workflows.ReviewRunInput{ReviewInput: in})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the moving run ended with %v, want a continue-as-new", err)
	}
	if can.InitialVersioningBehavior != workflow.ContinueAsNewVersioningBehaviorAutoUpgrade {
		t.Errorf("continue-as-new with initial behaviour %v, want AutoUpgrade", can.InitialVersioningBehavior)
	}
	if updates < 4 || updates > 4+in.Parallelism {
		t.Errorf("the moving run made %d memory updates, want 4 and at most the %d in flight", updates, in.Parallelism)
	}
	var next workflows.ReviewRunInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	env, err, runs := f.runFrom(t, next)
	if err != nil {
		t.Fatalf("review: %v", err)
	}
	var res workflows.ReviewResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || res.Runs != 2 {
		t.Errorf("%d runs after the move (the result says %d in all), want 1 (2)", runs, res.Runs)
	}
	checkReview(t, f, &res, doc)
}

// TestPausedReviewWakesToMove: a review paused at its budget continues as
// new, paused still and with what it read, at its first wake-up after its
// target version changed; it made no model call meanwhile.
func TestPausedReviewWakesToMove(t *testing.T) {
	f := newReviewFixture(t, reviewDocument(6))
	in := reviewInput()
	in.Budget = &api.Budget{MaxCalls: 2}
	env := f.env(t)
	// A workflow task that a loaded machine holds up past the default 1s
	// is not a deadlock.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
	began := env.Now()
	env.RegisterDelayedCallback(func() { env.SetTargetWorkerDeploymentVersionChanged(true) }, 25*time.Minute)
	env.ExecuteWorkflow(api.ReviewDocumentName, workflows.ReviewRunInput{ReviewInput: in})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) || can.InitialVersioningBehavior != workflow.ContinueAsNewVersioningBehaviorAutoUpgrade {
		t.Fatalf("the paused review ended with %v, want a continue-as-new onto the target version", err)
	}
	var next workflows.ReviewRunInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, q := range next.State.Questions {
		read += q.Cursor
	}
	if calls := len(f.model.Calls()); read != 2 || calls != 2 {
		t.Errorf("handed over %d chunks read after %d model calls, want 2 and 2", read, calls)
	}
	if waited := env.Now().Sub(began); waited < 30*time.Minute || waited >= 40*time.Minute {
		t.Errorf("continued after %v paused, want at the wake-up after the change (30m)", waited)
	}
}

func TestReviewDocumentParallelism(t *testing.T) {
	tests := []struct {
		name        string
		parallelism int
		want        int
	}{
		{"default: one per question", 0, 3},
		{"bounded", 2, 2},
		{"one at a time", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newReviewFixture(t, reviewDocument(6))
			f.model.delay = 2 * time.Millisecond
			f.model.barrier = tt.want
			in := reviewInput()
			in.Parallelism = tt.parallelism
			f.result(t, in)
			if f.model.maxInFlight != tt.want {
				t.Errorf("at most %d updates in flight, want %d", f.model.maxInFlight, tt.want)
			}
		})
	}
}

func TestReviewDocumentLockstep(t *testing.T) {
	f := newReviewFixture(t, reviewDocument(6))
	f.model.delay = 5 * time.Millisecond
	f.model.lockstep = 3
	in := reviewInput()
	in.MaxChunksAhead = 1
	f.result(t, in)
	if len(f.model.violations) > 0 {
		t.Errorf("max_chunks_ahead 1 let chunks overlap: %q", f.model.violations)
	}
}

func TestReviewDocumentProgressQuery(t *testing.T) {
	f := newReviewFixture(t, reviewDocument(6))
	env := f.env(t)
	env.ExecuteWorkflow(api.ReviewDocumentName, reviewInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	v, err := env.QueryWorkflow(api.ProgressQuery)
	if err != nil {
		t.Fatal(err)
	}
	var p api.ReviewProgress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	if p.Stage != api.StageDone || p.ChunksDone != 6 || p.ChunksTotal != 6 || p.UpdatesDone != 18 || p.UpdatesTotal != 18 || p.Usage.Calls != 21 {
		t.Errorf("progress = %+v", p)
	}
	if len(p.Questions) != 3 || p.Questions[1].ID != "vault" || p.Questions[1].Status != api.QuestionDone || p.Questions[1].Evidence != 1 {
		t.Errorf("questions = %+v", p.Questions)
	}
	// A DocumentQA watcher reads the same query.
	var common api.Progress
	if err := v.Get(&common); err != nil || common.Stage != api.StageDone || common.ChunksTotal != 6 {
		t.Errorf("read as Progress: %+v, %v", common, err)
	}
}

func TestReviewDocumentQuestionFailures(t *testing.T) {
	badRequest := &inference.Error{Kind: inference.KindBadRequest, StatusCode: 400, Message: "refused"}
	t.Run("one question fails, the others finish", func(t *testing.T) {
		f := newReviewFixture(t, reviewDocument(6))
		f.model.fail = func(q string) error {
			if strings.Contains(q, "vault") {
				return badRequest
			}
			return nil
		}
		res, _ := f.result(t, reviewInput())
		for _, row := range res.Rows {
			switch row.ID {
			case "vault":
				if row.Status != api.ReviewStatusFailed || row.ErrorType != api.ErrModelBadRequest || !strings.Contains(row.Error, "chunk 0") {
					t.Errorf("vault: status %s, error %s %q; want failed with %s at chunk 0", row.Status, row.ErrorType, row.Error, api.ErrModelBadRequest)
				}
			default:
				if row.Status != api.ReviewStatusDone || row.ChunksRead != 6 {
					t.Errorf("%s: status %s after %d chunks, want done after 6", row.ID, row.Status, row.ChunksRead)
				}
			}
		}
	})
	t.Run("every question fails", func(t *testing.T) {
		f := newReviewFixture(t, reviewDocument(6))
		f.model.fail = func(string) error { return badRequest }
		_, err, _ := f.run(t, reviewInput())
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != api.ErrModelBadRequest || !strings.Contains(appErr.Error(), "all 3 questions failed") {
			t.Errorf("error = %v, want %s saying all questions failed", err, api.ErrModelBadRequest)
		}
	})
}

func TestReviewDocumentBadInput(t *testing.T) {
	many := make([]api.ReviewQuestion, api.MaxReviewQuestions+1)
	for i := range many {
		many[i].Question = "Why?"
	}
	tests := []struct {
		name string
		edit func(*api.ReviewInput)
		want string
	}{
		{"no questions", func(in *api.ReviewInput) { in.Questions = nil }, "questions is empty"},
		{"too many questions", func(in *api.ReviewInput) { in.Questions = many }, "over the limit of 100"},
		{"empty question", func(in *api.ReviewInput) { in.Questions[2].Question = "  " }, "questions[2] (q3): question is empty"},
		{"duplicate ids", func(in *api.ReviewInput) { in.Questions[1].ID = "q1" }, `questions[0] and questions[1] both have id "q1"`},
		{"default id taken", func(in *api.ReviewInput) { in.Questions[0].ID = "q3" }, `both have id "q3"`},
		{"id with a slash", func(in *api.ReviewInput) { in.Questions[0].ID = "../x" }, "must be 1 to 64 letters"},
		{"document not in S3", func(in *api.ReviewInput) { in.Document = "/tmp/doc.txt" }, "not an s3:// URI"},
		{"bad output prefix", func(in *api.ReviewInput) { in.OutputPrefix = "s3:///x" }, "output_prefix"},
		{"parallelism too high", func(in *api.ReviewInput) { in.Parallelism = 1000 }, "parallelism (1000)"},
		{"negative activities per run", func(in *api.ReviewInput) { in.ActivitiesPerRun = -1 }, "activities_per_run"},
		{"bad options", func(in *api.ReviewInput) { in.Options.ChunkTokens = 10 }, "chunk_tokens (10)"},
		{"memories too large to carry", func(in *api.ReviewInput) {
			in.Questions = many[:100]
			for i := range in.Questions {
				in.Questions[i].ID = fmt.Sprintf("x%d", i)
			}
			in.Options.MemoryMaxTokens = 4096
		}, "lower options.memory_max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newReviewFixture(t, reviewDocument(6))
			in := reviewInput()
			tt.edit(&in)
			if err := in.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error with %q", err, tt.want)
			}
			_, err, _ := f.run(t, in)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() {
				t.Fatalf("error = %v, want a non-retryable %s", err, api.ErrBadInput)
			}
			if calls := len(f.model.Calls()); calls != 0 || f.store.Ranges != 0 {
				t.Errorf("%d model calls and %d reads before the input was rejected", calls, f.store.Ranges)
			}
		})
	}
}

func TestReviewDocumentRejectsAStateOfOtherQuestions(t *testing.T) {
	f := newReviewFixture(t, reviewDocument(6))
	in := workflows.ReviewRunInput{ReviewInput: reviewInput(), State: &workflows.ReviewState{Questions: make([]workflows.ReviewQuestionState, 5)}}
	_, err, _ := f.runFrom(t, in)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput || !strings.Contains(appErr.Error(), "state holds 5 questions") {
		t.Errorf("error = %v, want %s about the state", err, api.ErrBadInput)
	}
}

func TestReviewInputWithDefaults(t *testing.T) {
	in := api.ReviewInput{Questions: make([]api.ReviewQuestion, 20)}
	in.Questions[3].ID = "mine"
	got := in.WithDefaults()
	if got.Questions[0].ID != "q1" || got.Questions[3].ID != "mine" || got.Questions[19].ID != "q20" {
		t.Errorf("ids = %q, %q, %q", got.Questions[0].ID, got.Questions[3].ID, got.Questions[19].ID)
	}
	if in.Questions[0].ID != "" {
		t.Error("WithDefaults modified its receiver's questions")
	}
	if got.Parallelism != api.DefaultReviewParallelism || got.MaxChunksAhead != api.DefaultReviewChunksAhead || got.ActivitiesPerRun != api.DefaultReviewActivitiesPerRun {
		t.Errorf("defaults = %d, %d, %d", got.Parallelism, got.MaxChunksAhead, got.ActivitiesPerRun)
	}
	if p := (api.ReviewInput{Questions: make([]api.ReviewQuestion, 3)}).WithDefaults().Parallelism; p != 3 {
		t.Errorf("parallelism for 3 questions = %d, want 3", p)
	}
}

// The replay test guards ReviewDocument's determinism as replay_test.go
// guards DocumentQA's: the recorded chain of runs must replay against the
// current code.

const (
	// reviewHistoryPrefix is the current generation, the one -update
	// records: ConvertDocument before PrepareDocument, GroundAnswer before
	// WriteReview, the chunk count upserted at most every few seconds,
	// FindCheckpoint for each question after PrepareDocument, told the
	// review's chain (ProvenanceChange), each continued run proving where
	// its state came from (VerifyCarryChange), answers kept and reused
	// (AnswerReuseChange).
	reviewHistoryPrefix = "review_answers_run"
	reviewReplayID      = "replay-review"
	reviewMinRuns       = 3
)

func TestReplayReview(t *testing.T) {
	if *update {
		recordReviewHistories(t)
	}
	// review_run{N}: recorded before ConvertDocumentChange (frozen);
	// review_convert_run{N}: before GroundingChange (frozen);
	// review_ground_run{N}: before CoalesceUpsertsChange (frozen);
	// review_coalesce_run{N}: before CheckpointsChange (frozen);
	// review_checkpoints_run{N}: before ProvenanceChange (frozen);
	// review_provenance_run{N}: before VerifyCarryChange (frozen);
	// review_verified_run{N}: before AnswerReuseChange (frozen).
	var paths []string
	for _, prefix := range []string{"review_run", "review_convert_run", "review_ground_run", "review_coalesce_run", "review_checkpoints_run",
		"review_provenance_run", "review_verified_run", reviewHistoryPrefix} {
		gen, err := filepath.Glob(filepath.Join(historyDir, prefix+"[0-9]*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(gen) < reviewMinRuns {
			t.Fatalf("found %d histories %s/%s{N}.json, want at least %d; record the current generation with: go test ./workflows -run TestReplayReview -update",
				len(gen), historyDir, prefix, reviewMinRuns)
		}
		paths = append(paths, gen...)
	}
	replayer := worker.NewWorkflowReplayer()
	workflows.Register(replayer)
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(reviewTestWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			hist, err := client.HistoryFromJSON(strings.NewReader(string(data)), client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
			if got := started.GetWorkflowType().GetName(); got != api.ReviewDocumentName {
				t.Fatalf("%s is a history of %q", path, got)
			}
			if err := replayer.ReplayWorkflowHistoryWithOptions(logger, hist, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
			}); err != nil {
				t.Errorf("replay of %s: %v", path, err)
			}
		})
	}
}

// recordReviewHistories runs a small review on the embedded dev stack, in
// runs of a few activities so that it continues-as-new, and writes the
// history of each run.
func recordReviewHistories(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(reviewTestWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dev, err := devenv.Start(ctx, devenv.Options{FreePorts: true, DisableUI: true, Simulator: true, Logger: logger})
	if err != nil {
		t.Fatalf("start dev stack: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	cfg := config.Default().AtDevStack(dev.Addresses())
	cfg.TaskQueue = reviewReplayID
	acts, pool, err := pluginkit.NewActivities[*activities.Activities](ctx, workerapp.PluginOptions(cfg, workerapp.Options{Logger: logger}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c, err := client.DialContext(ctx, client.Options{
		HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace,
		Identity: "memagent-replay-test", Logger: log.NewStructuredLogger(logger),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w := workerapp.NewWorker(c, cfg, acts, pool.Capacity(), workerapp.Options{Logger: logger})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	docLoc := s3store.Location{Bucket: cfg.Bucket, Key: "replay/review.txt"}
	if err := store.Put(ctx, docLoc, []byte(replayDocument()), "text/plain; charset=utf-8"); err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: reviewReplayID, TaskQueue: cfg.TaskQueue},
		api.ReviewDocumentName, api.ReviewInput{
			Document: docLoc.String(),
			Questions: []api.ReviewQuestion{
				{Question: replayQuestion, GoldAnswers: []string{replayAnswer}},
				{ID: "other", Question: "Who mended the willow baskets?"},
			},
			Options:          api.ModelOptions{ChunkTokens: 64, MemoryMaxTokens: 64, AnswerMaxTokens: 32},
			ActivitiesPerRun: 6, Parallelism: 2,
		})
	if err != nil {
		t.Fatal(err)
	}
	runID := run.GetRunID()
	var res workflows.ReviewResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("review: %v", err)
	}
	if res.Runs < reviewMinRuns || res.Rows[0].Answer != replayAnswer || len(res.Rows[0].Evidence) == 0 {
		t.Fatalf("review took %d runs, answered %q with evidence %+v; want at least %d runs and %q with evidence",
			res.Runs, res.Rows[0].Answer, res.Rows[0].Evidence, reviewMinRuns, replayAnswer)
	}
	old, _ := filepath.Glob(filepath.Join(historyDir, reviewHistoryPrefix+"[0-9]*.json"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; runID != ""; n++ {
		events := fetchHistory(ctx, t, c, reviewReplayID, runID)
		runID = events[len(events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(historyDir, fmt.Sprintf("%s%d.json", reviewHistoryPrefix, n))
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d events", path, len(events))
	}
}
