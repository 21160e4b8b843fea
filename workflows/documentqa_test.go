package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// wordTokenizer is the shared test tokenizer: one token per word.
type wordTokenizer = activitiestest.WordTokenizer

var sectionRE = regexp.MustCompile(`(?s)<section>\s*(\S+)`)

// markerModel keeps, as memory, the list of each chunk's first word, so the
// test can check that every chunk was read once, in order, each call seeing
// the memory the previous call returned.
func markerModel() *activitiestest.Model {
	return &activitiestest.Model{Respond: func(req inference.Request) (string, error) {
		if m := sectionRE.FindStringSubmatch(req.Prompt); m != nil {
			mem := regexp.MustCompile(`(?s)<memory>\s*(.*?)\s*</memory>`).FindStringSubmatch(req.Prompt)[1]
			if mem == memagent.InitialMemory {
				return m[1], nil
			}
			return mem + " " + m[1], nil
		}
		mem := regexp.MustCompile(`(?s)<memory>\s*(.*?)\s*</memory>`).FindStringSubmatch(req.Prompt)[1]
		words := strings.Fields(mem)
		return fmt.Sprintf("Reasoning... the answer is \\boxed{%s}", words[len(words)-1]), nil
	}}
}

// makeDoc is the shared test document: line N is chunk N.
var makeDoc = activitiestest.LineDoc

type fixture struct {
	store *activitiestest.Store
	model *activitiestest.Model
	acts  *activities.Activities
	// setup, when set, prepares each run's environment (mocks) before it
	// executes.
	setup func(*testsuite.TestWorkflowEnvironment)
}

func newFixture(t *testing.T, doc string) *fixture {
	t.Helper()
	f := &fixture{store: activitiestest.NewStore(), model: markerModel()}
	if err := f.store.Put(context.Background(), s3store.Location{Bucket: "docs", Key: "doc.txt"}, []byte(doc), ""); err != nil {
		t.Fatal(err)
	}
	f.acts = &activities.Activities{
		// The SDK's test environment has no server to describe a run in.
		SkipExecutionChecks: true,
		ReadPrefixes:        []string{"s3://"}, WritePrefixes: []string{"s3://"}, // any bucket: the tests use several
		Store: f.store, Model: f.model, DefaultModel: "fake", Bucket: "memagent",
		Templates:  memagent.DefaultTemplates(),
		Tokenizers: func(string) (memagent.Tokenizer, error) { return wordTokenizer{}, nil },
	}
	return f
}

func (f *fixture) run(t *testing.T, in api.DocumentQAInput) (*testsuite.TestWorkflowEnvironment, error) {
	t.Helper()
	return f.runWith(t, qaRunInput{DocumentQAInput: in})
}

