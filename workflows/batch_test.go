package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/stretchr/testify/mock"
)

// batchFixture runs BatchQA in the SDK's test environment with the real
// activities over an in-memory store, and either the real DocumentQA
// (answering with markerModel) or a stand-in child.
type batchFixture struct {
	store *activitiestest.Store
	model *activitiestest.Model
	acts  *activities.Activities
	// child, when set, is registered as DocumentQA instead of the real one.
	child func(workflow.Context, api.DocumentQAInput) (*DocumentQAResult, error)
	// setup runs on each environment before the workflow starts.
	setup func(*testsuite.TestWorkflowEnvironment)
	// carry runs the batch at BatchCarryChange version 1.
	carry bool
}

func newBatchFixture(t *testing.T) *batchFixture {
	t.Helper()
	f := &batchFixture{store: activitiestest.NewStore(), model: markerModel()}
	f.acts = &activities.Activities{
		// The SDK's test environment has no server to describe a run in.
		SkipExecutionChecks: true,
		ReadPrefixes:        []string{"s3://"}, WritePrefixes: []string{"s3://"}, // any bucket: the tests use several
		Store: f.store, Model: f.model, DefaultModel: "fake", Bucket: "memagent",
		Templates:  memagent.DefaultTemplates(),
		Tokenizers: func(string) (memagent.Tokenizer, error) { return wordTokenizer{}, nil },
	}
	// Document dN has N lines, so markerModel answers "w00(N-1)".
	for n := 1; n <= 5; n++ {
		f.put(t, fmt.Sprintf("s3://docs/d%d.txt", n), makeDoc(n))
	}
	return f
}

func (f *batchFixture) put(t *testing.T, uri, data string) {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Put(context.Background(), loc, []byte(data), ""); err != nil {
		t.Fatal(err)
	}
}

func (f *batchFixture) get(t *testing.T, uri string) []byte {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	b := f.store.Object(loc)
	if b == nil {
		t.Fatalf("%s does not exist", uri)
	}
	return b
}

// jsonlManifest writes a JSON Lines manifest of n items over documents
// d1..d5 and returns its URI; edit may change item i.
func (f *batchFixture) jsonlManifest(t *testing.T, name string, n int, edit func(i int, item map[string]any)) string {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		d := i%5 + 1
		item := map[string]any{
			"id": fmt.Sprintf("item-%d", i), "document": fmt.Sprintf("s3://docs/d%d.txt", d),
			"question": fmt.Sprintf("Which marker came last? (%d)", i), "answers": []string{fmt.Sprintf("w%03d", d-1)},
			"labels": map[string]string{"lines": fmt.Sprint(d)},
		}
		if edit != nil {
			edit(i, item)
		}
		line, _ := json.Marshal(item)
		b.Write(line)
		b.WriteByte('\n')
	}
	uri := "s3://manifests/" + name
	f.put(t, uri, b.String())
	return uri
}

func (f *batchFixture) run(t *testing.T, id string, in api.BatchQAInput) (*testsuite.TestWorkflowEnvironment, error) {
	t.Helper()
	return f.runWith(t, id, batchRunInput{BatchQAInput: in})
}

