package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/worker/workerapp"
)

// The review comparison: 10 planted facts in a ~200K-token document, a
// simulator with a fixed latency and more slots than calls in flight.
const (
	reviewTokens    = 200_000
	reviewQuestions = 10
	reviewLatency   = 20 * time.Millisecond
	reviewSlots     = 32
)

// reviewSide is one way of asking the questions: S3 and model work and
// how long it took.
type reviewSide struct {
	Wall time.Duration
	// ChunkReads counts ranged S3 reads of exactly one chunk of the
	// document; OtherReads the other ranged reads (evidence passages).
	ChunkReads, OtherReads int
	// MaxPerChunk is the most S3 reads of any one chunk.
	MaxPerChunk int
	// DocStreams counts whole-document reads (indexing).
	DocStreams int
	// DocBytes is what the worker read of the document, S3Bytes what the
	// S3 server sent for every object (document, index, traces, results).
	DocBytes, S3Bytes int64
	Updates, Finals   int
	Right             int // answers equal to the planted fact's
}

func (s reviewSide) calls() int { return s.Updates + s.Finals }

// reviewResult compares (a) one ReviewDocument with (b) the same questions
// as separate DocumentQA runs started at once.
type reviewResult struct {
	Tokens, Bytes       int64
	Chunks, Questions   int
	Review, Independent reviewSide
}

// countingStore counts the worker's S3 reads between the activities and
// the real S3 client: ranged reads by object and range, whole-object
// streams, and bytes.
type countingStore struct {
	activities.ObjectStore
	mu      sync.Mutex
	ranges  map[string]map[[2]int64]int // key → [start, end) → reads
	streams map[string]int              // key → Open calls
	bytes   map[string]int64            // key → bytes read
}

func newCountingStore(s activities.ObjectStore) *countingStore {
	c := &countingStore{ObjectStore: s}
	c.reset()
	return c
}

func (c *countingStore) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ranges, c.streams, c.bytes = map[string]map[[2]int64]int{}, map[string]int{}, map[string]int64{}
}

func (c *countingStore) addBytes(key string, n int64) {
	c.mu.Lock()
	c.bytes[key] += n
	c.mu.Unlock()
}

func (c *countingStore) ReadRange(ctx context.Context, loc s3store.Location, start, end int64, etag string) ([]byte, error) {
	data, err := c.ObjectStore.ReadRange(ctx, loc, start, end, etag)
	c.mu.Lock()
	if c.ranges[loc.Key] == nil {
		c.ranges[loc.Key] = map[[2]int64]int{}
	}
	c.ranges[loc.Key][[2]int64{start, end}]++
	c.bytes[loc.Key] += int64(len(data))
	c.mu.Unlock()
	return data, err
}

func (c *countingStore) Open(ctx context.Context, loc s3store.Location, etag string) (io.ReadCloser, error) {
	body, err := c.ObjectStore.Open(ctx, loc, etag)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.streams[loc.Key]++
	c.mu.Unlock()
	return &countingBody{ReadCloser: body, key: loc.Key, c: c}, nil
}

func (c *countingStore) ReadAll(ctx context.Context, loc s3store.Location) ([]byte, error) {
	data, err := c.ObjectStore.ReadAll(ctx, loc)
	c.addBytes(loc.Key, int64(len(data)))
	return data, err
}

// of returns the counts for one object.
func (c *countingStore) of(key string) (ranges map[[2]int64]int, streams int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ranges = map[[2]int64]int{}
	for r, n := range c.ranges[key] {
		ranges[r] = n
	}
	return ranges, c.streams[key], c.bytes[key]
}

type countingBody struct {
	io.ReadCloser
	key string
	c   *countingStore
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.addBytes(b.key, int64(n))
	return n, err
}

