package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

// ObjectStore is the part of S3 the activities use. A store that also has
// ListFolders(ctx, bucket, prefix string) ([]string, error), as
// s3store's does, lets a batch find its previous dated report
// (compare_with "previous", and a Schedule's own comparison); without it,
// only an explicit compare_with prefix compares.
type ObjectStore interface {
	Head(ctx context.Context, loc s3store.Location) (s3store.ObjectInfo, error)
	Open(ctx context.Context, loc s3store.Location, etag string) (io.ReadCloser, error)
	ReadRange(ctx context.Context, loc s3store.Location, start, end int64, etag string) ([]byte, error)
	ReadAll(ctx context.Context, loc s3store.Location) ([]byte, error)
	Put(ctx context.Context, loc s3store.Location, data []byte, contentType string) error
	PutReader(ctx context.Context, loc s3store.Location, body io.ReadSeeker, size int64, contentType string) error
}

// Model is the inference pool as the activities see it.
type Model interface {
	Complete(ctx context.Context, req inference.Request) (inference.Completion, error)
}

// Activities holds the dependencies of memagent's activities. Register it
// with Register; workflows call its methods by name. The plugin package
// builds one per worker; code that builds its own sets at least Store,
// Model, Bucket, Templates and Tokenizers.
type Activities struct {
	// Store reads documents and writes indexes, traces and results.
	Store ObjectStore
	// Model answers the prompts: the pool of model servers.
	Model Model
	// DefaultModel is used when a request names none.
	DefaultModel string
	// Served, when set, lists the models the model servers serve now:
	// PrepareDocument refuses a run naming another as memagent.BadInput
	// before any model call. Nil leaves an unknown model to its first call.
	Served func(ctx context.Context) ([]string, error)
	// MaxModelLen is the model's context in tokens when the server reported
	// it (0 = unknown, no budget check).
	MaxModelLen int
	// Bucket holds indexes, traces and results.
	Bucket string
	// ReadPrefixes are the s3:// prefixes documents and manifests may be
	// read from; WritePrefixes those a caller's output_prefix or
	// report_prefix may name. Empty means s3://<Bucket>/. Anything else
	// fails as memagent.Forbidden before any model call.
	ReadPrefixes, WritePrefixes []string
	// ClaimRoots are the s3:// prefixes under which a caller's
	// output_prefix or report_prefix may be claimed (empty: WritePrefixes),
	// and ClaimDepth how many folders below the deepest root it is under a
	// claimed prefix must be, at least (0: DefaultClaimDepth). A claim is
	// also refused while anything lies under the prefix.
	ClaimRoots []string
	ClaimDepth int
	// Templates are the prompts (DefaultTemplates, ParseTemplates).
	Templates Templates
	// Tokenizers returns the tokenizer a request names (NewTokenizer).
	Tokenizers func(name string) (Tokenizer, error)
	// Logger defaults to discarding everything.
	Logger *slog.Logger
	// Limits bound documents; zero fields mean the defaults.
	Limits Limits
	// S3OpTimeout bounds each small S3 operation of the model activities
	// (chunk reads, trace and result writes); default DefaultS3OpTimeout.
	S3OpTimeout time.Duration
	// HeartbeatEvery is how often a waiting activity heartbeats; default a
	// third of the heartbeat timeout.
	HeartbeatEvery time.Duration
	// Metrics counts chunks and memory sizes; nil records nothing.
	Metrics *Metrics
	// Chunks caches chunk bytes, so that the questions of a review read
	// each chunk from S3 once; see ChunkCache. DocumentQA's UpdateMemory
	// does not use it.
	Chunks ChunkCache
	// documents converts PDF, DOCX and HTML documents (ConvertDocument):
	// made on first use, with PDFium started then and kept for the
	// worker's life, its instances bounded (docconv.DefaultInstances).
	documents *docconv.Converter
	// OCRCommand is the Tesseract binary that reads scanned pages ("" is
	// tesseract on PATH; OCRNone turns OCR off). It is looked for on first
	// use (Activities.OCR, which the worker calls at start).
	OCRCommand string
	ocr        ocrEngine

	// PlanConcurrency is how many documents this worker indexes at once;
	// default GOMAXPROCS. Tokenizing is CPU-bound: a batch that starts a
	// hundred runs at once would otherwise share the cores between all
	// their indexes, and the longest document, started first, would wait
	// for the shortest. The rest wait their turn, heartbeating.
	PlanConcurrency int

	// kept remembers paid completions until their activity completes.
	kept keptCalls
	// ahead holds the next chunks of single questions' runs, read while
	// the model works on the current ones.
	ahead readAhead

	planOnce sync.Once
	planSem  chan struct{}

	indexMu sync.Mutex
	indexes map[string]*memagent.ChunkIndex
	// planning holds a lock per index location being prepared, so that
	// runs asking about one new document at once index it once.
	planning map[string]*planLock

	// Notifier POSTs batch change notifications (NotifyChanges); default
	// a client with a 30-second timeout that follows no redirect, uses no
	// proxy and dials only the addresses NotifyPolicy allows. A client set
	// here is used as it is (NotifyPolicy's hosts still apply); it must
	// not record the URL it is given, which may hold a token.
	Notifier *http.Client
	// NotifyPolicy says which hosts and addresses a notify_url may reach:
	// by default any host whose addresses are public, never loopback,
	// link-local or private ones.
	NotifyPolicy NotifyPolicy
	// NotifyAttemptTime is the budget of an attempt to notify (default
	// 30s): the POST ends by then, and an attempt that does not deliver
	// ends then, however early it failed, so that its timing says nothing
	// about the host. It must stay below the workflow's 45 s start-to-close
	// timeout of the attempt.
	NotifyAttemptTime time.Duration
	// NotifyAttempts is how many attempts a notification gets (default 1):
	// every undelivered attempt before the last is retried, whatever the
	// host did, and the last one is not. More attempts ride out a
	// receiver's restart; each one that fails lasts NotifyAttemptTime.
	NotifyAttempts int

	// owners remembers the owners of claimed output prefixes (allowOutput).
	owners ownerCache

	// SkipExecutionChecks turns off the checks, through Temporal, that the
	// workflow scheduling a batch's or a sign-off's activity is memagent's
	// (and of the children and answers a batch takes): only for the SDK's
	// test environments, which have no server to describe a run in. A
	// worker never sets it, and the plugin has no setting for it.
	SkipExecutionChecks bool

	// callers remembers the workflow runs callerIs found to be memagent's.
	callersMu sync.Mutex
	callers   map[string]bool
}

