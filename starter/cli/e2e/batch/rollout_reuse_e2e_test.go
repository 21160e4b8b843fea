package batch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/rollout"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// rolloutDocs writes two local documents with the planted fact, of 2 and
// 3 chunks of 600 tokens, and a manifest of them naming them by relative
// path, as a user would; seed keeps them apart from every other test's
// documents, whose checkpoints would otherwise be found.
func rolloutDocs(t *testing.T, seed uint64) (docs []string, manifest string) {
	t.Helper()
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var lines []string
	for i := range 2 {
		name := fmt.Sprintf("d%d.txt", i+1)
		docs = append(docs, clitest.WriteFile(t, dir, name, []byte(docgen.Needle(tok, clitest.DocTokens(i), 0.3+0.4*float64(i), seed+uint64(i)))))
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("item-%d", i), "document": name,
			"question": docgen.Question, "answers": []string{docgen.Answer}})
		lines = append(lines, string(line))
	}
	manifest = filepath.Join(dir, "m.jsonl")
	if err := os.WriteFile(manifest, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return docs, manifest
}

// askOnce asks the question of doc, leaving the memory checkpoints of
// its reading behind, and returns its chunk count.
func askOnce(t *testing.T, doc string) int {
	t.Helper()
	stdout, stderr, err := clitest.RunCLI(t, "ask", "--doc", doc, "--question", docgen.Question, "--chunk-tokens", "600", "--json")
	if err != nil {
		t.Fatalf("ask %s: %v\nstderr: %s", doc, err, stderr)
	}
	var res clitest.AskJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Chunks < 2 {
		t.Fatalf("ask --json printed %q (%v): want a result of 2 chunks or more", stdout, err)
	}
	return res.Chunks
}

// storedResult reads a sample's result.json.
func storedResult(t *testing.T, store *s3store.Store, uri string) activities.StoredResult {
	t.Helper()
	var res activities.StoredResult
	clitest.ReadJSON(t, store, uri, &res)
	return res
}

// exportJSON is what `starter export rollouts --json` prints.
type exportJSON struct {
	rollout.Stats
	Out          string `json:"out"`
	WholeCommand string `json:"whole_command"`
}

// TestRolloutsWholeAfterAsk is issue 43's sequence: a question asked of
// each of two documents by hand, then a batch of the same two items with
// --samples 2. The asks left memory checkpoints that sample 0 of each item
// would start from under reuse "auto"; a rollout group takes none, so
// every sample reads every chunk in its own run and the export holds 2
// groups × 2 samples of chunks + 1 turns each.
func TestRolloutsWholeAfterAsk(t *testing.T) {
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	_, store := clitest.Store(t)
	docs, manifest := rolloutDocs(t, 4300)
	for _, doc := range docs {
		askOnce(t, doc)
	}

	d.Simulator.Reset()
	out, _ := clitest.RunBatch(t, "--manifest", manifest, "--samples", "2", "--name", "rollout-after-ask", "--chunk-tokens", "600", "--json")
	res := out.Result
	if res.Items != 2 || res.Succeeded != 4 || res.Skipped != 0 || res.Samples != 2 {
		t.Fatalf("batch result = %+v, want 2 items × 2 samples answered, none reused", res)
	}
	items := clitest.ReadResults(t, store, out.Report.ResultsURI)
	wantCalls := 0
	for _, r := range items {
		if got := storedResult(t, store, r.ResultURI); got.ChunksReused != 0 || got.ReusedFrom != nil {
			t.Errorf("item %d sample %d started from a checkpoint of %+v after %d chunks, want every chunk read in its own run",
				r.Seq, r.Sample, got.ReusedFrom, got.ChunksReused)
		}
		wantCalls += r.Chunks + 1
	}
	calls := d.Simulator.Calls()
	if len(calls) != wantCalls {
		t.Errorf("the batch made %d model calls, want %d: every chunk of every sample, and its answer", len(calls), wantCalls)
	}

	file := filepath.Join(t.TempDir(), "r.jsonl")
	stdout, stderr, err := clitest.RunCLI(t, "export", "rollouts", res.WorkflowID, "--out", file, "--json")
	if err != nil {
		t.Fatalf("export: %v\nstderr: %s", err, stderr)
	}
	var st exportJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("export --json printed %q: %v", stdout, err)
	}
	if st.Samples != 4 || st.Groups != 2 || len(st.Incomplete) != 0 || st.WholeCommand != "" {
		t.Fatalf("export = %+v, want 4 samples in 2 groups, none left out", st)
	}
	checkRollouts(t, calls, res.WorkflowID, items, file)
}

