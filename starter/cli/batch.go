package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3client"
	"github.com/memagent/memagent/memclient"
)

// uploadManifest returns the s3:// URI of a manifest for BatchQA. An
// s3://bucket/key manifest is checked to exist. A local file (JSON Lines or
// MemAgent JSON, detected from its first byte) is read once, streaming, to
// check every item (the errors name the line or item number) and hash it,
// then uploaded under its SHA-256, s3://<bucket>/manifests/sha256/<hex>/<name>,
// unless that object is there already: uploading the same file twice is
// free, and every run started from it reads the same bytes.
func uploadManifest(ctx context.Context, store *s3client.Store, bucket string, createBucket bool, path string) (string, error) {
	if strings.HasPrefix(path, "s3://") {
		loc, err := s3client.ParseURI(path)
		if err != nil {
			return "", badRequest(fmt.Errorf("manifest: %w", err))
		}
		info, err := store.Head(ctx, loc)
		if errors.Is(err, s3client.ErrNotFound) {
			return "", badRequest(fmt.Errorf("manifest %s does not exist: check the bucket and key", path))
		}
		if err != nil {
			return "", fmt.Errorf("manifest %s: %w", path, err)
		}
		if info.Size == 0 {
			return "", badRequest(fmt.Errorf("manifest %s is empty: it has no items", path))
		}
		return path, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", badRequest(fmt.Errorf("manifest: %w", err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	if st.IsDir() {
		return "", badRequest(fmt.Errorf("manifest %s is a directory: pass a .jsonl or MemAgent .json file", path))
	}
	h := sha256.New()
	if _, err := checkManifest(io.TeeReader(f, h), ""); err != nil {
		return "", badRequest(fmt.Errorf("manifest %s: %w", path, err))
	}
	// The check may stop before the end (after the closing bracket); hash
	// whatever is left too.
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read manifest %s: %w", path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	loc := s3client.Location{Bucket: bucket, Key: "manifests/sha256/" + sum + "/" + s3client.SafeName(filepath.Base(path))}
	if _, err := store.Head(ctx, loc); err == nil {
		return loc.String(), nil
	}
	if err := store.EnsureBucket(ctx, bucket, createBucket); err != nil {
		return "", s3client.BucketError(bucket, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if err := store.PutReader(ctx, loc, f, st.Size(), manifestContentType(path)); err != nil {
		return "", fmt.Errorf("upload manifest: %w", err)
	}
	return loc.String(), nil
}

func manifestContentType(path string) string {
	if strings.HasSuffix(strings.ToLower(path), ".jsonl") {
		return "application/x-ndjson"
	}
	return "application/json"
}

// checkManifest reads a whole manifest and returns its item count, or the
// first item errors (up to ten) joined in one error.
func checkManifest(r io.Reader, format string) (int, error) {
	return report.CheckManifest(r, format)
}

// startBatch checks in and starts a BatchQA run on taskQueue under the
// workflow id id; an empty id derives memagent-batch-<name>-<UTC time>
// (memclient.BatchWorkflowID). An id already in use is an error (a batch is
// never joined by accident).
func startBatch(ctx context.Context, c client.Client, taskQueue, id string, in api.BatchQAInput) (client.WorkflowRun, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	run, err := memclient.New(c, memclient.Options{TaskQueue: taskQueue}).StartBatch(ctx, in, memclient.StartOptions{ID: id})
	var taken *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &taken) && id != "":
		return nil, fmt.Errorf("start batch: workflow id %s is taken: pick another --id", id)
	case err != nil:
		return nil, err
	}
	return c.GetWorkflow(ctx, run.ID, run.RunID), nil
}