// runReview asks the same questions of one document both ways, on one
// worker whose S3 reads are counted, against one simulator.
func runReview(ctx context.Context, env *benchEnv) (reviewResult, error) {
	res := reviewResult{Questions: reviewQuestions}
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Latency: reviewLatency, Slots: reviewSlots})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := env.cfg
	cfg.ModelURLs = []string{srv.URL + "/v1"}
	cfg.TaskQueue = "bench-review"

	facts := docgen.Facts()[:reviewQuestions]
	doc, placed := docgen.MultiNeedle(env.tok, reviewTokens, facts, 42)
	idx, err := memagent.PlanChunks(strings.NewReader(doc), env.tok, api.DefaultChunkTokens)
	if err != nil {
		return res, err
	}
	res.Tokens, res.Bytes, res.Chunks = idx.Tokens, int64(len(doc)), len(idx.Chunks)
	// Each side reads its own copy, so neither finds the other's chunk
	// index or cached chunks.
	locA := s3store.Location{Bucket: cfg.Bucket, Key: "bench/review-a.txt"}
	locB := s3store.Location{Bucket: cfg.Bucket, Key: "bench/review-b.txt"}
	warm := s3store.Location{Bucket: cfg.Bucket, Key: "bench/review-warmup.txt"}
	for _, p := range []struct {
		loc  s3store.Location
		text string
	}{{locA, doc}, {locB, doc}, {warm, doc[:20_000]}} {
		if err := env.store.Put(ctx, p.loc, []byte(p.text), "text/plain"); err != nil {
			return res, err
		}
	}

	acts, pool, err := pluginkit.NewActivities(ctx, workerapp.PluginOptions(cfg, workerapp.Options{Logger: env.logger}))
	if err != nil {
		return res, err
	}
	counter := newCountingStore(acts.Store)
	acts.Store = counter
	pool.Start(ctx)
	defer pool.Close()
	tc, err := workerapp.Dial(ctx, cfg, env.logger)
	if err != nil {
		return res, err
	}
	defer tc.Close()
	w := workerapp.NewWorker(tc, cfg, acts, pool.Capacity(), workerapp.Options{Logger: env.logger})
	if err := w.Start(); err != nil {
		return res, err
	}
	defer w.Stop()

	questions := make([]api.ReviewQuestion, len(facts))
	for i, f := range facts {
		questions[i] = api.ReviewQuestion{ID: fmt.Sprintf("fact%02d", i+1), Question: f.Question}
	}
	start := func(workflow string, in any) (client.WorkflowRun, error) {
		return env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, workflow, in)
	}
	// Both workflows once on a short document, so both sides run warm.
	warmReview, err := start(api.ReviewDocumentName, api.ReviewInput{Reuse: api.ReuseNone, Document: warm.String(), Questions: questions[:2]})
	if err != nil {
		return res, err
	}
	warmQA, err := start(api.DocumentQAName, api.DocumentQAInput{Reuse: api.ReuseNone, Document: warm.String(), Question: facts[0].Question})
	if err != nil {
		return res, err
	}
	if err := warmReview.Get(ctx, nil); err != nil {
		return res, fmt.Errorf("warm-up review: %w", err)
	}
	if err := warmQA.Get(ctx, nil); err != nil {
		return res, fmt.Errorf("warm-up question: %w", err)
	}

	// (a) One review.
	measure := func(loc s3store.Location, side *reviewSide, ask func() ([]string, error)) error {
		sim.Reset()
		counter.reset()
		s3Before := env.dev.Stack.S3BytesSent()
		began := time.Now()
		answers, err := ask()
		if err != nil {
			return err
		}
		side.Wall = time.Since(began)
		side.S3Bytes = env.dev.Stack.S3BytesSent() - s3Before
		ranges, streams, docBytes := counter.of(loc.Key)
		for _, c := range idx.Chunks {
			r := [2]int64{c.Start, c.End}
			side.ChunkReads += ranges[r]
			side.MaxPerChunk = max(side.MaxPerChunk, ranges[r])
			delete(ranges, r)
		}
		for _, n := range ranges {
			side.OtherReads += n
		}
		side.DocStreams, side.DocBytes = streams, docBytes
		for _, c := range sim.Calls() {
			switch c.Kind {
			case simulator.KindUpdate:
				side.Updates++
			case simulator.KindFinal:
				side.Finals++
			}
		}
		for i, a := range answers {
			if a == placed[i].Answer {
				side.Right++
			}
		}
		return nil
	}
	if err := measure(locA, &res.Review, func() ([]string, error) {
		run, err := start(api.ReviewDocumentName, api.ReviewInput{Reuse: api.ReuseNone, Document: locA.String(), Questions: questions})
		if err != nil {
			return nil, err
		}
		var grid api.ReviewResult
		if err := run.Get(ctx, &grid); err != nil {
			return nil, fmt.Errorf("review: %w", err)
		}
		answers := make([]string, len(grid.Rows))
		for i, row := range grid.Rows {
			answers[i] = row.Answer
		}
		return answers, nil
	}); err != nil {
		return res, err
	}

	// (b) The same questions as separate DocumentQA runs, started at once.
	if err := measure(locB, &res.Independent, func() ([]string, error) {
		runs := make([]client.WorkflowRun, len(facts))
		for i, f := range facts {
			run, err := start(api.DocumentQAName, api.DocumentQAInput{Reuse: api.ReuseNone, Document: locB.String(), Question: f.Question})
			if err != nil {
				return nil, err
			}
			runs[i] = run
		}
		answers := make([]string, len(runs))
		for i, run := range runs {
			var out api.DocumentQAResult
			if err := run.Get(ctx, &out); err != nil {
				return nil, fmt.Errorf("question %d: %w", i+1, err)
			}
			answers[i] = out.Answer
		}
		return answers, nil
	}); err != nil {
		return res, err
	}
	for _, s := range []reviewSide{res.Review, res.Independent} {
		if s.Updates != res.Questions*res.Chunks || s.Finals != res.Questions {
			return res, fmt.Errorf("%d memory updates and %d answers, want %d × %d and %d: the comparison is not like for like",
				s.Updates, s.Finals, res.Questions, res.Chunks, res.Questions)
		}
	}
	return res, nil
}

