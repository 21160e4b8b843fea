package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/memclient"
)

func TestPluginOnPlainWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := sharedStack(t)
	opts := st.options()
	const taskQueue = "plugin-e2e"
	docURI := st.doc
	c := st.dial(ctx, t, nil)

	t.Run("ask", func(t *testing.T) {
		p, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		w := worker.New(c, taskQueue, worker.Options{Plugins: []worker.Plugin{p}})
		if err := w.Start(); err != nil {
			t.Fatalf("Start: %v", err)
		}
		stopped := false
		defer func() {
			if !stopped {
				w.Stop()
			}
		}()
		if n := p.openPools(); n != 1 {
			t.Errorf("model pools open after start = %d, want 1", n)
		}

		mc := memclient.New(c, memclient.Options{TaskQueue: taskQueue})
		in := api.DocumentQAInput{
			// Every chunk read: no checkpoint of an earlier test run is used.
			Reuse:    api.ReuseNone,
			Document: docURI, Question: docgen.Question, GoldAnswers: []string{docgen.Answer},
			Options: api.ModelOptions{ChunkTokens: 2000},
		}
		res, err := mc.Ask(ctx, in)
		if err != nil {
			t.Fatalf("Ask: %v", err)
		}
		if res.Answer != docgen.Answer || res.Chunks < 3 {
			t.Fatalf("answer %q over %d chunks, want %q over several", res.Answer, res.Chunks, docgen.Answer)
		}
		if want := memclient.WorkflowID(in); res.WorkflowID != want {
			t.Errorf("workflow id = %s, want the derived %s", res.WorkflowID, want)
		}

		// The same request again is the finished run, not a new one.
		run, err := mc.Start(ctx, in, memclient.StartOptions{})
		if err != nil {
			t.Fatalf("Start again: %v", err)
		}
		if !run.Existing || run.ID != res.WorkflowID || run.RunID != res.RunID {
			t.Errorf("second start = %s/%s existing %v, want the finished %s/%s", run.ID, run.RunID, run.Existing, res.WorkflowID, res.RunID)
		}
		again, err := run.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if again.RunID != res.RunID || again.Answer != res.Answer {
			t.Errorf("second start's result = run %s answer %q, want run %s answer %q", again.RunID, again.Answer, res.RunID, res.Answer)
		}
		prog, err := mc.Progress(ctx, res.WorkflowID)
		if err != nil {
			t.Fatalf("Progress: %v", err)
		}
		if prog.Stage != api.StageDone || prog.ChunksDone != res.Chunks {
			t.Errorf("progress = %s %d/%d, want %s %d/%d", prog.Stage, prog.ChunksDone, prog.ChunksTotal, api.StageDone, res.Chunks, res.Chunks)
		}

		// The plugin registers the review and the batch too: a review of two
		// questions and a batch of three items, one of them on a missing
		// document, through the same worker.
		g, err := mc.Review(ctx, api.ReviewInput{Document: docURI, Options: in.Options, Questions: []api.ReviewQuestion{
			{Question: docgen.Question, GoldAnswers: []string{docgen.Answer}}, {ID: "other", Question: "Who mended the willow baskets?"},
		}})
		if err != nil {
			t.Fatalf("Review: %v", err)
		}
		if len(g.Rows) != 2 || g.Rows[0].Answer != docgen.Answer || g.Rows[1].ID != "other" || g.HTMLURI == "" {
			t.Errorf("review grid: %d rows, first answered %q, report %q", len(g.Rows), g.Rows[0].Answer, g.HTMLURI)
		}
		manifest := activities.Location{Bucket: opts.Bucket, Key: "plugin-e2e/manifest.jsonl"}
		st.put(ctx, t, manifest, `{"document": "`+docURI+`", "question": "`+docgen.Question+`", "answers": ["`+docgen.Answer+`"]}
{"document": "`+docURI+`", "question": "Who mended the willow baskets?"}
{"document": "s3://`+opts.Bucket+`/plugin-e2e/missing.txt", "question": "Who?"}
`)
		b, err := mc.Batch(ctx, api.BatchQAInput{Manifest: manifest.String(), Name: "plugin-e2e", Options: in.Options})
		if err != nil {
			t.Fatalf("Batch: %v", err)
		}
		if b.Items != 3 || b.Succeeded != 2 || b.Failed != 1 || b.Overall.ExactMatch != 1 || b.ReportURI == "" {
			t.Errorf("batch = %+v, want 3 items: 2 answered (the scored one exact), 1 failed, and a report", b)
		}

		w.Stop()
		stopped = true
		if n := p.openPools(); n != 0 {
			t.Errorf("model pools open after stop = %d, want 0", n)
		}
	})

	bad := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"empty bucket", func(o *Options) { o.Bucket = "" }, "the bucket is empty: set Options.Bucket (MEMAGENT_BUCKET)"},
		{"no model URL", func(o *Options) { o.ModelURLs = nil }, "no model server: set Options.ModelURLs (OPENAI_BASE_URL)"},
		{"model URL not a URL", func(o *Options) { o.ModelURLs = []string{"gpu-1:8000"} }, "model base URL: "},
		{"model server unreachable, no model named", func(o *Options) {
			o.ModelURLs, o.Model = []string{"http://127.0.0.1:1/v1"}, ""
		}, "set MEMAGENT_MODEL or check OPENAI_BASE_URL"},
		{"model not served", func(o *Options) { o.Model = "no-such-model" }, `model "no-such-model" is not served`},
		{"S3 unreachable", func(o *Options) { o.S3Endpoint = "http://127.0.0.1:1" }, "bucket memagent"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			bo := opts
			bo.StartTimeout = 20 * time.Second
			tc.edit(&bo)
			p, err := New(bo)
			if err != nil {
				t.Fatal(err)
			}
			w := worker.New(c, taskQueue+"-bad", worker.Options{Plugins: []worker.Plugin{p}})
			err = w.Start()
			if err == nil {
				w.Stop()
				t.Fatalf("Start succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "memagent plugin: ") {
				t.Errorf("Start error = %q, want one starting %q and containing %q", err, "memagent plugin: ", tc.want)
			}
			if n := p.openPools(); n != 0 {
				t.Errorf("model pools open after a failed start = %d, want 0", n)
			}
		})
	}
}