// awaitBatch waits for the BatchQA run with workflow id id (its latest run,
// across continue-as-new) and returns its result. When w is not nil it
// prints the batch's progress there: redrawn in place on a terminal,
// otherwise a line per change at most every 5 seconds.
func awaitBatch(ctx context.Context, c client.Client, namespace, id string, budget *api.Budget, w io.Writer) (*api.BatchQAResult, error) {
	stop := func() {}
	if w != nil {
		stop = watchRun(ctx, readerFor(c, namespace, api.BatchQAName, id), newProgressView(w, isTerminal(w)))
	}
	var res api.BatchQAResult
	if err := awaitBudgeted(ctx, c, id, budget != nil, stop, &res, w); err != nil {
		return nil, err
	}
	return &res, nil
}

// reportReader is the part of the store readBatchReport needs.
type reportReader interface {
	ReadAll(ctx context.Context, loc s3client.Location) ([]byte, error)
}

// readBatchReport reads a batch's report.json from its s3:// URI
// (BatchQAResult.ReportURI).
func readBatchReport(ctx context.Context, store reportReader, uri string) (*api.BatchReport, error) {
	loc, err := s3client.ParseURI(uri)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	data, err := store.ReadAll(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", uri, err)
	}
	var rep api.BatchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("decode report %s: %w", uri, err)
	}
	return &rep, nil
}

// runBatchAndReport starts a BatchQA run for in on the session's task
// queue, waits for it with progress on s.progress (if any) and reads its
// report.
func runBatchAndReport(ctx context.Context, s *session, in api.BatchQAInput) (*api.BatchQAResult, *api.BatchReport, error) {
	run, err := startBatch(ctx, s.temporal, s.cfg.TaskQueue, "", in)
	if err != nil {
		return nil, nil, err
	}
	return s.followBatch(ctx, run.GetID(), in.Budget)
}

// followBatch shows a started batch's progress until it ends, then reads its
// report.json.
func (s *session) followBatch(ctx context.Context, id string, budget *api.Budget) (*api.BatchQAResult, *api.BatchReport, error) {
	fmt.Fprintf(s.progressOut(), "started batch %s\n", id)
	res, err := awaitBatch(ctx, s.temporal, s.cfg.TemporalNamespace, id, budget, s.progress)
	if err != nil {
		return nil, nil, err
	}
	rep, err := readBatchReport(ctx, s.store, res.ReportURI)
	if err != nil {
		return res, nil, err
	}
	return res, rep, nil
}

