package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/workflows"
)

// chaosBatch is the batch scenarios' workload: a manifest of one long
// document (the suite's, Chunks chunks) and short ones, each item with a
// question of its own, run one item a run, so that the batch continues as
// new after every item and carries the long document's child across every
// boundary.
type chaosBatch struct {
	docs      []string
	questions []string
	items     int
	chunks    int // over every item
}

// chaosBatchItems is how many items the batch has: at least 8, and enough
// boundaries (items - 1) for every kill and restart to get one of its own.
func chaosBatchItems(o chaosOptions) int {
	return max(8, o.Kills+2, o.Restarts+2)
}

// prepareBatch makes the batch's documents: long, the suite's document of
// longChunks chunks, first, then short ones.
func (h *chaosHarness) prepareBatch(tok memagent.Tokenizer, long string, longChunks int) error {
	b := &chaosBatch{items: chaosBatchItems(h.o)}
	used := map[int]bool{}
	add := func(doc string, chunks int) {
		used[chunks] = true
		b.chunks += chunks
		b.questions = append(b.questions, fmt.Sprintf("%s (item %d)", chaosQuestion, len(b.docs)))
		b.docs = append(b.docs, doc)
	}
	add(long, longChunks)
	// Short ones of 5 chunks or more, each of its own length (every
	// document differs) and with the planted fact whole in one chunk.
	for want := 5; len(b.docs) < b.items; want++ {
		if used[want] {
			continue
		}
		doc, got, err := chaosDocument(tok, want, h.o.ChunkTokens)
		if err != nil {
			return err
		}
		whole, err := factWhole(doc, tok, h.o.ChunkTokens)
		if err != nil {
			return err
		}
		if whole && !used[got] {
			add(doc, got)
		}
	}
	h.batch = b
	return nil
}

// batchManifest uploads the batch's documents under the scenario's own
// keys, so that no scenario reuses another's answers (they are keyed by
// document URI and version), and a manifest of them; it returns the
// manifest's URI.
func (h *chaosHarness) batchManifest(ctx context.Context, s *chaosScenario) (string, error) {
	var manifest bytes.Buffer
	for i, doc := range h.batch.docs {
		loc := s3store.Location{Bucket: h.cfg.Bucket, Key: fmt.Sprintf("chaos/%s/doc%02d.txt", s.id, i)}
		if err := h.store.Put(ctx, loc, []byte(doc), "text/plain"); err != nil {
			return "", fmt.Errorf("upload batch document %d: %w", i, err)
		}
		line, err := json.Marshal(map[string]any{"id": fmt.Sprintf("item-%02d", i), "document": loc.String(),
			"question": h.batch.questions[i], "answers": []string{chaosAnswer}})
		if err != nil {
			return "", err
		}
		manifest.Write(append(line, '\n'))
	}
	loc := s3store.Location{Bucket: h.cfg.Bucket, Key: fmt.Sprintf("chaos/%s/manifest.jsonl", s.id)}
	if err := h.store.Put(ctx, loc, manifest.Bytes(), "application/x-ndjson"); err != nil {
		return "", fmt.Errorf("upload the manifest: %w", err)
	}
	return loc.String(), nil
}

// factWhole says whether the planted fact is whole in one of the document's
// chunks.
func factWhole(doc string, tok memagent.Tokenizer, chunkTokens int) (bool, error) {
	idx, err := memagent.PlanChunks(strings.NewReader(doc), tok, chunkTokens)
	if err != nil {
		return false, err
	}
	at := int64(strings.Index(doc, chaosAnswer))
	for _, c := range idx.Chunks {
		if c.Start <= at && at+int64(len(chaosAnswer)) <= c.End {
			return true, nil
		}
	}
	return false, nil
}

// batchInput is the batch every batch scenario starts: one item a run
// (each run continues as new after its item), the long document's child
// carried across every boundary, and heartbeats as the other scenarios'.
func batchInput(manifest string, chunkTokens int) api.BatchQAInput {
	return api.BatchQAInput{
		Manifest: manifest, PageSize: 1, ItemsPerRun: 1, Concurrency: 4,
		Options:      api.ModelOptions{ChunkTokens: chunkTokens},
		ChunksPerRun: 50, Reuse: api.ReuseNone,
	}
}