// maxCachedIndexes bounds the per-process index cache; indexes are
// immutable (keyed by object version), so any entry may be dropped.
const maxCachedIndexes = 64

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// heartbeatEvery is a third of the activity's heartbeat timeout (the SDK
// throttles what it sends anyway), unless HeartbeatEvery is set.
func (a *Activities) heartbeatEvery(ctx context.Context) time.Duration {
	if a.HeartbeatEvery > 0 {
		return a.HeartbeatEvery
	}
	if activity.IsActivity(ctx) {
		if t := activity.GetInfo(ctx).HeartbeatTimeout; t > 0 {
			return max(t/3, 100*time.Millisecond)
		}
	}
	return 10 * time.Second
}

// updateMemory reads one chunk's byte range, asks the model to rewrite the
// memory, writes the chunk's trace and returns the new memory.
func (a *Activities) updateMemory(ctx context.Context, in actwire.UpdateInput) (*actwire.UpdateOutput, error) {
	return a.updateMemoryReading(ctx, in, a.Store.ReadRange, true)
}

// readRange reads a byte range of an object pinned to its ETag.
type readRange func(ctx context.Context, loc s3store.Location, start, end int64, etag string) ([]byte, error)

// updateMemoryReading is updateMemory reading its chunk with read:
// straight from S3 for a single question, whose chunks are each read once
// anyway, or through the chunk cache for the questions of a review, which
// share them. With ahead, the run's next chunk is read while the model
// works on this one (readAhead).
func (a *Activities) updateMemoryReading(ctx context.Context, in actwire.UpdateInput, read readRange, ahead bool) (*actwire.UpdateOutput, error) {
	ctx, hb := a.beginHeartbeat(ctx)
	defer hb.stop()
	opts := in.Options.WithDefaults()
	c, err := a.locateChunk(ctx, in)
	if err != nil {
		return nil, err
	}
	traceChunk(ctx, in.Chunk, len(c.idx.Chunks))
	text, err := a.chunkText(ctx, in, c, read, ahead)
	if err != nil {
		return nil, err
	}
	prompt := a.Templates.RenderUpdate(in.Question, in.Memory, string(text))
	digest := inputDigest(in.Question, in.Memory, in.ETag, fmt.Sprint(in.Chunk), a.modelName(opts))
	comp, paid, err := a.paidCompletion(ctx, hb, c.trace.String(), digest, func() *KeptCompletion {
		var tr ChunkTrace
		if a.readKept(ctx, c.trace, &tr) && tr.Kept != nil {
			return tr.Kept
		}
		return nil
	}, func() (inference.Completion, error) {
		// This chunk's update, the later chunks' and the final answer.
		left := len(c.idx.Chunks) - in.Chunk + 1
		return a.complete(context.WithValue(ctx, remainingKey{}, left), opts, prompt, opts.MemoryMaxTokens, callUpdate)
	})
	if err != nil {
		return nil, err
	}
	out, trace := updateRecords(ctx, in, c, comp, paid, text, prompt, digest)
	if err := a.writeUpdate(ctx, in, c, opts, out, trace); err != nil {
		return nil, err
	}
	a.kept.done(c.trace.String())
	a.recordChunk(ctx, opts, out.Memory)
	a.logger().DebugContext(ctx, "memory updated", "chunk", in.Chunk, "memory", out.Memory)
	a.logger().DebugContext(ctx, "chunk done",
		"chunk", in.Chunk, "chunks", len(c.idx.Chunks), "prompt_tokens", comp.PromptTokens,
		"completion_tokens", comp.CompletionTokens, "latency_ms", out.LatencyMS, "finish_reason", comp.FinishReason)
	return out, nil
}

