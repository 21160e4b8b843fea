package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/workflows"
)

// maxReportedItemErrors bounds the item errors a manifest check lists.
const maxReportedItemErrors = 10

// uploadManifest returns the s3:// URI of a manifest for BatchQA. An
// s3://bucket/key manifest is checked to exist. A local file (JSON Lines or
// MemAgent JSON, detected from its first byte) is read once, streaming, to
// check every item (the errors name the line or item number) and hash it,
// then uploaded under its SHA-256, s3://<bucket>/manifests/sha256/<hex>/<name>,
// unless that object is there already: uploading the same file twice is
// free, and every run started from it reads the same bytes.
func uploadManifest(ctx context.Context, store *s3store.Store, bucket, path string) (string, error) {
	if strings.HasPrefix(path, "s3://") {
		loc, err := s3store.ParseURI(path)
		if err != nil {
			return "", fmt.Errorf("manifest: %w", err)
		}
		info, err := store.Head(ctx, loc)
		if errors.Is(err, s3store.ErrNotFound) {
			return "", fmt.Errorf("manifest %s does not exist: check the bucket and key", path)
		}
		if err != nil {
			return "", fmt.Errorf("manifest %s: %w", path, err)
		}
		if info.Size == 0 {
			return "", fmt.Errorf("manifest %s is empty: it has no items", path)
		}
		return path, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	if st.IsDir() {
		return "", fmt.Errorf("manifest %s is a directory: pass a .jsonl or MemAgent .json file", path)
	}
	h := sha256.New()
	if _, err := checkManifest(io.TeeReader(f, h), ""); err != nil {
		return "", fmt.Errorf("manifest %s: %w", path, err)
	}
	// The check may stop before the end (after the closing bracket); hash
	// whatever is left too.
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read manifest %s: %w", path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	loc := s3store.Location{Bucket: bucket, Key: "manifests/sha256/" + sum + "/" + sanitizeName(filepath.Base(path))}
	if _, err := store.Head(ctx, loc); err == nil {
		return loc.String(), nil
	}
	if err := store.EnsureBucket(ctx, bucket); err != nil {
		return "", err
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
// first item errors (up to maxReportedItemErrors) joined in one error.
func checkManifest(r io.Reader, format string) (int, error) {
	mr, err := report.NewManifestReader(r, format)
	if err != nil {
		return 0, err
	}
	var errs []string
	bad := 0
	for {
		_, err := mr.Next()
		var item *report.ManifestError
		switch {
		case err == io.EOF:
			if bad > 0 {
				return 0, itemErrors(errs, bad)
			}
			if mr.Items() == 0 {
				return 0, errors.New("manifest has no items")
			}
			return mr.Items(), nil
		case errors.As(err, &item):
			bad++
			if len(errs) < maxReportedItemErrors {
				errs = append(errs, item.Error())
			}
		case err != nil:
			errs = append(errs, err.Error())
			return 0, itemErrors(errs, bad+1)
		}
	}
}

func itemErrors(errs []string, bad int) error {
	msg := strings.Join(errs, "; ")
	if bad > len(errs) {
		msg += fmt.Sprintf("; and %d more", bad-len(errs))
	}
	return fmt.Errorf("%d bad item(s): %s", bad, msg)
}

// startBatch checks in and starts a BatchQA run on taskQueue under the
// workflow id id; an empty id derives memagent-batch-<name>-<UTC time>.
// An id already in use is an error (a batch is never joined by accident).
func startBatch(ctx context.Context, c client.Client, taskQueue, id string, in workflows.BatchQAInput) (client.WorkflowRun, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if id == "" {
		id = batchWorkflowID(in.Name, time.Now())
	}
	if taskQueue == "" {
		taskQueue = workflows.DefaultTaskQueue
	}
	name := in.Name
	if name == "" {
		name = id
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                taskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            fmt.Sprintf("batch %s · %s", name, in.Manifest),
		TypedSearchAttributes:                    workflows.BatchStartSearchAttributes(in, id),
	}, workflows.BatchQAName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	var invalid *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &started):
		return nil, fmt.Errorf("start batch: workflow id %s is taken: pick another --id", id)
	case errors.As(err, &invalid) && strings.Contains(strings.ToLower(invalid.Error()), "search attribute"):
		return nil, fmt.Errorf("start batch: %w: register memagent's search attributes in the namespace first: starter setup", err)
	case err != nil:
		return nil, fmt.Errorf("start batch: %w", err)
	}
	return run, nil
}

// batchWorkflowID is memagent-batch-<name>-<UTC time to the millisecond>,
// with the name cut to safe characters.
func batchWorkflowID(name string, now time.Time) string {
	id := "memagent-batch-"
	if name != "" {
		id += clipASCII(sanitizeName(name), 80) + "-"
	}
	return id + now.UTC().Format("20060102T150405.000Z")
}

func clipASCII(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// awaitBatch waits for the BatchQA run with workflow id id (its latest run,
// across continue-as-new) and returns its result. When w is not nil it
// prints the batch's progress there: redrawn in place on a terminal,
// otherwise a line per change at most every 5 seconds.
func awaitBatch(ctx context.Context, c client.Client, id string, w io.Writer) (*workflows.BatchQAResult, error) {
	run := c.GetWorkflow(ctx, id, "")
	stop := func() {}
	if w != nil {
		stop = watchBatch(ctx, c, id, w, isTerminal(w))
	}
	var res workflows.BatchQAResult
	err := run.Get(ctx, &res)
	stop()
	if err := runError(id, err); err != nil {
		return nil, err
	}
	return &res, nil
}

// watchBatch prints the batch's progress until stopped.
func watchBatch(ctx context.Context, c client.Client, id string, w io.Writer, tty bool) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		every, gap := 2*time.Second, 5*time.Second
		if tty {
			every, gap = time.Second, 0
		}
		var last string
		var lastAt time.Time
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if p, err := queryBatchProgress(ctx, c, id); err == nil {
				line := batchProgressLine(p)
				if line != last && time.Since(lastAt) >= gap {
					if tty {
						fmt.Fprintf(w, "\r\x1b[K%s", line)
					} else {
						fmt.Fprintln(w, line)
					}
					last, lastAt = line, time.Now()
				}
			}
			select {
			case <-ctx.Done():
				if tty && last != "" {
					fmt.Fprintln(w)
				}
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// queryBatchProgress runs BatchQA's progress query.
func queryBatchProgress(ctx context.Context, c client.Client, id string) (workflows.BatchProgress, error) {
	var p workflows.BatchProgress
	v, err := c.QueryWorkflow(ctx, id, "", workflows.ProgressQuery)
	if err != nil {
		return p, err
	}
	return p, v.Get(&p)
}

// batchProgressLine renders progress as one line, such as
// "running: 340/1000 done (16 running, 2 failed, 10 reused), run 1".
func batchProgressLine(p workflows.BatchProgress) string {
	if p.Items == 0 {
		return p.Stage + "…"
	}
	return fmt.Sprintf("%s: %d/%d done (%d running, %d answered, %d reused, %d failed), run %d",
		p.Stage, p.Done, p.Items, p.Running, p.Answered, p.Reused, p.Failed, p.Run)
}

// reportReader is the part of the store readBatchReport needs.
type reportReader interface {
	ReadAll(ctx context.Context, loc s3store.Location) ([]byte, error)
}

// readBatchReport reads a batch's report.json from its s3:// URI
// (BatchQAResult.ReportURI).
func readBatchReport(ctx context.Context, store reportReader, uri string) (*activities.BatchReport, error) {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	data, err := store.ReadAll(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", uri, err)
	}
	var rep activities.BatchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("decode report %s: %w", uri, err)
	}
	return &rep, nil
}

// runBatchAndReport starts a BatchQA run for in on the session's task
// queue, waits for it with progress on s.progress (if any) and reads its
// report.
func runBatchAndReport(ctx context.Context, s *session, in workflows.BatchQAInput) (*workflows.BatchQAResult, *activities.BatchReport, error) {
	run, err := startBatch(ctx, s.temporal, s.cfg.TaskQueue, "", in)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(s.progressOut(), "started batch %s\n", run.GetID())
	res, err := awaitBatch(ctx, s.temporal, run.GetID(), s.progress)
	if err != nil {
		return nil, nil, err
	}
	rep, err := readBatchReport(ctx, s.store, res.ReportURI)
	if err != nil {
		return res, nil, err
	}
	return res, rep, nil
}

func runBatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	manifest := fs.String("manifest", "", "manifest: a local file or s3://bucket/key, JSON Lines or MemAgent JSON (required)")
	format := fs.String("format", "", `manifest format: "jsonl" or "memagent"; default detected from the first byte`)
	concurrency := fs.Int("concurrency", workflows.DefaultBatchConcurrency, "DocumentQA runs at once")
	name := fs.String("name", "", "batch name, in the report and the MemagentBatch search attribute; default the workflow id")
	id := fs.String("id", "", "workflow id of the batch; default memagent-batch-<name>-<time>")
	prefix := fs.String("report-prefix", "", "s3:// prefix of the report; default s3://<bucket>/batches/<workflow id>/")
	dated := fs.Bool("dated", false, "put the report under a folder named after the batch's UTC start time")
	chunk := fs.Int("chunk-tokens", 0, "tokens per chunk (0: the default, 5000)")
	htmlOut := fs.String("html", "", "also save the report's HTML page to this local `file`")
	asJSON := fs.Bool("json", false, "print the result and the report as one JSON object")
	noWait := fs.Bool("no-wait", false, "start the batch and print its workflow id, without waiting")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: batch takes only flags", fs.Args())
	}
	if *manifest == "" {
		return errors.New("no manifest: pass --manifest FILE.jsonl, a MemAgent .json file, or s3://bucket/key")
	}
	if *concurrency < 1 || *concurrency > workflows.MaxBatchConcurrency {
		return fmt.Errorf("--concurrency (%d) must be within [1, %d]", *concurrency, workflows.MaxBatchConcurrency)
	}
	if *chunk < 0 {
		return fmt.Errorf("--chunk-tokens (%d) must be positive (0 = the default)", *chunk)
	}
	in := workflows.BatchQAInput{
		Format: *format, Name: *name, Concurrency: *concurrency, ReportPrefix: *prefix, DatedReport: *dated,
		Options: activities.ModelOptions{Model: cfg.Model, ChunkTokens: *chunk},
	}
	// Everything but the manifest is checked before anything is uploaded.
	in.Manifest = "s3://check/manifest"
	if err := in.Validate(); err != nil {
		return err
	}
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return err
	}
	s := &session{cfg: cfg, logger: cliLogger(stderr)}
	if tty := isTerminal(stderr); tty || !*asJSON {
		s.progress, s.progressTTY = stderr, tty
	}
	if err := s.connect(ctx); err != nil {
		return err
	}
	defer s.close()
	if in.Manifest, err = uploadManifest(ctx, s.store, cfg.Bucket, *manifest); err != nil {
		return err
	}
	run, err := startBatch(ctx, s.temporal, cfg.TaskQueue, *id, in)
	if err != nil {
		return err
	}
	if *noWait {
		if *asJSON {
			return json.NewEncoder(stdout).Encode(map[string]string{"workflow_id": run.GetID(), "run_id": run.GetRunID(), "manifest": in.Manifest})
		}
		fmt.Fprintf(stdout, "started batch %s (manifest %s)\nfollow it with: starter runs --batch %s\n", run.GetID(), in.Manifest, orName(in.Name, run.GetID()))
		return nil
	}
	fmt.Fprintf(s.progressOut(), "started batch %s\n", run.GetID())
	res, err := awaitBatch(ctx, s.temporal, run.GetID(), s.progress)
	if err != nil {
		return err
	}
	rep, err := readBatchReport(ctx, s.store, res.ReportURI)
	if err != nil {
		return err
	}
	if *htmlOut != "" {
		if err := saveObject(ctx, s.store, rep.HTMLURI, *htmlOut); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			Result *workflows.BatchQAResult `json:"result"`
			Report *activities.BatchReport  `json:"report"`
		}{res, rep})
	}
	printBatchReport(stdout, res, rep)
	return nil
}