// runBatch starts the scenario's batch, disturbs it, waits for its result
// through every disturbance and checks that no item was lost, run twice or
// counted twice. It fills the row's answers and memories (every item's,
// in manifest order) for comparison with the clean batch.
func (h *chaosHarness) runBatch(ctx context.Context, s *chaosScenario, c client.Client, disturb func(context.Context, *chaosScenario) error, row *chaosRow) {
	manifest, err := h.batchManifest(ctx, s)
	if err != nil {
		row.Err = err
		return
	}
	if _, err := memclient.New(c, memclient.Options{TaskQueue: s.id}).StartBatch(ctx, batchInput(manifest, h.o.ChunkTokens), memclient.StartOptions{ID: s.id}); err != nil {
		row.Err = fmt.Errorf("start batch: %w", err)
		return
	}
	var res api.BatchQAResult
	awaited := make(chan error, 1)
	go func() { awaited <- chaosAwait(ctx, c, s.id, h.o.Progress, &res) }()
	if disturb != nil {
		if err := disturb(ctx, s); err != nil {
			row.Err = err
			return
		}
	}
	if err := <-awaited; err != nil {
		row.Err = err
		return
	}
	row.Answers = h.batch.items
	row.UsageCalls, row.Repeated = res.Overall.Usage.Calls, res.Overall.Usage.RepeatedCalls
	row.Err = h.checkBatch(ctx, c, s, res, row)
}

// checkBatch checks a finished batch: every item answered once, in the
// result, the report and Temporal, over as many runs as items.
func (h *chaosHarness) checkBatch(ctx context.Context, c client.Client, s *chaosScenario, res api.BatchQAResult, row *chaosRow) error {
	n := h.batch.items
	var errs []error
	if res.Items != n || res.Succeeded != n || res.Failed != 0 || res.Skipped != 0 {
		errs = append(errs, fmt.Errorf("result counts %d items: %d answered, %d failed, %d reused; want %d answered", res.Items, res.Succeeded, res.Failed, res.Skipped, n))
	}
	if res.Runs < n {
		errs = append(errs, fmt.Errorf("the batch took %d runs, want one per item (%d)", res.Runs, n))
	}
	loc, err := s3store.ParseURI(strings.TrimSuffix(res.ReportPrefix, "/") + "/" + api.ReportResultsName)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("report prefix %q: %w", res.ReportPrefix, err))...)
	}
	data, err := h.store.ReadAll(ctx, loc)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("read %s: %w", loc, err))...)
	}
	lines := make([]int, n)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r api.BatchItemResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return errors.Join(append(errs, fmt.Errorf("%s: %w", loc, err))...)
		}
		if r.Seq < 0 || r.Seq >= n {
			errs = append(errs, fmt.Errorf("the report has item %d of %d", r.Seq, n))
			continue
		}
		lines[r.Seq]++
		if r.Status != api.ItemAnswered {
			errs = append(errs, fmt.Errorf("item %d is %s in the report: %s", r.Seq, r.Status, r.Error))
		}
	}
	answers := make([]string, n)
	memories := make([]string, n)
	for seq := range n {
		if lines[seq] != 1 {
			errs = append(errs, fmt.Errorf("item %d has %d lines in the report, want 1", seq, lines[seq]))
		}
		var r api.DocumentQAResult
		id := workflows.SampleWorkflowID(s.id, seq, 0)
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, &r); err != nil {
			errs = append(errs, fmt.Errorf("item %d's run %s: %w", seq, id, err))
			continue
		}
		row.Chunks += r.Chunks
		answers[seq], memories[seq] = r.Answer, r.FinalMemory
	}
	row.answer = summarizeAnswers(answers)
	row.memory = strings.Join(memories, "\x00")
	// Each item's question is its own: its final answer is paid once.
	finals := map[string]int{}
	for _, call := range s.sim.Calls() {
		if call.Kind == simulator.KindFinal {
			finals[call.Question]++
		}
	}
	for i, q := range h.batch.questions {
		if finals[q] == 0 {
			errs = append(errs, fmt.Errorf("item %d was never answered by the model", i))
		}
	}
	return errors.Join(errs...)
}