// updateChunk is where one memory update reads and writes: its chunk of
// the index, the document and the chunk's trace.
type updateChunk struct {
	trace s3store.Location
	doc   s3store.Location
	idx   *memagent.ChunkIndex
	ch    memagent.Chunk
}

// locateChunk resolves and checks every location an update touches
// before any read of the document or call to the model: the input's
// chunk must be in the index, readable by this caller, and its trace
// writable.
func (a *Activities) locateChunk(ctx context.Context, in actwire.UpdateInput) (updateChunk, error) {
	var c updateChunk
	traceLoc, err := s3store.ParseURI(in.TracePrefix + fmt.Sprintf("chunks/%06d.json", in.Chunk))
	if err != nil {
		return c, badInput(fmt.Errorf("trace prefix: %w", err))
	}
	indexLoc, idx, err := a.workerIndex(ctx, in.IndexURI)
	if err != nil {
		return c, err
	}
	if in.Chunk < 0 || in.Chunk >= len(idx.Chunks) {
		return c, badInput(fmt.Errorf("chunk %d out of range: the index has %d chunks", in.Chunk, len(idx.Chunks)))
	}
	ch := idx.Chunks[in.Chunk]
	docLoc, err := s3store.ParseURI(in.Document)
	if err != nil {
		return c, badInput(err)
	}
	if err := a.allowChunkRead(in, indexLoc, idx, ch); err != nil {
		return c, err
	}
	if err := a.allowOutput(ctx, "trace_prefix", traceLoc.String()); err != nil {
		return c, err
	}
	return updateChunk{trace: traceLoc, doc: docLoc, idx: idx, ch: ch}, nil
}