// runWith runs one generation: a run handed a state is a continued run.
func (f *batchFixture) runWith(t *testing.T, id string, in batchRunInput) (*testsuite.TestWorkflowEnvironment, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
	// The real activities run in the same process: on a loaded machine a
	// workflow task may wait for the CPU longer than the default 1 s
	// deadlock detection allows.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
	env.RegisterWorkflowWithOptions(BatchQA, workflow.RegisterOptions{Name: api.BatchQAName})
	if f.child != nil {
		env.RegisterWorkflowWithOptions(f.child, workflow.RegisterOptions{Name: api.DocumentQAName})
	} else {
		env.RegisterWorkflowWithOptions(DocumentQA, workflow.RegisterOptions{Name: api.DocumentQAName})
	}
	f.acts.Register(env)
	if in.State != nil {
		ContinuedFrom(env)
	}
	// A test environment runs one run at a time: the children a run
	// carries over to the next one live in no environment. These tests
	// therefore run the batch as runs recorded before BatchCarryChange do
	// (each run waits for its children); the carried window is tested on
	// the dev stack (TestBatchCarriesWindowAcrossContinueAsNew).
	if !f.carry {
		env.OnGetVersion(BatchCarryChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	if f.setup != nil {
		f.setup(env)
	}
	env.ExecuteWorkflow(api.BatchQAName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	return env, env.GetWorkflowError()
}

// runToEnd follows continue-as-new until BatchQA returns, and returns its
// result and every run's input.
func (f *batchFixture) runToEnd(t *testing.T, id string, first api.BatchQAInput) (*api.BatchQAResult, []batchRunInput) {
	t.Helper()
	var inputs []batchRunInput
	in := batchRunInput{BatchQAInput: first}
	for range 50 {
		inputs = append(inputs, in)
		env, err := f.runWith(t, id, in)
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			if can.WorkflowType.Name != api.BatchQAName {
				t.Fatalf("continue-as-new to %q", can.WorkflowType.Name)
			}
			in = batchRunInput{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("workflow error: %v", err)
		}
		var res api.BatchQAResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		return &res, inputs
	}
	t.Fatal("more than 50 runs")
	return nil, nil
}

// results reads a finished batch's report and its per-item results.
func (f *batchFixture) results(t *testing.T, res *api.BatchQAResult) (api.BatchReport, []api.BatchItemResult) {
	t.Helper()
	var rep api.BatchReport
	if err := json.Unmarshal(f.get(t, res.ReportURI), &rep); err != nil {
		t.Fatal(err)
	}
	var items []api.BatchItemResult
	for _, line := range bytes.Split(bytes.TrimSpace(f.get(t, rep.ResultsURI)), []byte{'\n'}) {
		var r api.BatchItemResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		items = append(items, r)
	}
	samples := max(rep.Samples, 1)
	for i, r := range items {
		if r.Seq != i/samples || r.Sample != i%samples {
			t.Fatalf("results line %d has seq %d sample %d: not in manifest order", i, r.Seq, r.Sample)
		}
	}
	return rep, items
}

func TestBatchQAWindowFailuresAndProgress(t *testing.T) {
	f := newBatchFixture(t)
	running, maxRunning, started := 0, 0, 0
	f.child = func(ctx workflow.Context, in api.DocumentQAInput) (*DocumentQAResult, error) {
		running++
		started++
		maxRunning = max(maxRunning, running)
		defer func() { running-- }()
		var seq int
		fmt.Sscanf(in.Question[strings.LastIndex(in.Question, "(")+1:], "%d)", &seq)
		if err := workflow.Sleep(ctx, time.Duration(seq%5+1)*time.Minute); err != nil {
			return nil, err
		}
		if strings.Contains(in.Question, "fail") {
			return nil, temporal.NewNonRetryableApplicationError("prompt too long", api.ErrPromptTooLong, nil)
		}
		// The child writes under its own run's prefix: only the batch
		// writes the answer cache.
		if in.BatchID != "window" || in.OutputPrefix != "" || in.Options.Model != "fake" {
			return nil, fmt.Errorf("child input batch=%q output=%q model=%q", in.BatchID, in.OutputPrefix, in.Options.Model)
		}
		return &DocumentQAResult{Answer: "w000", AnswerFound: true, Tokens: 100, Chunks: 1, Usage: api.Usage{Calls: 2},
			ResultURI: "s3://memagent/runs/" + workflow.GetInfo(ctx).WorkflowExecution.ID + "/run/result.json"}, nil
	}
	manifest := f.jsonlManifest(t, "window.jsonl", 60, func(i int, item map[string]any) {
		switch i {
		case 7, 31, 55:
			item["question"] = fmt.Sprintf("Please fail (%d)", i)
		case 12, 40:
			item["document"] = "s3://docs/missing.txt"
		}
	})
	var mid api.BatchProgress
	f.setup = func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(api.ProgressQuery)
			if err != nil {
				t.Errorf("query: %v", err)
				return
			}
			if err := v.Get(&mid); err != nil {
				t.Error(err)
			}
		}, 150*time.Second)
	}
	res, inputs := f.runToEnd(t, "batch-window", api.BatchQAInput{
		Manifest: manifest, Name: "window", Concurrency: 7, PageSize: 10,
	})
	if len(inputs) != 1 {
		t.Errorf("runs = %d, want 1", len(inputs))
	}
	if maxRunning != 7 {
		t.Errorf("at most %d children ran at once, want the window of 7", maxRunning)
	}
	if started != 58 {
		t.Errorf("children started = %d, want 58 (60 items, 2 with missing documents)", started)
	}
	if mid.Stage != api.BatchStageRunning || mid.Items != 60 || mid.Running < 1 || mid.Running > 7 || mid.Done == 0 || mid.Done >= 60 {
		t.Errorf("progress mid-run = %+v", mid)
	}
	if res.Items != 60 || res.Succeeded != 55 || res.Failed != 5 || res.Skipped != 0 {
		t.Errorf("result = %+v", res)
	}
	rep, items := f.results(t, res)
	byType := map[string]int{}
	for _, r := range items {
		if r.Status == api.ItemFailed {
			byType[r.ErrorType]++
			if r.Error == "" {
				t.Errorf("item %d failed without a message", r.Seq)
			}
		}
	}
	if byType[api.ErrPromptTooLong] != 3 || byType[api.ErrDocumentNotFound] != 2 {
		t.Errorf("failed items by type = %v", byType)
	}
	if rep.Overall.Failed != 5 || rep.Overall.Answered != 55 || rep.Overall.Usage.Calls != 110 {
		t.Errorf("overall = %+v", rep.Overall)
	}
	if rep.WorkflowID != "batch-window" || rep.Name != "window" || res.ReportPrefix != "s3://memagent/batches/batch-window/" {
		t.Errorf("report name %q workflow %q prefix %q", rep.Name, rep.WorkflowID, res.ReportPrefix)
	}
}