// summarizeAnswers is "8 × \"4417-ORCHID\"" when every answer is the same,
// else the answers in order.
func summarizeAnswers(answers []string) string {
	if len(answers) > 0 && !slices.ContainsFunc(answers, func(a string) bool { return a != answers[0] }) {
		return fmt.Sprintf("%d × %q", len(answers), answers[0])
	}
	return strings.Join(answers, " | ")
}

// repeatedCalls counts the model calls that repeated one already answered:
// the same kind, question, memory and chunk.
func repeatedCalls(calls []simulator.Call) int {
	type key struct{ kind, question, memory, chunk string }
	seen := map[key]bool{}
	n := 0
	for _, c := range calls {
		k := key{c.Kind, c.Question, c.MemoryIn, c.ChunkSHA256}
		if seen[k] {
			n++
		}
		seen[k] = true
	}
	return n
}

// waitBoundary waits until the batch is at the boundary into run next:
// with stopping, while run next-1 has started its item and waits to carry
// its children over (the quiet period); else as run next has begun. A
// stopping run can be over before it is seen: the boundary after it is
// then the one. It returns the run the boundary leads into.
func waitBoundary(ctx context.Context, c client.Client, id string, next int, stopping bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last api.BatchProgress
	for {
		var p api.BatchProgress
		if chaosProgress(ctx, c, id, &p) == nil {
			last = p
		}
		switch {
		case last.Stage == api.BatchStageReporting || last.Stage == api.BatchStageDone:
			return 0, fmt.Errorf("batch %s ended before run %d", id, next)
		case stopping && last.Run == next-1 && last.Started >= next-1:
			return next, nil
		case stopping && last.Run >= next:
			next = last.Run + 1
		case !stopping && last.Run >= next:
			return last.Run, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("batch %s not at run %d in time (at run %d, %d started)", id, next, last.Run, last.Started)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// boundaryPlan says where the kth of count disturbances of the batch
// falls: the run it leads into (3 to items, spread out; the first run is
// over within a second), and whether it comes while the run before it
// stops or as the run begins (alternately).
func (h *chaosHarness) boundaryPlan(k, count int) (next int, stopping bool) {
	return 3 + k*(h.batch.items-2)/count, k%2 == 0
}

// killWorkerAtBoundaries SIGKILLs the worker process at Kills of the
// batch's continue-as-new boundaries, alternately as a run stops and as the
// next begins, and starts a new one each time.
func (h *chaosHarness) killWorkerAtBoundaries(ctx context.Context, s *chaosScenario) error {
	for k := range h.o.Kills {
		next, stopping := h.boundaryPlan(k, h.o.Kills)
		next, err := waitBoundary(ctx, h.temporal, s.id, next, stopping)
		if err != nil {
			return fmt.Errorf("kill %d: %w", k+1, err)
		}
		if stopping {
			// Somewhere in the quiet period (250 ms at least).
			time.Sleep(time.Duration(h.rng.Int64N(int64(200 * time.Millisecond))))
		}
		s.worker.kill()
		s.disturbed++
		fmt.Fprintf(h.o.Progress, "%s    SIGKILL worker at the boundary into run %d (%s)\n", time.Now().Format("15:04:05"), next, boundaryPhase(stopping))
		if err := h.startWorker(s); err != nil {
			return err
		}
	}
	return nil
}

// restartStackAtBoundaries SIGKILLs the stack process at Restarts of the
// batch's boundaries and restarts it on the same data dir and ports; the
// worker keeps running.
func (h *chaosHarness) restartStackAtBoundaries(ctx context.Context, s *chaosScenario) error {
	for r := range h.o.Restarts {
		next, stopping := h.boundaryPlan(r, h.o.Restarts)
		next, err := waitBoundary(ctx, h.temporal, s.id, next, stopping)
		if err != nil {
			return fmt.Errorf("restart %d: %w", r+1, err)
		}
		if err := h.bounceStack(ctx, r); err != nil {
			return err
		}
		s.disturbed++
		fmt.Fprintf(h.o.Progress, "%s    SIGKILL stack at the boundary into run %d (%s), down %s, restarted\n", time.Now().Format("15:04:05"), next, boundaryPhase(stopping), h.o.Downtime)
	}
	return nil
}

func boundaryPhase(stopping bool) string {
	if stopping {
		return "as the run before it stops"
	}
	return "as it begins"
}