// runWith runs one generation: a run handed a state is a continued run.
func (f *fixture) runWith(t *testing.T, in qaRunInput) (*testsuite.TestWorkflowEnvironment, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(DocumentQA, workflow.RegisterOptions{Name: api.DocumentQAName})
	f.acts.Register(env)
	if in.State != nil {
		ContinuedFrom(env)
	}
	if f.setup != nil {
		f.setup(env)
	}
	env.ExecuteWorkflow(api.DocumentQAName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	return env, env.GetWorkflowError()
}

// runToEnd follows continue-as-new generations until a result, returning
// the result and the number of runs.
func (f *fixture) runToEnd(t *testing.T, first api.DocumentQAInput) (*DocumentQAResult, int) {
	t.Helper()
	in := qaRunInput{DocumentQAInput: first}
	for runs := 1; runs <= 50; runs++ {
		env, err := f.runWith(t, in)
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			if can.WorkflowType.Name != api.DocumentQAName {
				t.Fatalf("continue-as-new to %q, want %q", can.WorkflowType.Name, api.DocumentQAName)
			}
			in = qaRunInput{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatalf("decode continue-as-new input: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("workflow error: %v", err)
		}
		var res DocumentQAResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		return &res, runs
	}
	t.Fatal("more than 50 runs")
	return nil, 0
}

func TestDocumentQAReadsEveryChunkOnceInOrder(t *testing.T) {
	tests := []struct {
		name         string
		chunksPerRun int
		wantRuns     int
	}{
		{"single run", 0, 1},
		{"continue-as-new every 3 chunks", 3, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, makeDoc(10))
			res, runs := f.runToEnd(t, api.DocumentQAInput{
				Document: "s3://docs/doc.txt", Question: "Which marker came last?",
				GoldAnswers: []string{"w009"}, ChunksPerRun: tt.chunksPerRun,
				Options: api.ModelOptions{ChunkTokens: 100},
			})
			if runs != tt.wantRuns {
				t.Errorf("runs = %d, want %d", runs, tt.wantRuns)
			}
			if res.Chunks != 10 {
				t.Fatalf("chunks = %d, want 10", res.Chunks)
			}
			calls := f.model.Calls()
			if len(calls) != 11 {
				t.Fatalf("model calls = %d, want 10 updates + 1 answer", len(calls))
			}
			for i, c := range calls[:10] {
				want := fmt.Sprintf("<section>\nw%03d", i)
				if !strings.Contains(c.Prompt, want) {
					t.Errorf("call %d does not carry chunk %d's text", i, i)
				}
				wantMem := memagent.InitialMemory
				if i > 0 {
					var ws []string
					for j := 0; j < i; j++ {
						ws = append(ws, fmt.Sprintf("w%03d", j))
					}
					wantMem = strings.Join(ws, " ")
				}
				if !strings.Contains(c.Prompt, "<memory>\n"+wantMem+"\n</memory>") {
					t.Errorf("call %d memory: prompt lacks %q", i, wantMem)
				}
			}
			if res.Answer != "w009" || !res.AnswerFound {
				t.Errorf("answer = %q (found %v), want w009", res.Answer, res.AnswerFound)
			}
			if res.Scores == nil || !res.Scores.ExactMatch {
				t.Errorf("scores = %+v, want exact match", res.Scores)
			}
			if res.Runs != tt.wantRuns {
				t.Errorf("result runs = %d, want %d", res.Runs, tt.wantRuns)
			}
			if res.Usage.Calls != 11 {
				t.Errorf("usage calls = %d, want 11", res.Usage.Calls)
			}
			loc, err := s3store.ParseURI(res.ResultURI)
			if err != nil {
				t.Fatalf("result uri %q: %v", res.ResultURI, err)
			}
			var stored map[string]any
			if err := json.Unmarshal(f.store.Object(loc), &stored); err != nil {
				t.Fatalf("stored result: %v", err)
			}
			if stored["answer"] != "w009" || stored["completion"] == nil {
				t.Errorf("stored result answer=%v completion=%v", stored["answer"], stored["completion"])
			}
			// The answer is the last chunk's word: grounded verbatim, in
			// the result and in result.json.
			if g := res.Grounding; g == nil || g.Status != api.GroundingVerbatim || !strings.Contains(g.Quote, "w009") {
				t.Errorf("grounding = %+v, want verbatim with w009 quoted", g)
			}
			if g, _ := stored["grounding"].(map[string]any); g == nil || g["status"] != api.GroundingVerbatim {
				t.Errorf("stored grounding = %v, want verbatim", stored["grounding"])
			}
			traces := 0
			for _, k := range f.store.Keys() {
				if strings.Contains(k.Key, "/chunks/") {
					traces++
				}
			}
			if traces != 10 {
				t.Errorf("chunk traces = %d, want 10", traces)
			}
		})
	}
}

func TestDocumentQAReusesIndex(t *testing.T) {
	f := newFixture(t, makeDoc(4))
	in := api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q?", Options: api.ModelOptions{ChunkTokens: 100}}
	first, _ := f.runToEnd(t, in)
	second, _ := f.runToEnd(t, in)
	if first.IndexURI != second.IndexURI {
		t.Errorf("index %q then %q, want the same index reused", first.IndexURI, second.IndexURI)
	}
}

func TestDocumentQAProgressQuery(t *testing.T) {
	f := newFixture(t, makeDoc(3))
	env, err := f.run(t, api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q?", Options: api.ModelOptions{ChunkTokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := env.QueryWorkflow(api.ProgressQuery)
	if err != nil {
		t.Fatal(err)
	}
	var p api.Progress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	if p.Stage != api.StageDone || p.ChunksDone != 3 || p.ChunksTotal != 3 || p.TokensDone != p.TokensTotal || p.Memory == "" {
		t.Errorf("progress = %+v, want done with 3/3 chunks and all tokens", p)
	}
}

func TestDocumentQAPermanentErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       api.DocumentQAInput
		respond  func(inference.Request) (string, error)
		wantType string
	}{
		{"empty question", api.DocumentQAInput{Document: "s3://docs/doc.txt"}, nil, api.ErrBadInput},
		{"not an s3 uri", api.DocumentQAInput{Document: "/tmp/doc.txt", Question: "q"}, nil, api.ErrBadInput},
		{"output prefix not s3", api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q", OutputPrefix: "runs/x/"}, nil, api.ErrBadInput},
		{"missing document", api.DocumentQAInput{Document: "s3://docs/missing.txt", Question: "q"}, nil, api.ErrDocumentNotFound},
		{"auth", api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q"},
			func(inference.Request) (string, error) {
				return "", &inference.Error{Kind: inference.KindAuth, StatusCode: 401, Message: "invalid key"}
			}, api.ErrModelAuth},
		{"prompt too long", api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q"},
			func(inference.Request) (string, error) {
				return "", &inference.Error{Kind: inference.KindPromptTooLong, StatusCode: 400, Message: "maximum context length is 8192 tokens"}
			}, api.ErrPromptTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, makeDoc(2))
			if tt.respond != nil {
				f.model.Respond = tt.respond
			}
			_, err := f.run(t, tt.in)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Fatalf("error = %v, want an ApplicationError", err)
			}
			if appErr.Type() != tt.wantType || !appErr.NonRetryable() {
				t.Errorf("error type %q nonretryable=%v, want %q nonretryable", appErr.Type(), appErr.NonRetryable(), tt.wantType)
			}
			if tt.respond != nil && len(f.model.Calls()) != 1 {
				t.Errorf("model calls = %d, want 1 (no retries of a permanent error)", len(f.model.Calls()))
			}
		})
	}
}