func TestBatchQAContinueAsNewCarriesState(t *testing.T) {
	f := newBatchFixture(t)
	res, inputs := f.runToEnd(t, "batch-can", api.BatchQAInput{
		Manifest: f.jsonlManifest(t, "can.jsonl", 23, nil), Concurrency: 3, PageSize: 5, ItemsPerRun: 10,
		Options: api.ModelOptions{ChunkTokens: 100},
	})
	// Pages of 5; a run stops at the first page boundary after 10 items:
	// 10 + 10 + 3.
	if len(inputs) != 3 {
		t.Fatalf("runs = %d, want 3", len(inputs))
	}
	st := inputs[2].State
	if st == nil || st.NextPage != 4 || st.Started != 20 || st.Answered != 20 || st.Runs != 2 || st.Expanded.Pages != 5 {
		t.Errorf("state handed to run 3 = %+v", st)
	}
	if st != nil && !st.StartedAt.Equal(inputs[1].State.StartedAt) {
		t.Errorf("start time changed across continue-as-new: %v then %v", inputs[1].State.StartedAt, st.StartedAt)
	}
	if res.Items != 23 || res.Succeeded != 23 || res.Runs != 3 {
		t.Errorf("result = %+v", res)
	}
	rep, items := f.results(t, res)
	if len(items) != 23 {
		t.Fatalf("results has %d items, want 23", len(items))
	}
	ids := map[string]bool{}
	for _, r := range items {
		if r.Status != api.ItemAnswered || r.Scores == nil || !r.Scores.ExactMatch {
			t.Errorf("item %d: status %s answer %q scores %+v", r.Seq, r.Status, r.Answer, r.Scores)
		}
		if ids[r.WorkflowID] {
			t.Errorf("child id %s used twice", r.WorkflowID)
		}
		ids[r.WorkflowID] = true
		if want := fmt.Sprintf("batch-can.%d", r.Seq); r.WorkflowID != want {
			t.Errorf("child id %s, want %s", r.WorkflowID, want)
		}
	}
	if rep.Overall.ExactMatch != 1 || rep.Overall.Scored != 23 {
		t.Errorf("overall = %+v", rep.Overall)
	}
	// Every item's document has 1..5 chunks: one update per chunk and one
	// answer each, and not a call more.
	want := 0
	for i := range 23 {
		want += i%5 + 1 + 1
	}
	if got := len(f.model.Calls()); got != want {
		t.Errorf("model calls = %d, want %d", got, want)
	}
}

