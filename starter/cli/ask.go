package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/cliflags"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3client"
	"github.com/memagent/memagent/internal/sniff"
	"github.com/memagent/memagent/internal/telemetry"
	"github.com/memagent/memagent/memclient"
)

// stringList is a repeatable flag.
type stringList = cliflags.StringList

// askRequest is one question about one document, as the CLI takes it.
type askRequest struct {
	// Doc is the one document asked about, or Docs the documents of a
	// corpus (local paths, s3:// URIs and prefixes).
	Doc  string
	Docs []string
	// Reuse is DocumentQAInput.Reuse.
	Reuse    string
	Question string
	Golds    []string
	Options  api.ModelOptions
	// Batch labels the run as one of a batch (the MemagentBatch search
	// attribute).
	Batch string
	// Fresh starts a new run even when the same request already completed.
	Fresh bool
	// Priority, FairnessKey and FairnessWeight schedule the run on a
	// shared GPU pool (DocumentQAInput's fields of the same names).
	Priority       int
	FairnessKey    string
	FairnessWeight float64
	// Budget bounds the run's calls and tokens; nil is no bound.
	Budget *api.Budget
}

// askFlags binds the flags shared by ask and demo.
func askFlags(fs *pflag.FlagSet, r *askRequest) func() error {
	chunk := fs.Int("chunk-tokens", api.DefaultChunkTokens, "tokens per chunk")
	mem := fs.Int("memory-tokens", api.DefaultMemoryMaxTokens, "memory budget in tokens")
	ans := fs.Int("answer-tokens", api.DefaultAnswerMaxTokens, "final answer budget in tokens")
	temp := fs.Float64("temperature", api.DefaultTemperature, "sampling temperature")
	topP := fs.Float64("top-p", api.DefaultTopP, "nucleus sampling top_p")
	fs.StringVar(&r.Options.Tokenizer, "tokenizer", api.DefaultTokenizer, "tokenizer used to cut chunks")
	fs.BoolVar(&r.Fresh, "fresh", false, "start a new run even if the same request already completed")
	fs.StringVar(&r.Reuse, "reuse", api.ReuseAuto, `"auto": start from the deepest memory checkpoint of an earlier reading of the same chunks with the same question and options; "none": read from the first chunk`)
	fs.StringVar(&r.Options.InvalidUTF8, "invalid-utf8", "", `bytes that are not UTF-8: "reject" the document (the default), or "replace" them with U+FFFD`)
	ocrFlags(fs, &r.Options)
	return func() error {
		if *chunk <= 0 {
			return fmt.Errorf("chunk_tokens (%d) must be positive: set --chunk-tokens", *chunk)
		}
		if *mem <= 0 || *ans <= 0 {
			return fmt.Errorf("--memory-tokens (%d) and --answer-tokens (%d) must be positive", *mem, *ans)
		}
		t, p := float32(*temp), float32(*topP)
		r.Options.ChunkTokens, r.Options.MemoryMaxTokens, r.Options.AnswerMaxTokens = *chunk, *mem, *ans
		r.Options.Temperature, r.Options.TopP = &t, &p
		if r.Reuse != api.ReuseAuto && r.Reuse != api.ReuseNone {
			return fmt.Errorf("--reuse is %q: set it to auto or none", r.Reuse)
		}
		return r.Options.Validate()
	}
}

// ocrFlags binds --ocr and --ocr-lang to o's OCR options.
func ocrFlags(fs *pflag.FlagSet, o *api.ModelOptions) {
	fs.StringVar(&o.OCR, "ocr", "", `which pages of a PDF are read by OCR on the worker: "auto" (the default) the scanned ones, "force" every page, "off" none`)
	fs.StringVar(&o.OCRLanguages, "ocr-lang", "", `languages OCR reads, Tesseract's codes joined by + (e.g. eng+deu; default eng)`)
}