// writeReview writes the review section.
func writeReview(w io.Writer, r reviewResult) {
	fmt.Fprintf(w, "## Review: one read for many questions\n\n"+
		"The same %d questions over one generated document of %d tokens (%d bytes, %d chunks of 5,000 tokens) with a fact planted for each, asked (a) as one `memagent.ReviewDocument` and (b) as %d separate `DocumentQA` runs started at once. "+
		"Same embedded stack, same worker, same simulator (%d ms per call, %d slots, so no call waits for a slot); each side reads its own copy of the document, so neither finds the other's chunk index. "+
		"S3 reads are counted by a wrapper around the worker's store: a chunk read is a ranged read of exactly one chunk, and the document column is everything the worker read of the document, including the stream that indexes it. "+
		"S3 bytes is what the S3 server sent for every object (document, chunk index, results).\n\n",
		r.Questions, r.Tokens, r.Bytes, r.Chunks, r.Questions, reviewLatency.Milliseconds(), reviewSlots)
	fmt.Fprintln(w, "| | wall | S3 chunk reads | most reads of one chunk | other ranged reads | document streams | document bytes read ÷ document | S3 bytes sent | model calls | right answers |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	row := func(name string, s reviewSide) {
		fmt.Fprintf(w, "| %s | %.2f s | %d | %d | %d | %d | %.2f | %.1f MB | %d | %d of %d |\n", name, s.Wall.Seconds(), s.ChunkReads, s.MaxPerChunk, s.OtherReads, s.DocStreams,
			float64(s.DocBytes)/float64(r.Bytes), float64(s.S3Bytes)/1e6, s.calls(), s.Right, r.Questions)
	}
	row("(a) one review", r.Review)
	row(fmt.Sprintf("(b) %d DocumentQA runs", r.Questions), r.Independent)
	a, b := r.Review, r.Independent
	ratio := func(x, y float64) string {
		if y == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", x/y)
	}
	fmt.Fprintf(w, "| (b)/(a) | %s | %s | | | %s | %s | %s | %s | |\n\n",
		ratio(b.Wall.Seconds(), a.Wall.Seconds()), ratio(float64(b.ChunkReads), float64(a.ChunkReads)), ratio(float64(b.DocStreams), float64(a.DocStreams)),
		ratio(float64(b.DocBytes), float64(a.DocBytes)), ratio(float64(b.S3Bytes), float64(a.S3Bytes)), ratio(float64(b.calls()), float64(a.calls())))
	if a.OtherReads > 0 {
		fmt.Fprint(w, "The review's other ranged reads are the evidence passages its report quotes. ")
	}
	if b.DocStreams > 1 {
		fmt.Fprintf(w, "The %d DocumentQA runs streamed the whole document %d times to index it: they started together, before any index existed. ", r.Questions, b.DocStreams)
	}
	fmt.Fprintln(w, "Both sides make the same model calls (one per question and chunk, plus one answer per question); what the review saves is S3 reads.")
	fmt.Fprintln(w)
}