// chunkText returns the chunk's text, read ahead by the previous update
// or with read, and with ahead starts reading the run's next chunk.
func (a *Activities) chunkText(ctx context.Context, in actwire.UpdateInput, c updateChunk, read readRange, ahead bool) ([]byte, error) {
	text, found := []byte(nil), false
	if ahead {
		text, found = a.ahead.take(ctx, chunkKey{doc: in.Document, etag: in.ETag, start: c.ch.Start, end: c.ch.End})
	}
	if !found {
		sctx, cancel := a.s3ctx(ctx)
		var err error
		text, err = read(sctx, c.doc, c.ch.Start, c.ch.End, in.ETag)
		cancel()
		if err != nil {
			return nil, storeError(err, in.Document)
		}
	}
	if ahead && in.Chunk+1 < len(c.idx.Chunks) {
		next := c.idx.Chunks[in.Chunk+1]
		a.ahead.start(chunkKey{doc: in.Document, etag: in.ETag, start: next.Start, end: next.End}, a.s3Timeout(), func(ctx context.Context) ([]byte, error) {
			return read(ctx, c.doc, next.Start, next.End, in.ETag)
		})
	}
	return text, nil
}

// updateRecords builds the update's output and the chunk's trace from
// the completion: the new memory, its evidence and sources, and what the
// call cost.
func updateRecords(ctx context.Context, in actwire.UpdateInput, c updateChunk, comp inference.Completion, paid paidCalls,
	text []byte, prompt, digest string) (*actwire.UpdateOutput, ChunkTrace) {
	ch, idx := c.ch, c.idx
	memory, kept := nextMemory(in.Memory, comp.Text)
	pages := idx.PageMap.Ref(ch.Start, ch.End)
	out := &actwire.UpdateOutput{
		Memory:       memory,
		Chunk:        in.Chunk,
		Start:        ch.Start,
		End:          ch.End,
		ChunkTokens:  ch.Tokens,
		Usage:        paid.usage(),
		FinishReason: comp.FinishReason,
		MemoryKept:   kept,
		LatencyMS:    comp.Latency.Milliseconds(),
		Pages:        pages,
		Evidence:     evidenceOf(in, ch, idx.PageMap, pages, memory, text, idx.Bytes),
	}
	// A corpus chunk's documents (and their pages), for the evidence and
	// the trace.
	sources := idx.Corpus.Refs(ch.Start, ch.End)
	citeCorpus(idx.Corpus, sources, out)
	trace := ChunkTrace{
		Chunk: in.Chunk, Chunks: len(idx.Chunks), Start: ch.Start, End: ch.End, ChunkTokens: ch.Tokens,
		Model: comp.Model, PromptTokens: comp.PromptTokens, CompletionTokens: comp.CompletionTokens,
		CachedTokens: comp.CachedTokens, LatencyMS: out.LatencyMS, FinishReason: comp.FinishReason,
		Attempt: attempt(ctx), MemoryKept: kept, MemoryAfter: memory, WrittenAt: time.Now().UTC(),
		Calls: paid.Calls, Kept: keep(digest, comp), Pages: pages, PromptSHA256: PromptDigest(prompt),
		Sources: sources,
	}
	return out, trace
}

// writeUpdate writes the chunk's trace and, when asked, its checkpoint.
// The checkpoint is written beside the trace, at once: the trace keeps
// the completion, so either write failing is retried without a second
// model call.
func (a *Activities) writeUpdate(ctx context.Context, in actwire.UpdateInput, c updateChunk, opts api.ModelOptions,
	out *actwire.UpdateOutput, trace ChunkTrace) error {
	var cpErr error
	var wg sync.WaitGroup
	if in.Checkpoint {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cpErr = a.writeCheckpoint(ctx, in, c.ch, opts, out, workflowID(ctx), runID(ctx))
		}()
	}
	sctx, cancel := a.s3ctx(ctx)
	err := a.putJSON(sctx, c.trace, trace)
	cancel()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("write trace of chunk %d: %w", in.Chunk, err)
	}
	return cpErr
}

// answer asks the model for the final answer from the memory alone,
// extracts the \boxed{} content, scores it against gold answers when there
// are any and writes the result JSON.
func (a *Activities) answer(ctx context.Context, in actwire.AnswerInput) (*api.DocumentQAResult, error) {
	ctx, hb := a.beginHeartbeat(ctx)
	defer hb.stop()
	res, paid, err := a.answerWith(ctx, hb, in)
	if err != nil {
		return nil, err
	}
	paid()
	return res, nil
}

