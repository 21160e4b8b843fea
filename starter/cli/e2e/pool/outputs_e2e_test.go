package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// The attacks of issue 37, each performed on the embedded clitest.Stack as a
// caller would: every one ends as memagent.Forbidden or BadInput with
// nothing written and no other caller's workflow id or document in any
// output.

// startAs starts a workflow with the Go client on the test's task queue
// under id.
func startAs(t *testing.T, c client.Client, id, workflow string, in any) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: os.Getenv("MEMAGENT_TASK_QUEUE")}, workflow, in)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// bucketKeys lists every key of the worker's bucket.
func bucketKeys(t *testing.T, store *s3store.Store, bucket string) []string {
	t.Helper()
	keys, err := store.List(context.Background(), bucket, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestCallersKeptOutOfEachOthersOutputs: another caller's chunk trace,
// result and batch report, under the prefixes it claimed, named as a
// document, a corpus member (one, or every object listed under the
// prefix), a review's document, a manifest and a compare_with report; and
// claims at the bucket's reports/, above and inside the victim's claim,
// and in checkpoints/. Each fails as memagent.Forbidden, naming neither
// the victim's workflow nor its runs, with no model call and no object
// written.
func TestCallersKeptOutOfEachOthersOutputs(t *testing.T) {
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	c := clitest.Dial(t)
	cfg, store := clitest.Store(t)
	ctx := context.Background()
	b := "s3://" + cfg.Bucket + "/"
	doc := clitest.PutDoc(t, "outputs-e2e/contract.txt", 3000, 7)
	opts := api.ModelOptions{ChunkTokens: 2000}

	victimPrefix := b + "team-a/review1/"
	var victim api.DocumentQAResult
	if err := startAs(t, c, "matter-acme-merger", api.DocumentQAName, api.DocumentQAInput{Document: doc, Question: docgen.Question,
		Options: opts, OutputPrefix: victimPrefix}).Get(ctx, &victim); err != nil {
		t.Fatal(err)
	}
	manifest := b + "outputs-e2e/m.jsonl"
	if err := store.Put(ctx, mustParse(t, manifest), []byte(fmt.Sprintf(`{"id":"c","document":%q,"question":%q}`+"\n", doc, docgen.Question)), ""); err != nil {
		t.Fatal(err)
	}
	var victimBatch api.BatchQAResult
	if err := startAs(t, c, "matter-acme-nightly", api.BatchQAName, api.BatchQAInput{Manifest: manifest, Options: opts,
		ReportPrefix: b + "team-b/nightly1/"}).Get(ctx, &victimBatch); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, k := range bucketKeys(t, store, cfg.Bucket) {
		if strings.HasPrefix(b+k, victimPrefix) {
			listed = append(listed, b+k)
		}
	}
	trace := victimPrefix + "chunks/000000.json"
	if !slices.Contains(listed, trace) {
		t.Fatalf("the victim wrote no %s: %v", trace, listed)
	}
	secrets := []string{"matter-acme-merger", victim.RunID, victim.FirstRunID, "matter-acme-nightly"}
	before, calls := bucketKeys(t, store, cfg.Bucket), len(d.Simulator.Calls())

	qa := func(in api.DocumentQAInput) api.DocumentQAInput {
		in.Question, in.Options = "What did the memory say?", opts
		return in
	}
	for i, tt := range []struct {
		name, workflow string
		in             any
	}{
		{"the victim's chunk trace as the document", api.DocumentQAName, qa(api.DocumentQAInput{Document: trace})},
		{"its result as the document", api.DocumentQAName, qa(api.DocumentQAInput{Document: victim.ResultURI})},
		{"its trace as a corpus member", api.DocumentQAName, qa(api.DocumentQAInput{Documents: []string{doc, trace}})},
		{"every object listed under its prefix as a corpus", api.DocumentQAName, qa(api.DocumentQAInput{Documents: listed})},
		{"its result reviewed", api.ReviewDocumentName, api.ReviewInput{Document: victim.ResultURI, Options: opts,
			Questions: []api.ReviewQuestion{{ID: "q", Question: "What was the answer?"}}}},
		{"its batch's results.jsonl as a manifest", api.BatchQAName, api.BatchQAInput{Manifest: victimBatch.ReportPrefix + "results.jsonl", Options: opts}},
		{"its batch's report to compare with", api.BatchQAName, api.BatchQAInput{Manifest: manifest, Options: opts, CompareWith: victimBatch.ReportPrefix}},
		{"a claim of the bucket's reports/", api.DocumentQAName, qa(api.DocumentQAInput{Document: doc, OutputPrefix: b + "reports/"})},
		{"a claim above its claim", api.DocumentQAName, qa(api.DocumentQAInput{Document: doc, OutputPrefix: b + "team-a/"})},
		{"a claim inside its claim", api.DocumentQAName, qa(api.DocumentQAInput{Document: doc, OutputPrefix: victimPrefix + "mine/"})},
		{"a claim in checkpoints/", api.DocumentQAName, qa(api.DocumentQAInput{Document: doc, OutputPrefix: b + "checkpoints/abc/"})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := startAs(t, c, fmt.Sprintf("attacker-%d", i), tt.workflow, tt.in).Get(ctx, nil)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden {
				t.Fatalf("error = %v, want %s", err, api.ErrForbidden)
			}
			for _, s := range secrets {
				if s != "" && strings.Contains(err.Error(), s) {
					t.Errorf("the refusal names the victim's %s: %v", s, err)
				}
			}
			t.Logf("%s", appErr.Message())
		})
	}
	if n := len(d.Simulator.Calls()) - calls; n != 0 {
		t.Errorf("the attacks made %d model calls", n)
	}
	if after := bucketKeys(t, store, cfg.Bucket); !slices.Equal(after, before) {
		t.Errorf("the attacks wrote to S3: %d keys before, %d after", len(before), len(after))
	}
}

func mustParse(t *testing.T, uri string) s3store.Location {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestReusedMemoryCarriesTheReadersNames: two corpora with the same text,
// one client's under clientA-merger/, another's under clientB/. The
// second reuses the first's memory checkpoints and reads no chunk, and yet
// its result, whether through the Go client or `starter ask`, cites its
// own documents and names neither the first client's documents nor its
// workflow or runs.
func TestReusedMemoryCarriesTheReadersNames(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	c := clitest.Dial(t)
	_, store := clitest.Store(t)
	ctx := context.Background()
	// The same text under both clients' names (docgen's needle, same seed).
	var docsA, docsB []string
	for i, name := range []string{"notes.txt", "annex.txt"} {
		docsA = append(docsA, clitest.PutDoc(t, "clientA-merger/"+name, 2000, uint64(11+i)))
		docsB = append(docsB, clitest.PutDoc(t, "clientB/"+name, 2000, uint64(11+i)))
	}
	for i := range docsA {
		a, _ := store.ReadAll(ctx, mustParse(t, docsA[i]))
		bb, _ := store.ReadAll(ctx, mustParse(t, docsB[i]))
		if string(a) != string(bb) || len(a) == 0 {
			t.Fatal("the two clients' texts differ")
		}
	}
	opts := api.ModelOptions{ChunkTokens: 1000}
	var first api.DocumentQAResult
	if err := startAs(t, c, "matter-acme-merger", api.DocumentQAName, api.DocumentQAInput{Documents: docsA, Question: docgen.Question,
		Options: opts}).Get(ctx, &first); err != nil {
		t.Fatal(err)
	}
	if len(first.Evidence) == 0 || !slices.Contains(docsA, first.Evidence[0].Document) {
		t.Fatalf("client A's reading has evidence %+v, want it to cite its documents", first.Evidence)
	}
	var second api.DocumentQAResult
	if err := startAs(t, c, "clientb-question", api.DocumentQAName, api.DocumentQAInput{Documents: docsB, Question: docgen.Question,
		Options: opts}).Get(ctx, &second); err != nil {
		t.Fatal(err)
	}
	if second.ChunksReused != second.Chunks || second.ReusedReading != api.ReusedEarlierReading || second.ReusedFrom != nil {
		t.Errorf("client B: %d of %d chunks reused, reading %q, from %+v; want all, from an earlier reading, named to nobody",
			second.ChunksReused, second.Chunks, second.ReusedReading, second.ReusedFrom)
	}
	if len(second.Evidence) == 0 || len(second.AnswerSources) == 0 {
		t.Fatalf("client B: evidence %+v, answer_sources %+v; want them, rebuilt", second.Evidence, second.AnswerSources)
	}
	for _, e := range second.Evidence {
		if !slices.Contains(docsB, e.Document) {
			t.Errorf("client B's evidence at chunk %d cites %q, want one of %v", e.Chunk, e.Document, docsB)
		}
	}
	for _, s := range second.AnswerSources {
		if !slices.Contains(docsB, s.Document) {
			t.Errorf("client B's answer_sources cite %q, want one of %v", s.Document, docsB)
		}
	}
	secrets := []string{"clientA-merger", "matter-acme-merger", first.RunID, first.FirstRunID}
	check := func(what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s names client A's %s:\n%s", what, s, out)
			}
		}
	}
	data, _ := json.Marshal(second)
	check("client B's result", string(data))
	if stored, err := store.ReadAll(ctx, mustParse(t, second.ResultURI)); err != nil {
		t.Fatal(err)
	} else {
		check("client B's result.json", string(stored))
	}
	out, stderr, err := clitest.RunCLI(t, "ask", "--doc", docsB[0], "--doc", docsB[1], "--question", docgen.Question, "--chunk-tokens", "1000")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, stderr)
	}
	check("starter ask", out+stderr)
	if !strings.Contains(out, "from an earlier reading of the same text") {
		t.Errorf("starter ask does not say where its reused chunks came from:\n%s", out)
	}
}

