package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/workflows"
)

func converterFrom(p *commonpb.Payload, v any) error {
	return converter.GetDefaultDataConverter().FromPayload(p, v)
}

func listJSON(t *testing.T, args ...string) []runRow {
	t.Helper()
	out, stderr, err := runCLI(t, append([]string{"runs", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("runs %v: %v\n%s", args, err, stderr)
	}
	var rows []runRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("runs --json printed %q: %v", out, err)
	}
	return rows
}

// TestOperatingRuns follows one run the way an operator would: findable by
// its document as soon as it is started, before any worker; watched to the
// end; listed by document, batch and status; and a failed run listed as
// failed.
func TestOperatingRuns(t *testing.T) {
	stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The dev stack registered the attributes; setup finds them all.
	out, stderr, err := runCLI(t, "setup")
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, stderr)
	}
	for name := range workflows.SearchAttributes() {
		if !strings.Contains(out, name) || strings.Contains(out, "added") {
			t.Errorf("setup on the dev stack printed\n%s\nwant %s already registered and nothing added", out, name)
		}
	}

	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{cfg: cfg.Client(), logger: testLogger(t)}
	if err := s.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	path, text := writeDoc(t, 20_000)
	chunks := len(chunkHashes(t, text, 2000))
	batch := "batch-" + time.Now().UTC().Format("150405.000000")
	run, err := s.start(ctx, askRequest{Doc: path, Question: demoQuestion, Golds: []string{demoAnswer}, Batch: batch,
		Options: api.ModelOptions{ChunkTokens: 2000}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	id := run.ID

	// No worker polls this test's task queue yet: what is visible now was
	// set at start.
	desc, err := s.temporal.DescribeWorkflow(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := desc.TypedSearchAttributes.GetKeyword(api.DocumentKey)
	if !strings.HasPrefix(doc, "s3://"+cfg.Bucket+"/documents/sha256/") {
		t.Fatalf("%s = %q, want the uploaded document's URI", api.AttrDocument, doc)
	}
	var opts api.ModelOptions
	var sha string
	if err := converterFrom(desc.Memo.GetFields()["model_options"], &opts); err != nil || opts.ChunkTokens != 2000 || opts.MemoryMaxTokens == 0 {
		t.Errorf("memo model_options = %+v (%v), want chunk_tokens 2000 and the defaults filled in", opts, err)
	}
	if err := converterFrom(desc.Memo.GetFields()["document_sha256"], &sha); err != nil || !strings.Contains(doc, sha) || len(sha) != 64 {
		t.Errorf("memo document_sha256 = %q (%v), want the sha256 in %s", sha, err, doc)
	}
	eventually(t, "the started run listed by its document", func() (bool, string) {
		rows := listJSON(t, "--document", doc)
		return len(rows) == 1 && rows[0].WorkflowID == id && rows[0].Status == api.StagePreparing, fmt.Sprintf("%+v", rows)
	})

	startWorker(t)
	out, stderr, err = runCLI(t, "watch", id)
	if err != nil {
		t.Fatalf("watch: %v\n%s", err, stderr)
	}
	t.Logf("watch %s:\n%s", id, out)
	if !strings.Contains(out, fmt.Sprintf("done: chunk %d/%d", chunks, chunks)) || !strings.Contains(out, "\nAnswer:   "+demoAnswer+"\n") ||
		!strings.Contains(out, "\nWorkflow: "+id+" ") || !strings.Contains(out, "\nResult:   s3://") {
		t.Errorf("watch printed\n%s\nwant the last state, done with %d/%d chunks, and what ask prints: the answer, the workflow and the result", out, chunks, chunks)
	}
	if lines := strings.Count(out, "\n"); lines > 20 {
		t.Errorf("watch printed %d lines off a terminal, want a few:\n%s", lines, out)
	}

	eventually(t, "the finished run listed as done", func() (bool, string) {
		rows := listJSON(t, "--document", doc, "--batch", batch, "--status", "done", "--question", demoQuestion)
		ok := len(rows) == 1 && rows[0].WorkflowID == id && rows[0].ChunksDone != nil && rows[0].ChunksTotal != nil &&
			*rows[0].ChunksDone == int64(chunks) && *rows[0].ChunksTotal == int64(chunks) && rows[0].Model != "" && rows[0].ExecutionStatus == "Completed"
		return ok, fmt.Sprintf("%+v", rows)
	})
	if rows := listJSON(t, "--batch", batch, "--status", "reading"); len(rows) != 0 {
		t.Errorf("runs --status reading listed %+v, want none", rows)
	}
	table, _, err := runCLI(t, "runs", "--batch", batch)
	if err != nil || !strings.Contains(table, id) || !strings.Contains(table, fmt.Sprintf("%d/%d", chunks, chunks)) || !strings.Contains(table, "WORKFLOW ID") {
		t.Errorf("runs --batch: %v\n%s", err, table)
	}

	// A run that fails says so, whoever started it.
	missing := "s3://" + cfg.Bucket + "/missing/" + batch + ".txt"
	failing, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: os.Getenv("MEMAGENT_TASK_QUEUE")},
		api.DocumentQAName, api.DocumentQAInput{Document: missing, Question: "q?"})
	if err != nil {
		t.Fatal(err)
	}
	if err := failing.Get(ctx, nil); err == nil {
		t.Fatal("the run of a missing document succeeded")
	}
	eventually(t, "the failed run listed as failed", func() (bool, string) {
		rows := listJSON(t, "--document", missing, "--status", "failed")
		return len(rows) == 1 && rows[0].WorkflowID == failing.GetID(), fmt.Sprintf("%+v", rows)
	})
}