func bindBatch(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	manifest := fs.String("manifest", "", "manifest: a local file or s3://bucket/key, JSON Lines or MemAgent JSON (required)")
	format := fs.String("format", "", `manifest format: "jsonl" or "memagent"; default detected from the first byte`)
	concurrency := fs.Int("concurrency", 0, fmt.Sprintf("DocumentQA runs at once (0 = twice the model pool's capacity as the worker reports it, at most %d; %d when it does not say)", api.MaxDefaultWindow, api.DefaultBatchConcurrency))
	var sched api.BatchQAInput
	schedulingFlags(fs, &sched.Priority, &sched.FairnessKey, &sched.FairnessWeight, api.PriorityBatch, "the batch")
	name := fs.String("name", "", "batch name, in the report and the MemagentBatch search attribute; default the workflow id")
	id := fs.String("id", "", "workflow id of the batch; default memagent-batch-<name>-<time>")
	prefix := fs.String("report-prefix", "", "s3:// prefix of the report; default s3://<bucket>/batches/<workflow id>/")
	dated := fs.Bool("dated", false, "put the report under a folder named after the batch's UTC start time")
	chunk := fs.Int("chunk-tokens", 0, "tokens per chunk (0: the default, 5000)")
	var ocr api.ModelOptions
	ocrFlags(fs, &ocr)
	reuse := fs.String("reuse", api.ReuseAuto, `"auto": an item answered before is reused, and each other item starts from the deepest memory checkpoint of an earlier reading of its chunks, except with --samples above 1, where every sample reads every chunk in its own run; "none": nothing is reused, every item reads every chunk; "always": as auto, --samples too (their rollouts then lack the turns they did not read)`)
	samples := fs.Int("samples", 0, fmt.Sprintf("answer each item this many times, independently, as a rollout group (0 = 1, at most %d); see starter export rollouts", api.MaxSamples))
	temperature := fs.Float64("temperature", -1, "sampling temperature within [0, 2] (default the options' default, 0.7)")
	htmlOut := fs.String("html", "", "also save the report's HTML page to this local `file`, with the files it links in file_files/ beside it so that it works offline")
	asJSON := outputFlag(cmd, "print the result and the report as one JSON object")
	noWait := fs.Bool("no-wait", false, "start the batch and print its workflow id, without waiting")
	budget := budgetFlags(fs, "the batch")
	compare := fs.String("compare-with", "", `compare the report with an earlier one, item by item (changes.json, a "What changed" section): its s3:// report prefix, or "previous" with --dated and --report-prefix (the latest earlier dated report there)`)
	gate := validationGateFlags(fs)
	notify := fs.String("notify-url", "", "POST the change summary as JSON to this http(s) `URL` once the report is written (retried for up to an hour); only its scheme and host are ever shown")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		if len(args) > 0 {
			return badRequest(fmt.Errorf("unexpected arguments %q: batch takes only flags", args))
		}
		if *manifest == "" {
			return badRequest(errors.New("no manifest: pass --manifest FILE.jsonl, a MemAgent .json file, or s3://bucket/key"))
		}
		if *concurrency < 0 || *concurrency > api.MaxBatchConcurrency {
			return badRequest(fmt.Errorf("--concurrency (%d) must be within [1, %d], or 0 for the default", *concurrency, api.MaxBatchConcurrency))
		}
		if *chunk < 0 {
			return badRequest(fmt.Errorf("--chunk-tokens (%d) must be positive (0 = the default)", *chunk))
		}
		in := api.BatchQAInput{
			Format: *format, Name: *name, Concurrency: *concurrency, ReportPrefix: *prefix, DatedReport: *dated,
			Options:     api.ModelOptions{Model: cfg.Model, ChunkTokens: *chunk, OCR: ocr.OCR, OCRLanguages: ocr.OCRLanguages},
			Samples:     *samples,
			CompareWith: *compare, NotifyURL: *notify,
			Reuse:    *reuse,
			Priority: sched.Priority, FairnessKey: sched.FairnessKey, FairnessWeight: sched.FairnessWeight,
		}
		if *temperature >= 0 {
			t := float32(*temperature)
			in.Options.Temperature = &t
		}
		if in.Budget, err = budget(); err != nil {
			return err
		}
		if in.Validation, err = gate(); err != nil {
			return badRequest(err)
		}
		// Everything but the manifest is checked before anything is uploaded.
		in.Manifest = "s3://check/manifest"
		if err := in.Validate(); err != nil {
			return badRequest(err)
		}
		ctx, s, end, err := startCommand(ctx, cfg, stderr, *asJSON, "starter batch")
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		manifestPath, cleanup, err := s.localizeManifest(ctx, *manifest)
		if err != nil {
			return err
		}
		defer cleanup()
		if in.Manifest, err = uploadManifest(ctx, s.store, cfg.Bucket, cfg.CreateBucket, manifestPath); err != nil {
			return err
		}
		run, err := startBatch(ctx, s.temporal, cfg.TaskQueue, *id, in)
		if err != nil {
			return err
		}
		if *noWait {
			if *asJSON {
				return printJSON(stdout, map[string]string{"workflow_id": run.GetID(), "run_id": run.GetRunID(), "manifest": in.Manifest})
			}
			fmt.Fprintf(stdout, "started batch %s (manifest %s)\nfollow it with: starter runs --batch %s\n", run.GetID(), in.Manifest, orName(in.Name, run.GetID()))
			return nil
		}
		res, rep, err := s.followBatch(ctx, run.GetID(), in.Budget)
		if err != nil {
			return err
		}
		var saved savedPage
		if *htmlOut != "" {
			if saved, err = savePage(ctx, s.store, rep.HTMLURI, *htmlOut); err != nil {
				return err
			}
		}
		if *asJSON {
			if err := printJSON(stdout, struct {
				Result *api.BatchQAResult `json:"result"`
				Report *api.BatchReport   `json:"report"`
			}{res, rep}); err != nil {
				return err
			}
		} else {
			printBatchReport(stdout, res, rep)
			if *htmlOut != "" {
				fmt.Fprintf(stdout, "Saved:     %s\n", saved)
			}
		}
		if res.Failed > 0 {
			return &itemsFailed{failed: res.Failed, of: res.Items * max(res.Samples, 1), report: res.HTMLURI}
		}
		return nil
	}
}