// answerWith is answer under the heartbeat hb, which keeps the paid
// completion in its details for as long as it beats. Once the result is
// written it returns paid, which forgets the worker's own copy of the
// completion: the caller calls it when nothing after the answer can fail
// (a caller that grounds the answer next, after grounding).
func (a *Activities) answerWith(ctx context.Context, hb *heartbeat, in actwire.AnswerInput) (*api.DocumentQAResult, func(), error) {
	opts := in.Options.WithDefaults()
	resultLoc, err := s3store.ParseURI(in.ResultURI)
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("result uri: %w", err))
	}
	if err := a.allowOutput(ctx, "result_uri", in.ResultURI); err != nil {
		return nil, nil, err
	}
	digest := inputDigest(in.Question, in.Memory, a.modelName(opts))
	prompt := a.Templates.RenderFinal(in.Question, in.Memory)
	// A question that reused every chunk reached a memory an earlier
	// reading had: the answer that reading kept is this one's, no call.
	var reused string
	var answerReused bool
	if in.ReuseAnswer && in.Result.Chunks > 0 && in.Result.ChunksReused >= in.Result.Chunks {
		if reused, answerReused, err = a.readKeptAnswer(ctx, in.Question, opts, prompt); err != nil {
			return nil, nil, err
		}
	}
	comp, paid := inference.Completion{Text: reused}, paidCalls{}
	if !answerReused {
		comp, paid, err = a.paidCompletion(ctx, hb, resultLoc.String()+"#"+in.Result.RunID, digest, func() *KeptCompletion {
			// An earlier attempt of this run that wrote its result before it
			// was lost: the result keeps the completion.
			var prev struct {
				RunID string          `json:"run_id"`
				Kept  *KeptCompletion `json:"kept"`
			}
			if a.readKept(ctx, resultLoc, &prev) && prev.RunID == in.Result.RunID {
				return prev.Kept
			}
			return nil
		}, func() (inference.Completion, error) {
			return a.complete(ctx, opts, prompt, opts.AnswerMaxTokens, callFinal)
		})
		if err != nil {
			return nil, nil, err
		}
		if in.KeepAnswer {
			if err := a.keepAnswer(ctx, in.Question, opts, prompt, comp.Text, in.Result.WorkflowID, in.Result.RunID); err != nil {
				return nil, nil, err
			}
		}
	}
	res := in.Result
	res.AnswerReused = answerReused
	ans := memagent.ExtractAnswer(comp.Text)
	// An answer that says it cannot answer ("unknown", "not mentioned")
	// is no answer: not found, no citations, scored as empty.
	noAnswer := ans.Found && memagent.IsNoAnswer(ans.Text)
	res.Answer, res.AnswerFound, res.AnswerMethod = ans.Text, ans.Found && !noAnswer, ans.Method
	res.Usage = res.Usage.Add(paid.usage())
	res.FinalMemory = in.Memory
	res.AnswerPages = markEvidence(res.Evidence, in.Memory)
	res.AnswerSources = report.AnswerSources(res.Evidence)
	if !res.AnswerFound {
		res.AnswerPages, res.AnswerSources = "", nil
	}
	res.GoldAnswers = in.GoldAnswers
	if len(in.GoldAnswers) > 0 {
		s := memagent.Score(scoredAnswer(res.Answer, res.AnswerFound), in.GoldAnswers)
		res.Scores = &s
	}
	res.FinishedAt = time.Now().UTC()
	// The raw completion is kept in S3 only, next to the result. A result
	// already there from another run (a reset, or a re-run into the same
	// prefix) stays: this one goes beside it, under runs/<run id>/.
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	final, err := a.putOnce(sctx, resultLoc, res.RunID, func(at s3store.Location) any {
		res.ResultURI = at.String()
		kept := keep(digest, comp)
		if answerReused {
			kept = nil // nothing was paid for in this run
		}
		return StoredResult{DocumentQAResult: res, Completion: comp.Text, Kept: kept, PromptSHA256: PromptDigest(prompt)}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("write result: %w", err)
	}
	res.ResultURI = final.String()
	a.logger().InfoContext(ctx, "answered", "answer_found", res.AnswerFound, "no_answer", noAnswer, "method", ans.Method,
		"completion_tokens", comp.CompletionTokens, "answer_reused", answerReused)
	return &res, func() { a.kept.done(resultLoc.String() + "#" + in.Result.RunID) }, nil
}