// TestNightlyBatchCompletesAfterASquatAttempt: a schedule's report prefix
// is the schedule's from `schedule create` on. Another caller then tries
// to claim reports/, the schedule's prefix and its next dated prefix,
// and to run a dated batch there of its own: all refused, nothing
// written. The schedule's runs complete under their plain dated prefixes,
// and the second compares with the first.
func TestNightlyBatchCompletesAfterASquatAttempt(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	const id = "e2e-squat-nightly"
	c := clitest.Dial(t)
	t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background()) })
	cfg, store := clitest.Store(t)
	ctx := context.Background()
	b := "s3://" + cfg.Bucket + "/"
	prefix := b + "reports/nightly/"
	doc := clitest.PutDoc(t, "squat-e2e/doc.txt", 2000, 31)
	manifest := filepath.Join(t.TempDir(), "nightly.jsonl")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`{"id":"q","document":%q,"question":%q}`+"\n", doc, docgen.Question)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := clitest.RunCLI(t, "schedule", "create", "--id", id, "--manifest", manifest, "--every", "24h",
		"--report-prefix", prefix, "--chunk-tokens", "2000"); err != nil {
		t.Fatalf("schedule create: %v\n%s", err, stderr)
	}
	// A second schedule may not take the prefix either.
	if _, _, err := clitest.RunCLI(t, "schedule", "create", "--id", id+"-2", "--manifest", manifest, "--every", "24h", "--report-prefix", prefix); err == nil ||
		cli.ExitCode(err) != cli.ExitBadInput || !strings.Contains(err.Error(), "--report-prefix") {
		t.Errorf("a second schedule on the prefix: %v (exit %d), want exit %d naming --report-prefix", err, cli.ExitCode(err), cli.ExitBadInput)
	}

	before := bucketKeys(t, store, cfg.Bucket)
	next := time.Now().UTC().Add(time.Second).Format(api.DatedReportLayout)
	for i, in := range []any{
		api.DocumentQAInput{Document: doc, Question: docgen.Question, OutputPrefix: b + "reports/"},
		api.DocumentQAInput{Document: doc, Question: docgen.Question, OutputPrefix: prefix},
		api.DocumentQAInput{Document: doc, Question: docgen.Question, OutputPrefix: prefix + next + "/"},
		api.BatchQAInput{Manifest: b + "squat-e2e/none.jsonl", ReportPrefix: prefix, DatedReport: true},
	} {
		name := api.DocumentQAName
		if _, ok := in.(api.BatchQAInput); ok {
			name = api.BatchQAName
		}
		err := startAs(t, c, fmt.Sprintf("squatter-%d", i), name, in).Get(ctx, nil)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden || strings.Contains(err.Error(), id) {
			t.Errorf("squat %d: error = %v, want %s naming no schedule", i, err, api.ErrForbidden)
		}
	}
	if after := bucketKeys(t, store, cfg.Bucket); !slices.Equal(after, before) {
		t.Errorf("the squats wrote to S3: %d keys before, %d after", len(before), len(after))
	}

	trigger := func() api.BatchQAResult {
		t.Helper()
		out, stderr, err := clitest.RunCLI(t, "schedule", "trigger", id, "--wait", "--json")
		if err != nil {
			d, _, _ := clitest.RunCLI(t, "schedule", "describe", id, "--json")
			t.Fatalf("schedule trigger --wait: %v\n%s\n%s", err, stderr, d)
		}
		var res api.BatchQAResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("trigger --json printed %q: %v", out, err)
		}
		folder, ok := strings.CutPrefix(res.ReportPrefix, prefix)
		if _, err := time.Parse(api.DatedReportLayout+"/", folder); !ok || err != nil || res.Failed != 0 {
			t.Fatalf("the scheduled batch: %+v; want its report under %s<date>/, no item failed", res, prefix)
		}
		return res
	}
	first := trigger()
	// Temporal names a scheduled run by its second, and the dated folder
	// is the second it started: the next trigger waits for the next one.
	started, _ := time.Parse(api.DatedReportLayout+"/", strings.TrimPrefix(first.ReportPrefix, prefix))
	clitest.Eventually(t, "the second after the first run's", func() (bool, string) {
		return time.Now().After(started.Add(time.Second)), time.Now().String()
	})
	second := trigger()
	if second.Changes == nil || second.Changes.PreviousReport != first.ReportURI {
		t.Errorf("the second run compared with %+v, want the first run's report %s", second.Changes, first.ReportURI)
	}
}