// startCommand checks cfg, sets up telemetry with a root span called name
// (the root of one trace through the workflow, its activities, model calls
// and S3 requests) and connects to S3 and Temporal. Progress goes to stderr:
// a terminal gets the live bar even with --json, which goes to stdout;
// elsewhere asJSON keeps stderr quiet. end closes the connections, marks
// the span failed when err is not nil, and gives the spans a moment to
// reach a collector.
func startCommand(ctx context.Context, cfg clientconf.Config, stderr io.Writer, asJSON bool, name string) (_ context.Context, _ *session, end func(err error), _ error) {
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return ctx, nil, nil, err
	}
	logger := cliLogger(stderr)
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "memagent-starter", Logger: logger})
	if err != nil {
		return ctx, nil, nil, err
	}
	ctx, span := tel.TracerProvider.Tracer("github.com/memagent/memagent/starter").Start(ctx, name)
	s := &session{cfg: cfg, logger: logger}
	if tty := isTerminal(stderr); tty || !asJSON {
		s.progress, s.progressTTY = stderr, tty
	}
	end = func(err error) {
		s.close()
		if err != nil {
			span.SetStatus(codes.Error, name+" failed")
		}
		span.End()
		// A CLI waits a little for its spans to reach a collector, not long.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = tel.Shutdown(ctx)
	}
	if err := s.connect(ctx); err != nil {
		end(err)
		return ctx, nil, nil, err
	}
	return ctx, s, end, nil
}

func bindAsk(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	var req askRequest
	var golds stringList
	var docs docFlags
	fs.Var(&docs.values, "doc", docUsage)
	fs.StringVar(&req.Question, "question", "", "the question (required)")
	fs.Var(&golds, "answer", "a gold answer to score against (repeatable)")
	fs.StringVar(&req.Batch, "batch", "", "label the run as one of batch `ID` (list them with: starter runs --batch ID)")
	asJSON := outputFlag(cmd, "print one JSON object instead of text")
	timeout := fs.Duration("timeout", 0, "stop waiting after this long, with exit code 3 (the run goes on; starter watch follows it); 0 waits for the end, through Temporal outages")
	schedulingFlags(fs, &req.Priority, &req.FairnessKey, &req.FairnessWeight, api.PriorityQuestion, "the question")
	budget := budgetFlags(fs, "the run")
	finish := askFlags(fs, &req)
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		var asked []string
		if fs.Changed("question") {
			asked = []string{req.Question}
		}
		if err := strayArgs(cmd, args, docs.values, asked); err != nil {
			return err
		}
		req.Golds = golds
		req.Options.Model = cfg.Model
		if req.Budget, err = budget(); err != nil {
			return err
		}
		if err := finish(); err != nil {
			return badRequest(err)
		}
		// What can be checked without the services is checked before
		// connecting to them.
		if err := req.setDocs(&docs); err != nil {
			return err
		}
		if err := api.CheckQuestion(req.Question); err != nil {
			return badRequest(err)
		}
		if *timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		ctx, s, end, err := startWithDocument(ctx, cfg, stderr, *asJSON, "starter ask", req.localDocs(), req.Options.InvalidUTF8 == api.InvalidUTF8Replace)
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		res, err := s.ask(ctx, req)
		if err != nil {
			return err
		}
		return printResult(stdout, cfg, res, *asJSON)
	}
}

// startWithDocument is startCommand for a command about one document: a
// local document is checked before the command connects to anything, so
// that a missing, empty or unreadable file is bad input (exit 2) even when
// Temporal is down, and what the check learnt is kept for the upload.
func startWithDocument(ctx context.Context, cfg clientconf.Config, stderr io.Writer, asJSON bool, name string, docs []string, replaceInvalid bool) (context.Context, *session, func(error), error) {
	checked := map[string]localDocument{}
	for _, doc := range docs {
		if doc == "" || strings.HasPrefix(doc, "s3://") {
			continue
		}
		ld, err := checkLocalDocument(doc, replaceInvalid)
		if err != nil {
			return ctx, nil, nil, err
		}
		checked[doc] = ld
	}
	ctx, s, end, err := startCommand(ctx, cfg, stderr, asJSON, name)
	if err != nil {
		return ctx, nil, nil, err
	}
	s.checked, s.replaceInvalid = checked, replaceInvalid
	return ctx, s, end, nil
}

// session holds the clients one CLI command uses.
type session struct {
	cfg      clientconf.Config
	logger   *slog.Logger
	store    *s3client.Store
	temporal client.Client
	progress io.Writer // nil: no progress lines
	// replaceInvalid lets a document with invalid UTF-8 through, for the
	// worker to replace.
	replaceInvalid bool
	// checked are the local documents checked before the command
	// connected, by path.
	checked map[string]localDocument
	// progressTTY redraws progress in place on progress, a terminal.
	progressTTY bool
}