// scoredAnswer is the answer that is scored: an answer that was not
// found, or says it cannot answer, counts as empty.
func scoredAnswer(answer string, found bool) string {
	if !found {
		return ""
	}
	return answer
}

// complete checks the prompt against the model's context, then calls the
// model while heartbeating, and classifies its errors. opts has its
// defaults applied; kind labels the call in telemetry.
func (a *Activities) complete(ctx context.Context, opts api.ModelOptions, prompt string, maxTokens int, kind string) (inference.Completion, error) {
	// A token is at least one byte, so a prompt with fewer bytes than the
	// budget cannot overflow it and is not worth counting.
	if a.MaxModelLen > 0 && len(prompt)+maxTokens > a.MaxModelLen {
		tok, err := a.Tokenizers(opts.Tokenizer)
		if err != nil {
			return inference.Completion{}, badInput(err)
		}
		if n := tok.Count(prompt); n+maxTokens > a.MaxModelLen {
			return inference.Completion{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"prompt (%d tokens) + max_tokens (%d) = %d exceed the model's context (%d): lower options.chunk_tokens or options.memory_max_tokens",
				n, maxTokens, n+maxTokens, a.MaxModelLen), api.ErrPromptTooLong, nil)
		}
	}
	req := inference.Request{
		Model:       opts.Model,
		Prompt:      prompt,
		MaxTokens:   maxTokens,
		Temperature: *opts.Temperature,
		TopP:        *opts.TopP,
		Kind:        kind,
	}
	if req.Model == "" {
		req.Model = a.DefaultModel
	}
	stop := a.startHeartbeat(ctx)
	comp, err := a.Model.Complete(withTaskPriority(ctx), req)
	stop()
	if err != nil {
		return comp, modelError(err)
	}
	return comp, nil
}

// remainingKey carries, in a model call's context, the calls its run has
// left, this one included.
type remainingKey struct{}

// withTaskPriority hands the activity's Temporal priority and fairness
// key to the model pool, whose queue of calls waiting for a slot orders by
// them as the task queue does, and within a key by the calls each run has
// left (a final answer has 1), longest first.
func withTaskPriority(ctx context.Context) context.Context {
	if !activity.IsActivity(ctx) {
		return ctx
	}
	p := activity.GetInfo(ctx).Priority
	left, ok := ctx.Value(remainingKey{}).(int)
	if !ok {
		left = 1
	}
	return inference.WithPriority(ctx, inference.Priority{Level: p.PriorityKey, Key: p.FairnessKey, Weight: float64(p.FairnessWeight), Remaining: left})
}

// startHeartbeat records heartbeats until the returned func is called, so a
// dead worker is noticed within the heartbeat timeout even while the model
// is still generating.
func (a *Activities) startHeartbeat(ctx context.Context) func() {
	if ctx.Value(heartbeatKey{}) != nil {
		return func() {}
	}
	// Without details, beginHeartbeat's ticker records bare heartbeats.
	_, hb := a.beginHeartbeat(ctx)
	return hb.stop
}

func (a *Activities) modelName(opts api.ModelOptions) string {
	if opts.Model != "" {
		return opts.Model
	}
	return a.DefaultModel
}

func (a *Activities) readIndex(ctx context.Context, loc s3store.Location) (*memagent.ChunkIndex, error) {
	data, err := a.Store.ReadAll(ctx, loc)
	if err != nil {
		return nil, err
	}
	var idx memagent.ChunkIndex
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("decode chunk index %s: %w", loc, err)
	}
	return &idx, nil
}