func orName(name, id string) string {
	if name != "" {
		return name
	}
	return id
}

// saveObject copies an S3 object to a local file.
func saveObject(ctx context.Context, store *s3store.Store, uri, path string) error {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return err
	}
	data, err := store.ReadAll(ctx, loc)
	if err != nil {
		return fmt.Errorf("read %s: %w", uri, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("save %s: %w", uri, err)
	}
	return nil
}

// printBatchReport prints the overall aggregate and where the report is.
func printBatchReport(w io.Writer, res *workflows.BatchQAResult, rep *activities.BatchReport) {
	o := rep.Overall
	fmt.Fprintf(w, "Batch:     %s (%s, %d run(s))\n", rep.Name, res.WorkflowID, res.Runs)
	fmt.Fprintf(w, "Items:     %d: %d answered, %d reused, %d failed\n", o.Items, o.Answered, o.Reused, o.Failed)
	if o.Scored > 0 {
		fmt.Fprintf(w, "Scores:    exact %.3f · substring %.3f · F1 %.3f (over %d items with gold answers)\n",
			o.ExactMatch, o.SubstringMatch, o.F1, o.Scored)
	} else {
		fmt.Fprintln(w, "Scores:    none (no item has gold answers)")
	}
	fmt.Fprintf(w, "Model:     %s, %d calls, %d prompt + %d completion tokens\n", orDash(rep.Model), o.Usage.Calls, o.Usage.PromptTokens, o.Usage.CompletionTokens)
	fmt.Fprintf(w, "Report:    %s\n", res.ReportURI)
	fmt.Fprintf(w, "Page:      %s\n", rep.HTMLURI)
	fmt.Fprintf(w, "Results:   %s (CSV %s)\n", rep.ResultsURI, rep.CSVURI)
}