// TestNotifyURLIsNoPortScanner: a batch's notify_url pointed at a port of
// the worker's own machine, on a worker that allows no loopback address
// (the default). The port is never reached; the batch completes with
// notify "failed", and nothing in its history says what the port is.
func TestNotifyURLIsNoPortScanner(t *testing.T) {
	clitest.Stack(t)
	t.Setenv("MEMAGENT_NOTIFY_ALLOW_NETS", "")
	clitest.StartWorker(t)
	c := clitest.Dial(t)
	cfg, store := clitest.Store(t)
	ctx := context.Background()
	var hits atomic.Int32
	port := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer port.Close()
	doc := clitest.PutDoc(t, "notify-e2e/doc.txt", 1000, 41)
	manifest := "s3://" + cfg.Bucket + "/notify-e2e/m.jsonl"
	if err := store.Put(ctx, mustParse(t, manifest), []byte(fmt.Sprintf(`{"id":"q","document":%q,"question":%q}`+"\n", doc, docgen.Question)), ""); err != nil {
		t.Fatal(err)
	}
	run := startAs(t, c, "port-scan", api.BatchQAName, api.BatchQAInput{Manifest: manifest, NotifyURL: port.URL + "/"})
	var res api.BatchQAResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Notify != api.NotifyFailed || hits.Load() != 0 {
		t.Errorf("notify %q, %d requests reached the port; want failed, none", res.Notify, hits.Load())
	}
	it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f := ev.GetActivityTaskFailedEventAttributes().GetFailure(); f != nil {
			msg := f.GetMessage()
			for _, leak := range []string{"405", "answered", "refused", "Method Not Allowed"} {
				if strings.Contains(strings.ReplaceAll(msg, port.URL, "HOST"), leak) {
					t.Errorf("the history tells the caller %q: %s", leak, msg)
				}
			}
			t.Logf("what the caller sees: %s", msg)
		}
	}
}