// itemsFailed is a batch that finished with failed items: exit 1, so that
// a script notices, after the report (and the JSON) has been printed.
type itemsFailed struct {
	failed, of int
	report     string
}

func (e *itemsFailed) Error() string {
	return fmt.Sprintf("%d of %d items failed: see the report (%s)", e.failed, e.of, e.report)
}

func (*itemsFailed) resultPrinted() {}

// resultPrinted is an error of a command that printed its result first
// (a batch with failed items, an export that left samples out): --json
// prints no failure object after it.
type resultPrinted interface{ resultPrinted() }

func orName(name, id string) string {
	if name != "" {
		return name
	}
	return id
}

// printBatchReport prints the overall aggregate and where the report is.
// rep, report.json, may be nil: the result has the aggregate and the
// report's prefix, under which its files have fixed names.
func printBatchReport(w io.Writer, res *api.BatchQAResult, rep *api.BatchReport) {
	name, model, o := res.Name, res.Model, res.Overall
	html := res.HTMLURI
	results := res.ReportPrefix + api.ReportResultsName
	csv := res.ReportPrefix + api.ReportCSVName
	if rep != nil {
		name, model, o = rep.Name, rep.Model, rep.Overall
		html, results, csv = rep.HTMLURI, rep.ResultsURI, rep.CSVURI
	}
	fmt.Fprintf(w, "Batch:     %s (%s, %d run(s))\n", name, res.WorkflowID, res.Runs)
	fmt.Fprintf(w, "Items:     %d: %d answered, %d reused, %d failed\n", o.Items, o.Answered, o.Reused, o.Failed)
	if o.NotFound > 0 {
		fmt.Fprintf(w, "Grounding: %d answer(s) not found in their document\n", o.NotFound)
	}
	if o.Scored > 0 {
		fmt.Fprintf(w, "Scores:    exact %.3f · substring %.3f · F1 %.3f (over %d items with gold answers)\n",
			o.ExactMatch, o.SubstringMatch, o.F1, o.Scored)
	} else {
		fmt.Fprintln(w, "Scores:    none (no item has gold answers)")
	}
	if g := res.Groups; g != nil && g.Scored > 0 {
		fmt.Fprintf(w, "Groups:    %d samples per item · substring mean %.3f best %.3f · F1 mean %.3f best %.3f (over %d items)\n",
			g.Samples, g.MeanSubstringMatch, g.BestSubstringMatch, g.MeanF1, g.BestF1, g.Scored)
	}
	fmt.Fprintf(w, "Model:     %s, %d calls, %d prompt + %d completion tokens\n", orDash(model), o.Usage.Calls, o.Usage.PromptTokens, o.Usage.CompletionTokens)
	if c := res.Changes; c != nil {
		since := "no previous report"
		if c.PreviousReport != "" {
			since = "since " + c.Since.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "Changes:   %s: %d new, %d changed, %d unchanged, %d removed, %d failed (%s)\n",
			since, c.New, c.Changed, c.Unchanged, c.Removed, c.Failed, c.ChangesURI)
	}
	if res.Notify != "" {
		fmt.Fprintf(w, "Notify:    %s\n", res.Notify)
	}
	if v := res.Validation; v != nil {
		fmt.Fprintf(w, "Validation: %s\n", v.Text())
	}
	fmt.Fprintf(w, "Report:    %s\n", res.ReportURI)
	fmt.Fprintf(w, "Page:      %s\n", html)
	fmt.Fprintf(w, "Results:   %s (CSV %s)\n", results, csv)
}