func (s *session) connect(ctx context.Context) error {
	store, err := s3client.New(ctx, s.cfg.S3())
	if err != nil {
		return err
	}
	s.store = store
	c, err := s.cfg.Dial(ctx, s.logger)
	if err != nil {
		return err
	}
	s.temporal = c
	return nil
}

func (s *session) close() {
	if s.temporal != nil {
		s.temporal.Close()
	}
}

// ask checks the request, uploads a local document, starts (or joins) the
// DocumentQA run and waits for its result.
func (s *session) ask(ctx context.Context, req askRequest) (*api.DocumentQAResult, error) {
	run, err := s.start(ctx, req)
	if err != nil {
		return nil, err
	}
	stopProgress := s.watch(ctx, run.ID)
	var res api.DocumentQAResult
	if err := awaitBudgeted(ctx, s.temporal, run.ID, req.Budget != nil, stopProgress, &res, s.progressOut()); err != nil {
		return nil, err
	}
	return &res, nil
}

// start checks the request, uploads a local document and starts the
// DocumentQA run through package memclient (its workflow id, reuse policy,
// summary, memo and search attributes), or joins the run of the same
// request.
func (s *session) start(ctx context.Context, req askRequest) (memclient.Run, error) {
	if err := api.CheckQuestion(req.Question); err != nil {
		return memclient.Run{}, badRequest(err)
	}
	if req.Doc == "" && len(req.Docs) == 0 {
		return memclient.Run{}, badRequest(errors.New("no document: pass --doc PATH or --doc s3://bucket/key"))
	}
	s.replaceInvalid = req.Options.InvalidUTF8 == api.InvalidUTF8Replace
	var sha string
	var uris []string
	in := api.DocumentQAInput{Question: req.Question, GoldAnswers: req.Golds, Options: req.Options, BatchID: req.Batch,
		Priority: req.Priority, FairnessKey: req.FairnessKey, FairnessWeight: req.FairnessWeight, Budget: req.Budget}
	var err error
	if len(req.Docs) > 0 {
		if uris, err = s.resolveDocuments(ctx, req.Docs); err != nil {
			return memclient.Run{}, err
		}
		in.Documents = uris
	} else if in.Document, sha, err = s.resolveDocument(ctx, req.Doc); err != nil {
		return memclient.Run{}, err
	}
	if req.Reuse == api.ReuseNone {
		in.Reuse = req.Reuse
	}
	if err := in.Validate(); err != nil {
		return memclient.Run{}, badRequest(err)
	}
	run, err := memclient.New(s.temporal, memclient.Options{TaskQueue: s.cfg.TaskQueue}).Start(ctx, in,
		memclient.StartOptions{Fresh: req.Fresh, Memo: documentMemo(sha)})
	if err != nil {
		return memclient.Run{}, err
	}
	if run.Existing {
		if err := s.joinable(ctx, run.ID); err != nil {
			return memclient.Run{}, err
		}
		fmt.Fprintf(s.progressOut(), "the same request is already running or done as %s; joining it (--fresh runs it again)\n", run.ID)
		return run, nil
	}
	fmt.Fprintf(s.progressOut(), "started %s\n", run.ID)
	return run, nil
}

func (s *session) progressOut() io.Writer {
	if s.progress == nil {
		return io.Discard
	}
	return s.progress
}

// watch shows the run's progress until stopped: a bar redrawn in place on
// a terminal, otherwise a line per change at most every few seconds.
func (s *session) watch(ctx context.Context, id string) func() {
	if s.progress == nil {
		return func() {}
	}
	return watchProgress(ctx, s.temporal, s.cfg.TemporalNamespace, id, newProgressView(s.progress, s.progressTTY))
}

func queryProgress(ctx context.Context, c client.Client, id string) (api.Progress, error) {
	var p api.Progress
	v, err := c.QueryWorkflow(ctx, id, "", api.ProgressQuery)
	if err != nil {
		return p, err
	}
	return p, v.Get(&p)
}