func TestDocumentQARetriesTransientModelErrors(t *testing.T) {
	f := newFixture(t, makeDoc(2))
	base := markerModel().Respond
	failures := 0
	f.model.Respond = func(req inference.Request) (string, error) {
		if failures < 2 {
			failures++
			return "", &inference.Error{Kind: inference.KindServer, StatusCode: 503, Message: "overloaded"}
		}
		return base(req)
	}
	res, _ := f.runToEnd(t, api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q", Options: api.ModelOptions{ChunkTokens: 100}})
	if res.Answer != "w001" {
		t.Errorf("answer = %q, want w001 after retries", res.Answer)
	}
	if got := len(f.model.Calls()); got != 5 {
		t.Errorf("model calls = %d, want 2 failures + 2 updates + 1 answer", got)
	}
}

func TestHumanTokens(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 85000: "85K", 1500: "1.5K", 3_500_000: "3.5M", 2_000_000: "2M"} {
		if got := humanTokens(n); got != want {
			t.Errorf("humanTokens(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestDocumentQAGrounding runs DocumentQA with final answers that are in
// the document, nowhere in it, and no answer at all.
func TestDocumentQAGrounding(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		found        bool
		status       string
	}{
		{"in the document", "w004", true, api.GroundingVerbatim},
		{"normalised", "W004.", true, api.GroundingNormalized},
		{"nowhere", "Bremen", true, api.GroundingNotFound},
		{"unknown", "unknown", false, api.GroundingNoAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, makeDoc(10))
			inner := f.model.Respond
			f.model.Respond = func(req inference.Request) (string, error) {
				if sectionRE.MatchString(req.Prompt) {
					return inner(req)
				}
				return `so the answer is \boxed{` + tc.answer + `}`, nil
			}
			res, _ := f.runToEnd(t, api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "Which marker?",
				GoldAnswers: []string{"w004"}, Options: api.ModelOptions{ChunkTokens: 100}})
			if res.AnswerFound != tc.found || res.Grounding == nil || res.Grounding.Status != tc.status {
				t.Fatalf("answer %q found %v grounding %+v; want found %v, %s", res.Answer, res.AnswerFound, res.Grounding, tc.found, tc.status)
			}
			if g := res.Grounding; g.Found() != strings.Contains(g.Quote, "w004") {
				t.Errorf("quote %q", g.Quote)
			}
			if !tc.found && (res.AnswerPages != "" || res.Scores == nil || res.Scores.F1 != 0) {
				t.Errorf("no answer: pages %q scores %+v, want none and zero", res.AnswerPages, res.Scores)
			}
		})
	}
}

// TestDocumentQAProgressCountsReusedApart: a question asked again starts
// from the checkpoint of its first reading; its progress has every token
// done, and says they were reused, none read (issue 52: "0/121K tokens").
func TestDocumentQAProgressCountsReusedApart(t *testing.T) {
	f := newFixture(t, makeDoc(3))
	in := api.DocumentQAInput{Document: "s3://docs/doc.txt", Question: "q?", Options: api.ModelOptions{ChunkTokens: 100}}
	f.runToEnd(t, in)
	env, err := f.run(t, in)
	if err != nil {
		t.Fatal(err)
	}
	v, err := env.QueryWorkflow(api.ProgressQuery)
	if err != nil {
		t.Fatal(err)
	}
	var p api.Progress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	if p.TokensTotal == 0 || p.ChunksDone != 3 || p.ChunksReused != 3 || p.TokensDone != p.TokensTotal || p.TokensReused != p.TokensTotal {
		t.Errorf("progress = %+v, want 3/3 chunks and every token done, all reused", p)
	}
	if got, want := details(p), fmt.Sprintf("(0 read, %s reused)", humanTokens(p.TokensTotal)); !strings.Contains(got, want) {
		t.Errorf("details %q lack %q", got, want)
	}
}

func TestTokensReused(t *testing.T) {
	tests := []struct {
		name   string
		cp     actwire.FindCheckpointOutput
		chunks int
		tokens int64
		want   int64
	}{
		{"counted by the worker", actwire.FindCheckpointOutput{Chunks: 2, Tokens: 180}, 4, 350, 180},
		{"no checkpoint", actwire.FindCheckpointOutput{}, 4, 350, 0},
		{"every chunk, from a worker from before the count", actwire.FindCheckpointOutput{Chunks: 4}, 4, 350, 350},
		{"some chunks, from a worker from before the count", actwire.FindCheckpointOutput{Chunks: 2}, 4, 350, 175},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tokensReused(tt.cp, tt.chunks, tt.tokens); got != tt.want {
				t.Errorf("tokensReused = %d, want %d", got, tt.want)
			}
		})
	}
}