func TestBatchQAReusesAnswers(t *testing.T) {
	f := newBatchFixture(t)
	opts := api.ModelOptions{ChunkTokens: 100}
	first, _ := f.runToEnd(t, "batch-1", api.BatchQAInput{Manifest: f.jsonlManifest(t, "a.jsonl", 12, nil), Options: opts})
	if first.Succeeded != 12 {
		t.Fatalf("first batch = %+v", first)
	}
	calls := len(f.model.Calls())

	// The same items with other ids and one item's gold answer changed: all
	// reused, scored against the new gold.
	again := f.jsonlManifest(t, "b.jsonl", 12, func(i int, item map[string]any) {
		item["id"] = fmt.Sprintf("other-%d", i)
		if i == 3 {
			item["answers"] = []string{"something else"}
		}
	})
	second, _ := f.runToEnd(t, "batch-2", api.BatchQAInput{Manifest: again, Options: opts})
	if second.Skipped != 12 || second.Succeeded != 0 || second.Failed != 0 {
		t.Errorf("second batch = %+v, want all 12 reused", second)
	}
	if n := len(f.model.Calls()); n != calls {
		t.Errorf("the second batch made %d model calls, want none", n-calls)
	}
	_, items := f.results(t, second)
	for _, r := range items {
		// The reader's names: no run of batch-1 is named, the answer cache
		// entry (the batch wrote it from its own child's result) is.
		if r.Status != api.ItemReused || !strings.HasPrefix(r.ResultURI, "s3://memagent/answers/") || r.WorkflowID != "" {
			t.Errorf("item %d: status %s result %q workflow %q", r.Seq, r.Status, r.ResultURI, r.WorkflowID)
		}
		wantEM := r.Seq != 3
		if r.Scores == nil || r.Scores.ExactMatch != wantEM {
			t.Errorf("item %d: scores %+v, want exact match %v", r.Seq, r.Scores, wantEM)
		}
	}

	// Other options are another answer: nothing is reused.
	third, _ := f.runToEnd(t, "batch-3", api.BatchQAInput{Manifest: again, Options: api.ModelOptions{ChunkTokens: 120}})
	if third.Skipped != 0 || third.Succeeded != 12 {
		t.Errorf("batch with other options = %+v, want nothing reused", third)
	}

	// Reuse "none" takes no earlier answer and no checkpoint: every item
	// reads every chunk again, as the first batch did.
	firstCalls := calls
	calls = len(f.model.Calls())
	none, _ := f.runToEnd(t, "batch-none", api.BatchQAInput{Manifest: again, Options: opts, Reuse: api.ReuseNone})
	if none.Skipped != 0 || none.Succeeded != 12 {
		t.Errorf("batch with reuse none = %+v, want all 12 answered again", none)
	}
	if n := len(f.model.Calls()) - calls; n != firstCalls {
		t.Errorf("the batch with reuse none made %d model calls, want the first batch's %d", n, firstCalls)
	}
	// A run recorded before BatchWholeReadingsChange took earlier answers
	// whatever reuse said.
	f.setup = func(env *testsuite.TestWorkflowEnvironment) {
		env.OnGetVersion(BatchWholeReadingsChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	old, _ := f.runToEnd(t, "batch-none-old", api.BatchQAInput{Manifest: again, Options: opts, Reuse: api.ReuseNone})
	if old.Skipped != 12 {
		t.Errorf("batch with reuse none before the change = %+v, want all 12 reused", old)
	}
}

// TestBatchQAChildIDsKeepTheirForm: a batch whose first run takes
// HTTPIDsChange names every child <batch>.<seq>, in every run; one whose
// first run was recorded before it names them <batch>/<seq> to its end,
// though its later runs run on code that has the change (the state says
// which, not the version marker, which a continued run does not ask).
func TestBatchQAChildIDsKeepTheirForm(t *testing.T) {
	for _, tc := range []struct {
		name    string
		old     bool
		id      func(seq int) string
		wantRun bool
	}{
		{"new batch", false, func(seq int) string { return fmt.Sprintf("ids-b.%d", seq) }, true},
		{"batch from before the change", true, func(seq int) string { return fmt.Sprintf("ids-b/%d", seq) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBatchFixture(t)
			manifest := f.jsonlManifest(t, "ids.jsonl", 5, nil)
			runs := 0
			f.setup = func(env *testsuite.TestWorkflowEnvironment) {
				runs++
				if tc.old && runs == 1 {
					env.OnGetVersion(HTTPIDsChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
				}
			}
			res, inputs := f.runToEnd(t, "ids-b", api.BatchQAInput{Manifest: manifest, Options: api.ModelOptions{ChunkTokens: 100}, ItemsPerRun: 2, PageSize: 2})
			if res.Succeeded != 5 || len(inputs) < 3 {
				t.Fatalf("result %+v in %d runs, want 5 answered in at least 3", res, len(inputs))
			}
			for i, in := range inputs[1:] {
				if in.State.HTTPIDs != tc.wantRun {
					t.Errorf("run %d was handed http_ids %v, want %v", i+2, in.State.HTTPIDs, tc.wantRun)
				}
			}
			_, items := f.results(t, res)
			for _, r := range items {
				if want := tc.id(r.Seq); r.WorkflowID != want {
					t.Errorf("item %d ran as %q, want %q", r.Seq, r.WorkflowID, want)
				}
			}
		})
	}
}

func TestBatchQAMemAgentManifest(t *testing.T) {
	f := newBatchFixture(t)
	docA, docB := makeDoc(2), makeDoc(3)
	items := []map[string]any{
		{"_id": "a1", "context": docA, "input": "Which marker came last?", "answers": []string{"w001"}, "length": 200, "task": "niah"},
		{"_id": "a2", "context": docA, "input": "Which marker is last?", "answers": []string{"w001"}, "length": 200, "task": "vt"},
		{"_id": "b1", "context": docB, "input": "Which marker came last?", "answers": []string{"nope"}, "length": 300, "task": "niah"},
	}
	data, _ := json.Marshal(items)
	f.put(t, "s3://manifests/eval.json", string(data))
	res, _ := f.runToEnd(t, "batch-eval", api.BatchQAInput{
		Manifest: "s3://manifests/eval.json", DatedReport: true, ReportPrefix: "s3://reports/nightly",
		Options: api.ModelOptions{ChunkTokens: 100},
	})
	contexts := 0
	for _, k := range f.store.Keys() {
		if strings.HasPrefix(k.Key, "contexts/sha256/") {
			contexts++
		}
	}
	if contexts != 2 {
		t.Errorf("%d contexts stored, want 2 (one per distinct context)", contexts)
	}
	if !strings.HasPrefix(res.ReportPrefix, "s3://reports/nightly/") || len(res.ReportPrefix) != len("s3://reports/nightly/2006-01-02T150405Z/") {
		t.Errorf("dated report prefix = %q", res.ReportPrefix)
	}
	rep, results := f.results(t, res)
	for _, r := range results {
		if !strings.HasPrefix(r.Document, "s3://memagent/contexts/sha256/") {
			t.Errorf("item %s document %q", r.ID, r.Document)
		}
	}
	byLen := rep.ByLabel["length"]
	if byLen["200"].Items != 2 || byLen["200"].ExactMatch != 1 || byLen["300"].Items != 1 || byLen["300"].ExactMatch != 0 {
		t.Errorf("by length = %+v", byLen)
	}
	if rep.ByLabel["task"]["niah"].Items != 2 || rep.Overall.ExactMatch < 0.66 || rep.Overall.ExactMatch > 0.67 {
		t.Errorf("by task = %+v, overall %+v", rep.ByLabel["task"], rep.Overall)
	}
}

func TestBatchQABadManifestFailsBeforeAnyChild(t *testing.T) {
	f := newBatchFixture(t)
	started := 0
	f.child = func(ctx workflow.Context, in api.DocumentQAInput) (*DocumentQAResult, error) {
		started++
		return &DocumentQAResult{}, nil
	}
	manifest := f.jsonlManifest(t, "bad.jsonl", 8, func(i int, item map[string]any) {
		switch i {
		case 2:
			delete(item, "question")
		case 5:
			item["id"] = "item-1"
		case 6:
			item["document"] = "docs/d1.txt"
		}
	})
	_, err := f.run(t, "batch-bad", api.BatchQAInput{Manifest: manifest})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput {
		t.Fatalf("error = %v, want %s", err, api.ErrBadInput)
	}
	for _, want := range []string{"3 bad item(s)", "line 3: missing question", `line 6: duplicate id "item-1" (first at line 2)`, `line 7: document "docs/d1.txt" is not an s3:// URI`} {
		if !strings.Contains(appErr.Error(), want) {
			t.Errorf("error %q lacks %q", appErr.Error(), want)
		}
	}
	if started != 0 {
		t.Errorf("%d children started for a bad manifest", started)
	}

	_, err = f.run(t, "batch-none", api.BatchQAInput{Manifest: "s3://manifests/none.jsonl"})
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput || !strings.Contains(appErr.Error(), "does not exist") {
		t.Errorf("missing manifest: error = %v", err)
	}
	_, err = f.run(t, "batch-invalid", api.BatchQAInput{Manifest: "manifest.jsonl", Concurrency: -1})
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput {
		t.Errorf("invalid input: error = %v", err)
	}
}

func TestBatchQASamples(t *testing.T) {
	f := newBatchFixture(t)
	opts := api.ModelOptions{ChunkTokens: 100}
	manifest := f.jsonlManifest(t, "s.jsonl", 5, nil)
	// A batch without samples answers sample 0 of each item first.
	one, _ := f.runToEnd(t, "batch-1", api.BatchQAInput{Manifest: manifest, Options: opts})
	if one.Succeeded != 5 || one.Samples != 0 || one.Groups != nil {
		t.Fatalf("batch without samples = %+v", one)
	}
	calls := len(f.model.Calls())
	onePass := calls // every chunk of the 5 items, and their answers

	// Three samples with items per run of 4, reuse "always": samples 1 and
	// 2 of every item run, over more than one run; sample 0 is the earlier
	// batch's.
	res, _ := f.runToEnd(t, "batch-3", api.BatchQAInput{Manifest: manifest, Options: opts, Samples: 3, ItemsPerRun: 4, PageSize: 6, Reuse: api.ReuseAlways})
	if res.Items != 5 || res.Succeeded != 10 || res.Skipped != 5 || res.Failed != 0 || res.Samples != 3 || res.Runs < 2 {
		t.Errorf("result = %+v", res)
	}
	if res.Groups == nil || res.Groups.Items != 5 || res.Groups.Samples != 3 || res.Groups.Scored != 5 {
		t.Errorf("groups = %+v", res.Groups)
	}
	if n := len(f.model.Calls()) - calls; n != 2*calls {
		t.Errorf("the batch of 3 samples made %d model calls, want those of 10 runs (%d)", n, 2*calls)
	}
	_, items := f.results(t, res)
	if len(items) != 15 {
		t.Fatalf("results.jsonl has %d lines, want 15", len(items))
	}
	for i, r := range items {
		seq, sample := i/3, i%3
		wantID := SampleWorkflowID("batch-3", seq, sample)
		if sample == 0 {
			// Reused from batch-1, whose run is not named.
			wantID = ""
		}
		if r.Seq != seq || r.Sample != sample || r.WorkflowID != wantID {
			t.Errorf("line %d = seq %d sample %d workflow %s, want %d %d %s", i, r.Seq, r.Sample, r.WorkflowID, seq, sample, wantID)
		}
	}

	// The same rollout groups again with the default reuse: every answer
	// and every sample's memory checkpoint is there, yet each of the 15
	// samples runs and reads every chunk (a reused chunk would make fewer
	// calls than the first batch's runs did).
	calls = len(f.model.Calls())
	whole, _ := f.runToEnd(t, "batch-whole", api.BatchQAInput{Manifest: manifest, Options: opts, Samples: 3, ItemsPerRun: 4, PageSize: 6})
	if whole.Succeeded != 15 || whole.Skipped != 0 || whole.Failed != 0 {
		t.Errorf("rollout groups with the default reuse = %+v, want all 15 samples answered, none reused", whole)
	}
	if n, want := len(f.model.Calls())-calls, 3*onePass; n != want {
		t.Errorf("rollout groups with the default reuse made %d model calls, want %d: every chunk of every sample", n, want)
	}
	if got := SampleWorkflowID("b", 7, 2); got != "b.7.s2" {
		t.Errorf("SampleWorkflowID = %q", got)
	}
	if err := (api.BatchQAInput{Manifest: manifest, Samples: 65}).Validate(); err == nil {
		t.Error("65 samples: no error")
	}
}

// TestBatchQACarriedChildrenSettleOnce: at BatchCarryChange version 1 a
// run continues as new without waiting for its children, and the next run
// settles the carried ones from CheckBatchChildren (here a stand-in that
// answers from what the children returned, and "terminated" for a child
// the test environment never finished). Every item gets exactly one
// outcome, whatever path settled it.
func TestBatchQACarriedChildrenSettleOnce(t *testing.T) {
	f := newBatchFixture(t)
	f.carry = true
	done := map[string]*DocumentQAResult{}
	f.child = func(ctx workflow.Context, in api.DocumentQAInput) (*DocumentQAResult, error) {
		// Slow children: a run reaches its boundary while they read.
		if err := workflow.Sleep(ctx, 10*time.Second); err != nil {
			return nil, err
		}
		res := &DocumentQAResult{Answer: "w000", AnswerFound: true, WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID}
		done[res.WorkflowID] = res
		return res, nil
	}
	checks := 0
	f.setup = func(env *testsuite.TestWorkflowEnvironment) {
		// The children of one run live in no later run's environment.
		env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, api.CarriedSignal, mock.Anything).Return(nil)
		env.OnActivity(activities.CheckChildrenName, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in actwire.CheckChildrenInput) (*actwire.CheckChildrenOutput, error) {
				checks++
				out := &actwire.CheckChildrenOutput{}
				ids := slices.Clone(in.IDs)
				for _, ref := range in.Children {
					if ref.RunID == "" {
						t.Errorf("carried child %s checked without the run the batch started", ref.WorkflowID)
					}
					ids = append(ids, ref.WorkflowID)
				}
				for _, id := range ids {
					o := actwire.ChildOutcome{WorkflowID: id, Result: done[id]}
					if o.Result == nil {
						o.Error, o.ErrorType = "terminated", "Terminated"
					}
					out.Closed = append(out.Closed, o)
				}
				return out, nil
			})
	}
	res, inputs := f.runToEnd(t, "batch-carry", api.BatchQAInput{
		Manifest: f.jsonlManifest(t, "carry.jsonl", 9, nil), Concurrency: 4, PageSize: 2, ItemsPerRun: 2,
		CarryAfterSeconds: 1,
		Options:           api.ModelOptions{ChunkTokens: 100},
	})
	carried := 0
	for _, in := range inputs {
		if in.State != nil {
			carried += len(in.State.Carried)
		}
	}
	if carried == 0 || checks == 0 {
		t.Fatalf("no run carried a child (%d) or checked one (%d): the test does not exercise the carried window", carried, checks)
	}
	t.Logf("%d runs, %d children carried, %d checks, %d answered, %d failed", len(inputs), carried, checks, res.Succeeded, res.Failed)
	if res.Items != 9 || res.Succeeded+res.Failed != 9 {
		t.Errorf("result %+v: want 9 items, each answered or failed once", res)
	}
	_, items := f.results(t, res)
	if len(items) != 9 {
		t.Fatalf("results has %d items, want 9", len(items))
	}
	for _, r := range items {
		if r.Status == api.ItemAnswered && done[r.WorkflowID] == nil {
			t.Errorf("item %d answered without its child having answered", r.Seq)
		}
	}
}

// TestBatchQACorpusItems: a manifest line's documents reach the child's
// DocumentQAInput.Documents (a single document's line sends none), and the
// item's result carries the documents and the child's answer_sources.
func TestBatchQACorpusItems(t *testing.T) {
	f := newBatchFixture(t)
	corpus := []string{"s3://docs/d1.txt", "s3://docs/d2.txt", "s3://docs/d3.txt"}
	inputs := map[string]api.DocumentQAInput{}
	f.child = func(ctx workflow.Context, in api.DocumentQAInput) (*DocumentQAResult, error) {
		inputs[in.Question] = in
		res := &DocumentQAResult{Answer: "w001", AnswerFound: true, Documents: in.Documents}
		if len(in.Documents) > 0 {
			res.AnswerSources = []api.SourceRef{{Document: in.Documents[1], Name: "d2.txt"}}
		}
		return res, nil
	}
	manifest := f.jsonlManifest(t, "corpus.jsonl", 2, func(i int, item map[string]any) {
		if i == 0 {
			delete(item, "document")
			item["documents"] = corpus
		}
	})
	res, _ := f.runToEnd(t, "batch-corpus", api.BatchQAInput{Manifest: manifest})
	if res.Succeeded != 2 {
		t.Fatalf("batch = %+v", res)
	}
	for q, in := range inputs {
		switch {
		case strings.HasSuffix(q, "(0)"):
			if in.Document != "" || !slices.Equal(in.Documents, corpus) {
				t.Errorf("corpus child input: document %q documents %q, want documents %q", in.Document, in.Documents, corpus)
			}
		case in.Document != "s3://docs/d2.txt" || in.Documents != nil:
			t.Errorf("single child input: document %q documents %q", in.Document, in.Documents)
		}
	}
	_, items := f.results(t, res)
	if r := items[0]; !slices.Equal(r.Documents, corpus) || api.CiteSources(r.AnswerSources) != "d2.txt" {
		t.Errorf("corpus item: documents %q answer_sources %+v", r.Documents, r.AnswerSources)
	}
	if r := items[1]; r.Documents != nil || r.AnswerSources != nil {
		t.Errorf("single item: documents %q answer_sources %+v", r.Documents, r.AnswerSources)
	}
}