// convertedTypes are the content types of the formats the worker converts,
// for the upload.
var convertedTypes = map[string]string{
	sniff.FormatPDF:  "application/pdf",
	sniff.FormatZip:  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	sniff.FormatHTML: "text/html",
	// Email: its parts carry their own charsets, so it need not be UTF-8.
	sniff.FormatEmail: "message/rfc822",
	sniff.FormatMbox:  "application/mbox",
}

// sniffFile names a local file's format by its first bytes (sniff.Detect)
// and rewinds it.
func sniffFile(f *os.File) (string, error) {
	head := make([]byte, sniff.SniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	return sniff.Detect(head[:n]), nil
}

// localDocument is what checkLocalDocument learnt of a local file: its
// content hash, size and the media type to upload it with.
type localDocument struct {
	text        memagent.TextInfo
	contentType string
}

// checkLocalDocument checks, before anything is started or uploaded, that
// a local document exists and is text (UTF-8, unless replaceInvalid), PDF,
// DOCX or HTML (which the worker converts), and not empty. Its errors are
// bad input (exit 2).
func checkLocalDocument(doc string, replaceInvalid bool) (localDocument, error) {
	f, err := os.Open(doc)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return localDocument{}, badRequest(fmt.Errorf("document %s does not exist: check the path", doc))
		}
		return localDocument{}, badRequest(fmt.Errorf("document: %w", err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return localDocument{}, badRequest(fmt.Errorf("document: %w", err))
	}
	if st.IsDir() {
		return localDocument{}, badRequest(fmt.Errorf("document %s is a directory: pass a text file", doc))
	}
	format, err := sniffFile(f)
	if err != nil {
		return localDocument{}, fmt.Errorf("read document %s: %w", doc, err)
	}
	if msg := sniff.Unsupported(format, doc); msg != "" {
		return localDocument{}, badRequest(fmt.Errorf("document %s %s", doc, msg))
	}
	ld := localDocument{contentType: "text/plain; charset=utf-8"}
	var bad *memagent.InvalidUTF8Error
	if ct, ok := convertedTypes[format]; ok {
		// The worker converts it (ConvertDocument); upload it as it is.
		ld.contentType = ct
		ld.text, err = hashFile(f)
		if err == nil && ld.text.Bytes == 0 {
			err = memagent.ErrEmptyDocument
		}
	} else {
		ld.text, err = memagent.ScanText(f)
	}
	switch {
	case errors.Is(err, memagent.ErrEmptyDocument):
		return ld, badRequest(fmt.Errorf("document %s has no text (empty or only whitespace)", doc))
	case ld.contentType != "text/plain; charset=utf-8" && err != nil:
		return ld, fmt.Errorf("read document %s: %w", doc, err)
	case errors.As(err, &bad) && replaceInvalid:
		// The worker replaces the invalid bytes; upload the file as it is.
		if ld.text, err = hashFile(f); err != nil {
			return ld, fmt.Errorf("read document %s: %w", doc, err)
		}
	case errors.As(err, &bad):
		return ld, badRequest(fmt.Errorf("document %s is not UTF-8 text: invalid byte at offset %d; convert it to UTF-8 first, or pass --invalid-utf8 replace", doc, bad.Offset))
	case err != nil:
		return ld, fmt.Errorf("read document %s: %w", doc, err)
	}
	return ld, nil
}

// resolveDocument checks that the document exists and is text, PDF, DOCX
// or HTML (which the worker converts to text), uploading a
// local file to the bucket under its content hash. It returns the
// document's s3:// URI and, when known, its SHA-256: always for a local
// file, and for an object under the content-addressed upload prefix. A
// local file checked before the command connected (s.checked) is not read
// twice.
func (s *session) resolveDocument(ctx context.Context, doc string) (uri, sha string, err error) {
	if strings.HasPrefix(doc, "s3://") {
		loc, err := s3client.ParseURI(doc)
		if err != nil {
			return "", "", badRequest(err)
		}
		info, err := s.store.Head(ctx, loc)
		if errors.Is(err, s3client.ErrNotFound) {
			return "", "", badRequest(fmt.Errorf("document %s does not exist: check the bucket and key", doc))
		}
		if err != nil {
			return "", "", fmt.Errorf("document %s: %w", doc, err)
		}
		if info.Size == 0 {
			return "", "", badRequest(fmt.Errorf("document %s is empty", doc))
		}
		return doc, uploadedSHA256(loc.Key), nil
	}
	ld, ok := s.checked[doc]
	if !ok {
		if ld, err = checkLocalDocument(doc, s.replaceInvalid); err != nil {
			return "", "", err
		}
	}
	loc := s3client.Location{Bucket: s.cfg.Bucket, Key: "documents/sha256/" + ld.text.SHA256 + "/" + s3client.SafeName(filepath.Base(doc))}
	if _, err := s.store.Head(ctx, loc); err == nil {
		return loc.String(), ld.text.SHA256, nil
	}
	if err := s.store.EnsureBucket(ctx, s.cfg.Bucket, s.cfg.CreateBucket); err != nil {
		return "", "", s3client.BucketError(s.cfg.Bucket, err)
	}
	f, err := os.Open(doc)
	if err != nil {
		return "", "", fmt.Errorf("document: %w", err)
	}
	defer f.Close()
	if err := s.store.PutReader(ctx, loc, f, ld.text.Bytes, ld.contentType); err != nil {
		return "", "", fmt.Errorf("upload document: %w", err)
	}
	return loc.String(), ld.text.SHA256, nil
}

// joinable refuses to join a running run that no worker is polling for:
// waiting on it would wait forever. It says how to end it.
func (s *session) joinable(ctx context.Context, id string) error {
	resp, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil || resp.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil
	}
	tq := resp.GetExecutionConfig().GetTaskQueue().GetName()
	if tq == "" || !newDiagnoser(s.temporal, s.cfg.TemporalNamespace, id).noPollers(ctx, tq) {
		return nil
	}
	return fmt.Errorf("the same request is already running as %s, but no worker is polling its task queue %s: start one (go run ./worker with MEMAGENT_TASK_QUEUE=%s) and ask again, or end the run with starter cancel %s (starter terminate %s --reason ... without a worker)",
		id, tq, tq, id, id)
}