// loadIndex returns a chunk index from the process cache or S3.
func (a *Activities) loadIndex(ctx context.Context, loc s3store.Location) (*memagent.ChunkIndex, error) {
	key := loc.String()
	a.indexMu.Lock()
	idx, ok := a.indexes[key]
	a.indexMu.Unlock()
	if ok {
		return idx, nil
	}
	idx, err := a.readIndex(ctx, loc)
	if err != nil {
		return nil, err
	}
	a.cacheIndex(key, idx)
	return idx, nil
}

func (a *Activities) cacheIndex(key string, idx *memagent.ChunkIndex) {
	a.indexMu.Lock()
	defer a.indexMu.Unlock()
	if a.indexes == nil {
		a.indexes = make(map[string]*memagent.ChunkIndex)
	}
	if len(a.indexes) >= maxCachedIndexes {
		for k := range a.indexes {
			delete(a.indexes, k)
			break
		}
	}
	a.indexes[key] = idx
}

func (a *Activities) putJSON(ctx context.Context, loc s3store.Location, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return a.Store.Put(ctx, loc, data, "application/json")
}

// versionID names one version of an object: its URI, ETag and size.
func versionID(uri string, info s3store.ObjectInfo) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", uri, info.ETag, info.Size)))
	return hex.EncodeToString(h[:16])
}

// indexKey names the chunk index of one object version: the same document,
// unchanged, asked again with the same tokenizer and chunk size reuses it.
func indexKey(uri string, info s3store.ObjectInfo, tokenizer string, chunkTokens int) string {
	return fmt.Sprintf("indexes/%s/%s-%d.json", versionID(uri, info), tokenizer, chunkTokens)
}

// nextMemory turns a completion into the next memory: only what follows a
// reasoning block counts, and an empty answer keeps the previous memory.
func nextMemory(prev, completion string) (string, bool) {
	if i := strings.LastIndex(completion, "</think>"); i >= 0 {
		completion = completion[i+len("</think>"):]
	}
	m := strings.TrimSpace(completion)
	if m == "" {
		return prev, true
	}
	return m, false
}

// PromptDigest is the hex SHA-256 of a prompt, as traces and results keep
// it (ChunkTrace.PromptSHA256).
func PromptDigest(prompt string) string { return actwire.PromptDigest(prompt) }

func usageOf(c inference.Completion) api.Usage {
	return api.Usage{Calls: 1, PromptTokens: int64(c.PromptTokens), CompletionTokens: int64(c.CompletionTokens), CachedTokens: int64(c.CachedTokens)}
}

// heartbeatReader heartbeats while a long document streams through the
// chunk planner and remembers a read error so it is not mistaken for bad
// input.
type heartbeatReader struct {
	ctx   context.Context
	r     io.Reader
	every time.Duration
	last  time.Time
	read  int64
	err   error
}

func (h *heartbeatReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.read += int64(n)
	if err != nil && err != io.EOF {
		h.err = err
	}
	if now := time.Now(); now.Sub(h.last) >= h.every && activity.IsActivity(h.ctx) {
		h.last = now
		activity.RecordHeartbeat(h.ctx, h.read)
	}
	return n, err
}

// planLock is a lock, with the count of activities holding or waiting for it.
type planLock struct {
	sem   chan struct{}
	users int
}

// lockPlan takes the lock of one index location, heartbeating while it
// waits for another activity's indexing (which can take minutes for a large
// document), and returns its release.
func (a *Activities) lockPlan(ctx context.Context, key string) (func(), error) {
	a.indexMu.Lock()
	if a.planning == nil {
		a.planning = make(map[string]*planLock)
	}
	l := a.planning[key]
	if l == nil {
		l = &planLock{sem: make(chan struct{}, 1)}
		a.planning[key] = l
	}
	l.users++
	a.indexMu.Unlock()
	release := func() {
		a.indexMu.Lock()
		if l.users--; l.users == 0 {
			delete(a.planning, key)
		}
		a.indexMu.Unlock()
	}
	select {
	case l.sem <- struct{}{}:
	default:
		stop := a.startHeartbeat(ctx)
		select {
		case l.sem <- struct{}{}:
			stop()
		case <-ctx.Done():
			stop()
			release()
			return nil, ctx.Err()
		}
	}
	return func() { <-l.sem; release() }, nil
}