// TestRolloutExportReportsIncompleteSample: a rollout group told to reuse
// (--reuse always) after a question was asked of its first document has
// sample 0 of item 0 start from that reading's checkpoint. Its export
// writes the other three samples, names the one left out (item, sample,
// turns missing, why) with the command that reads it whole, and exits 1;
// that command's batch then exports whole.
func TestRolloutExportReportsIncompleteSample(t *testing.T) {
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	_, store := clitest.Store(t)
	docs, manifest := rolloutDocs(t, 4400)
	chunks := askOnce(t, docs[0])

	d.Simulator.Reset()
	out, _ := clitest.RunBatch(t, "--manifest", manifest, "--samples", "2", "--reuse", "always", "--name", "rollout-reused", "--chunk-tokens", "600", "--json")
	if r := out.Result; r.Succeeded != 4 || r.Skipped != 0 {
		t.Fatalf("batch result = %+v, want 4 samples answered", r)
	}
	items := clitest.ReadResults(t, store, out.Report.ResultsURI)
	var whole []api.BatchItemResult
	for _, r := range items {
		reused := storedResult(t, store, r.ResultURI).ChunksReused
		if r.Seq == 0 && r.Sample == 0 {
			if reused != chunks {
				t.Fatalf("item 0 sample 0 reused %d chunks, want the ask's %d", reused, chunks)
			}
			continue
		}
		if reused != 0 {
			t.Errorf("item %d sample %d reused %d chunks, want none (no reading of its own sample before)", r.Seq, r.Sample, reused)
		}
		whole = append(whole, r)
	}
	calls := d.Simulator.Calls()

	file := filepath.Join(t.TempDir(), "r.jsonl")
	stdout, stderr, err := clitest.RunCLI(t, "export", "rollouts", out.Result.WorkflowID, "--out", file, "--json")
	if cli.ExitCode(err) != cli.ExitFailed {
		t.Fatalf("export: %v (exit %d), want exit %d for a sample left out\nstderr: %s", err, cli.ExitCode(err), cli.ExitFailed, stderr)
	}
	var st exportJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("export --json printed %q: %v", stdout, err)
	}
	if st.Samples != 3 || st.Groups != 2 || len(st.Incomplete) != 1 {
		t.Fatalf("export = %+v, want 3 samples in 2 groups and 1 left out", st)
	}
	in := st.Incomplete[0]
	if in.Seq != 0 || in.Group != "item-0" || in.Sample != 0 || in.Turns != chunks+1 || in.Missing != chunks ||
		!strings.Contains(in.Reason, "checkpoint") {
		t.Errorf("left out %+v, want item-0 sample 0 with %d of %d turns missing, from a checkpoint", in, chunks, chunks+1)
	}
	if !strings.HasPrefix(st.WholeCommand, "starter batch --manifest s3://") || !strings.Contains(st.WholeCommand, "--samples 2 --chunk-tokens 600") ||
		!strings.HasSuffix(st.WholeCommand, "--reuse none") {
		t.Errorf("whole_command = %q, want starter batch of the manifest, 2 samples and 600-token chunks with --reuse none", st.WholeCommand)
	}
	checkRollouts(t, calls, out.Result.WorkflowID, whole, file)

	// As text: the item, the sample, the turns missing and the command.
	text, _, err := clitest.RunCLI(t, "export", "rollouts", out.Result.WorkflowID, "--out", file)
	if cli.ExitCode(err) != cli.ExitFailed {
		t.Errorf("export as text: %v (exit %d), want exit %d", err, cli.ExitCode(err), cli.ExitFailed)
	}
	for _, want := range []string{"1 without all their turns", fmt.Sprintf("left out: item 0 (item-0) sample 0, %d of %d turns missing", chunks, chunks+1), st.WholeCommand} {
		if !strings.Contains(text, want) {
			t.Errorf("export printed no %q:\n%s", want, text)
		}
	}

	// The command it names reads every sample whole.
	d.Simulator.Reset()
	again, _ := clitest.RunBatch(t, append(strings.Fields(st.WholeCommand)[2:], "--json")...)
	items = clitest.ReadResults(t, store, again.Report.ResultsURI)
	if _, _, err := clitest.RunCLI(t, "export", "rollouts", again.Result.WorkflowID, "--out", file, "--json"); err != nil || len(items) != 4 {
		t.Fatalf("export of the batch the command started: %v (%d samples)", err, len(items))
	}
	checkRollouts(t, d.Simulator.Calls(), again.Result.WorkflowID, items, file)
}