// uploadedSHA256 returns the SHA-256 in a key under the content-addressed
// upload prefix (documents/sha256/<hex>/<name>), or "".
func uploadedSHA256(key string) string {
	rest, ok := strings.CutPrefix(key, "documents/sha256/")
	if !ok {
		return ""
	}
	h, _, ok := strings.Cut(rest, "/")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return ""
	}
	return h
}

func clip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

func cliLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if v := os.Getenv("MEMAGENT_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// answerText is the answer as the text output shows it: an answer that
// was not found, or says it cannot answer, is shown as such.
func answerText(answer string, found bool) string {
	switch {
	case found:
		return answer
	case answer != "":
		return "(no answer: the model replied " + strconv.Quote(answer) + ")"
	}
	return "(no answer found in the model's reply)"
}

// printResult writes the answer for a person, or one JSON object.
func printResult(w io.Writer, cfg clientconf.Config, res *api.DocumentQAResult, asJSON bool) error {
	if asJSON {
		out := struct {
			Answer      string          `json:"answer"`
			AnswerFound bool            `json:"answer_found"`
			WorkflowID  string          `json:"workflow_id"`
			RunID       string          `json:"run_id"`
			Document    string          `json:"document"`
			Chunks      int             `json:"chunks"`
			Tokens      int64           `json:"tokens"`
			ResultURI   string          `json:"result_uri"`
			TracePrefix string          `json:"trace_prefix"`
			Scores      *api.Scores     `json:"scores,omitempty"`
			Usage       api.Usage       `json:"usage"`
			Runs        int             `json:"runs"`
			Source      string          `json:"source,omitempty"`
			Format      string          `json:"format,omitempty"`
			AnswerPages string          `json:"answer_pages,omitempty"`
			Grounding   *api.Grounding  `json:"grounding,omitempty"`
			Documents   []string        `json:"documents,omitempty"`
			Sources     []api.SourceRef `json:"answer_sources,omitempty"`
			Evidence    []api.Evidence  `json:"evidence,omitempty"`
			Reused      int             `json:"chunks_reused,omitempty"`
			ReusedFrom  *api.ReusedFrom `json:"reused_from,omitempty"`
			Reading     string          `json:"reused_reading,omitempty"`
			Context     string          `json:"context_pages,omitempty"`
			ContextSrc  []api.SourceRef `json:"context_sources,omitempty"`
		}{res.Answer, res.AnswerFound, res.WorkflowID, res.RunID, res.Document, res.Chunks, res.Tokens,
			res.ResultURI, res.TracePrefix, res.Scores, res.Usage, res.Runs, res.Source, res.Format, res.AnswerPages, res.Grounding,
			res.Documents, res.AnswerSources, res.Evidence, res.ChunksReused, res.ReusedFrom, res.ReusedReading, res.ContextPages, res.ContextSources}
		return printJSON(w, out)
	}
	fmt.Fprintf(w, "Answer:   %s\n", answerText(res.Answer, res.AnswerFound))
	if c := report.FoundOn(res.AnswerPages, res.AnswerSources); c != "" {
		fmt.Fprintf(w, "Found on: %s\n", c)
	}
	if c := report.FoundOn(res.ContextPages, res.ContextSources); c != "" {
		fmt.Fprintf(w, "Context:  %s (evidence without the answer's words)\n", c)
	}
	if res.Grounding != nil {
		fmt.Fprintf(w, "Grounding: %s\n", res.Grounding)
	}
	if res.Scores != nil {
		fmt.Fprintf(w, "Score:    exact=%v substring=%v f1=%.2f\n", res.Scores.ExactMatch, res.Scores.SubstringMatch, res.Scores.F1)
	}
	if res.Source != "" {
		fmt.Fprintf(w, "Source:   %s (%s, converted to the text below)\n", res.Source, strings.ToUpper(res.Format))
	}
	if len(res.Documents) > 0 {
		fmt.Fprintf(w, "Corpus:   %d documents, read as one stream: %s (%d chunks, %d tokens, %d bytes)\n", len(res.Documents), res.Document, res.Chunks, res.Tokens, res.Bytes)
	} else {
		printDocument(w, res.Source, res.Format, res.Document, res.Chunks, res.Tokens, res.Bytes)
	}
	if res.ChunksReused > 0 {
		fmt.Fprintf(w, "Reused:   %d of %d chunks from %s; --reuse none reads them again\n", res.ChunksReused, res.Chunks, api.ReusedReadingText(res.ReusedReading, res.ReusedFrom))
	}
	fmt.Fprintf(w, "Model:    %s, %d calls, %d prompt + %d completion tokens\n", res.Model, res.Usage.Calls, res.Usage.PromptTokens, res.Usage.CompletionTokens)
	fmt.Fprintf(w, "Workflow: %s (%d run(s))\n", res.WorkflowID, res.Runs)
	fmt.Fprintf(w, "Result:   %s\n", res.ResultURI)
	fmt.Fprintf(w, "Traces:   %s\n", res.TracePrefix)
	return nil
}

// hashFile returns the size and SHA-256 of a whole file, from its start.
func hashFile(f *os.File) (memagent.TextInfo, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return memagent.TextInfo{}, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return memagent.TextInfo{}, err
	}
	return memagent.TextInfo{Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// watchPause polls a run's progress and, when it is paused at its budget,
// sends the progress on paused and calls stop.
func watchPause(ctx context.Context, c client.Client, id string, paused chan<- pausedProgress, stop func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		v, err := c.QueryWorkflow(ctx, id, "", api.ProgressQuery)
		var p pausedProgress
		if err != nil || v.Get(&p) != nil || p.Stage != api.StagePaused {
			continue
		}
		paused <- p
		stop()
		return
	}
}

// pausedProgress is what a paused run's progress query says: a question's
// or a review's progress, and a batch's budget (api.BatchProgress.Budget).
type pausedProgress struct {
	api.Progress
	Budget *api.BatchBudget `json:"budget"`
}

// setDocs sets the request's document, or its corpus, from --doc.
func (r *askRequest) setDocs(d *docFlags) error {
	docs, corpus, err := d.local()
	if err != nil {
		return err
	}
	if corpus {
		r.Docs = docs
	} else {
		r.Doc = docs[0]
	}
	return nil
}

// localDocs are the request's local documents, checked before connecting.
func (r *askRequest) localDocs() []string {
	if len(r.Docs) > 0 {
		return r.Docs
	}
	return []string{r.Doc}
}
