package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

// FindCheckpointName is the activity that finds where a run can start
// reading: the deepest memory checkpoint of an earlier reading of the
// same chunks.
const FindCheckpointName = actwire.FindCheckpointName

// checkpointArea holds the memory checkpoints, in the worker's bucket:
// checkpoints/<key>/<chain>.json, where key covers everything but the
// text that shaped a memory (checkpointKey) and chain is the hash chain
// of the chunks read (memagent.Chunk.Chain). An operator expires them
// with a lifecycle rule on the prefix; a missing one costs a reading.
const checkpointArea = "checkpoints/"

// checkpointVersion is checkpoint.Version; a checkpoint of another
// version is not used.
const checkpointVersion = 1

// checkpoint is the memory after a chunk, as UpdateMemory left it.
type checkpoint struct {
	Version int `json:"version"`
	// Chunks is how many chunks the memory has read; Chain is the last
	// one's chain link.
	Chunks int    `json:"chunks"`
	Chain  string `json:"chain"`
	Memory string `json:"memory"`
	// Evidence is the chunk's evidence entry, when it changed the memory
	// materially. EvidenceChunks are the chunks of the evidence the run
	// kept before this one, EvidenceDropped how many entries it had
	// dropped: a run that starts here rebuilds the evidence from those
	// chunks' checkpoints, at most MaxEvidence reads.
	Evidence        *api.Evidence `json:"evidence,omitempty"`
	EvidenceChunks  []int         `json:"evidence_chunks,omitempty"`
	EvidenceDropped int           `json:"evidence_dropped,omitempty"`
	// WorkflowID and RunID are the run that wrote it, FirstRunID its
	// chain when the workflow said (UpdateInput.FirstRunID).
	WorkflowID string    `json:"workflow_id"`
	RunID      string    `json:"run_id"`
	FirstRunID string    `json:"first_run_id,omitempty"`
	WrittenAt  time.Time `json:"written_at"`
}

// checkpointKey covers everything besides the chunks' text that shapes a
// memory: the question, the update prompt's template (the final prompt
// does not touch the memory), the model, its sampling options and memory
// budget, the tokenizer and chunk size (also in the chain, through the
// chunk boundaries), and the sample of a rollout group, so that
// independent samples never share a memory.
func (a *Activities) checkpointKey(question string, opts api.ModelOptions, model string, sample int) string {
	opts = opts.WithDefaults()
	tmpl := a.Templates.Update
	if tmpl == "" {
		tmpl = memagent.DefaultTemplates().Update
	}
	b, _ := json.Marshal(struct {
		V           int     `json:"v"`
		Question    string  `json:"question"`
		Template    string  `json:"template"`
		Model       string  `json:"model"`
		Temperature float32 `json:"temperature"`
		TopP        float32 `json:"top_p"`
		MemoryMax   int     `json:"memory_max_tokens"`
		Tokenizer   string  `json:"tokenizer"`
		ChunkTokens int     `json:"chunk_tokens"`
		Sample      int     `json:"sample"`
	}{checkpointVersion, question, tmpl, model, *opts.Temperature, *opts.TopP, opts.MemoryMaxTokens, opts.Tokenizer, opts.ChunkTokens, sample})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

func (a *Activities) checkpointLoc(key, chain string) s3store.Location {
	return s3store.Location{Bucket: a.Bucket, Key: checkpointArea + key + "/" + chain + ".json"}
}

// writeCheckpoint keeps the memory after chunk ch for later runs.
func (a *Activities) writeCheckpoint(ctx context.Context, in actwire.UpdateInput, ch memagent.Chunk, opts api.ModelOptions, out *actwire.UpdateOutput, wf, run string) error {
	if ch.Chain == "" {
		return nil // an index from before chains: nothing to key it by
	}
	// Later runs, anyone's, start from a checkpoint, and the memory it
	// keeps follows from the memory the caller sent: only memagent's own
	// runs write one (a neighbour's workflow can schedule UpdateMemory on
	// memagent's task queue by name).
	if err := a.callerIs(ctx, api.DocumentQAName, api.ReviewDocumentName); err != nil {
		return err
	}
	key := a.checkpointKey(in.Question, opts, a.modelName(opts), in.Sample)
	cp := checkpoint{Version: checkpointVersion, Chunks: ch.Index + 1, Chain: ch.Chain, Memory: out.Memory,
		Evidence: out.Evidence, EvidenceChunks: in.EvidenceChunks, EvidenceDropped: in.EvidenceDropped,
		WorkflowID: wf, RunID: run, FirstRunID: in.FirstRunID, WrittenAt: time.Now().UTC()}
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	if err := a.putJSON(sctx, a.checkpointLoc(key, ch.Chain), cp); err != nil {
		return fmt.Errorf("write checkpoint of chunk %d: %w", ch.Index, err)
	}
	return nil
}

// findCheckpoint looks for the deepest checkpoint whose chain is the
// run's own chunks' chain, with the run's key. The chain comes from the
// index of the document the run reads, which the worker made from bytes
// the run may read (the check is the one chunk reads get), so that a
// checkpoint never carries text across a read boundary.
//
// Checkpoints of one reading are written chunk after chunk, so whether
// one exists for the first k chunks is, but for expired ones, true up to
// some depth and false past it: the search checks the last chunk, then
// halves. A checkpoint it misses costs chunks read again, never a wrong
// memory.
func (a *Activities) findCheckpoint(ctx context.Context, in actwire.FindCheckpointInput) (*actwire.FindCheckpointOutput, error) {
	ctx, hb := a.beginHeartbeat(ctx)
	defer hb.stop()
	indexLoc, idx, err := a.workerIndex(ctx, in.IndexURI)
	if err != nil {
		return nil, err
	}
	if err := a.allowIndexedRead(in.Document, in.ETag, in.IndexURI, indexLoc, idx); err != nil {
		return nil, err
	}
	n := len(idx.Chunks)
	if n == 0 || idx.Chunks[n-1].Chain == "" {
		return &actwire.FindCheckpointOutput{}, nil
	}
	opts := in.Options.WithDefaults()
	key := a.checkpointKey(in.Question, opts, a.modelName(opts), in.Sample)
	read := func(i int) (*checkpoint, error) { return a.readCheckpoint(ctx, key, idx, i) }
	found, err := deepestCheckpoint(n, read)
	if err != nil {
		return nil, err
	}
	if found == nil {
		return &actwire.FindCheckpointOutput{}, nil
	}
	out, own, err := a.resumeFrom(ctx, in, idx, found, read)
	if err != nil {
		return nil, err
	}
	for _, c := range idx.Chunks[:min(out.Chunks, n)] {
		out.Tokens += int64(c.Tokens)
	}
	a.logger().InfoContext(ctx, "checkpoint found", "chunks", out.Chunks, "of", n, "own_chain", own)
	return out, nil
}

// readCheckpoint reads the checkpoint of the first i+1 chunks of idx
// under key: nil when there is none, or when what is there is not one
// this worker wrote for these chunks (they are read again).
func (a *Activities) readCheckpoint(ctx context.Context, key string, idx *memagent.ChunkIndex, i int) (*checkpoint, error) {
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	data, err := a.Store.ReadAll(sctx, a.checkpointLoc(key, idx.Chunks[i].Chain))
	if errors.Is(err, s3store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	var cp checkpoint
	if json.Unmarshal(data, &cp) != nil || cp.Version != checkpointVersion || cp.Chain != idx.Chunks[i].Chain || cp.Chunks != i+1 {
		return nil, nil // not one this worker wrote for these chunks: read again
	}
	return &cp, nil
}

// deepestCheckpoint searches n chunks for the deepest checkpoint read
// finds: the last chunk first (a question asked again of the same text),
// then by halves. It returns nil when there is none.
func deepestCheckpoint(n int, read func(int) (*checkpoint, error)) (*checkpoint, error) {
	// lo is the deepest chunk known to have a checkpoint (-1: none), hi
	// the shallowest known to have none.
	lo, hi := -1, n
	var found *checkpoint
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if found == nil && lo == -1 && hi == n {
			mid = n - 1 // a question asked again of the same text
		}
		cp, err := read(mid)
		if err != nil {
			return nil, err
		}
		if cp != nil {
			lo, found = mid, cp
		} else {
			hi = mid
		}
	}
	return found, nil
}

// resumeFrom is the output for a run that resumes from found: its chunks,
// memory and evidence, cited in idx, and the reading's names when the
// reading is the run's own chain (own).
func (a *Activities) resumeFrom(ctx context.Context, in actwire.FindCheckpointInput, idx *memagent.ChunkIndex, found *checkpoint, read func(int) (*checkpoint, error)) (*actwire.FindCheckpointOutput, bool, error) {
	out := &actwire.FindCheckpointOutput{Chunks: found.Chunks, Memory: found.Memory}
	// The reading that wrote it is named to its own chain only: the same
	// text may be another caller's, under another name.
	own := found.WorkflowID != "" && found.WorkflowID == workflowID(ctx) && found.FirstRunID != "" && found.FirstRunID == in.FirstRunID
	if own {
		out.WorkflowID, out.RunID = found.WorkflowID, found.RunID
	}
	var err error
	out.Evidence, out.EvidenceDropped, err = a.rebuildEvidence(ctx, read, found)
	if err != nil {
		return nil, own, err
	}
	// The evidence is cited again in the reader's own document or corpus,
	// by offset, as a chunk read now is: a checkpoint of the same text
	// under another name cites nothing of that name.
	out.Evidence = reciteEvidence(idx, out.Evidence)
	return out, own, nil
}

// reciteEvidence cites evidence entries from a checkpoint in idx, the
// reader's index (whose chunks have the checkpoint's chain, so the same
// bytes at the same offsets): the pages of its page map, the documents
// and pages of its corpus, exactly as UpdateMemory cites a chunk it reads.
// An entry whose range is not one of idx's chunks is dropped.
func reciteEvidence(idx *memagent.ChunkIndex, ev []api.Evidence) []api.Evidence {
	out := ev[:0:0]
	for _, e := range ev {
		if e.Chunk < 0 || e.Chunk >= len(idx.Chunks) || idx.Chunks[e.Chunk].Start != e.Start || idx.Chunks[e.Chunk].End != e.End {
			continue
		}
		e.Document, e.Pages = "", idx.PageMap.Ref(e.Start, e.End)
		if p := e.Passage; p != nil {
			if p.Start < e.Start || p.End > e.End || p.End <= p.Start {
				e.Passage = nil
			} else {
				cp := *p
				cp.Pages, cp.Text = idx.PageMap.Ref(cp.Start, cp.End), ""
				e.Passage = &cp
			}
		}
		citeEvidence(idx.Corpus, &e)
		out = append(out, e)
	}
	return out
}

// rebuildEvidence is the evidence the reading that wrote the checkpoint
// had after its chunk: the entries it kept before (from their chunks'
// checkpoints) and the chunk's own, pruned against the chunk's memory as
// the run itself does. A checkpoint that is gone leaves its entry out.
func (a *Activities) rebuildEvidence(ctx context.Context, read func(int) (*checkpoint, error), last *checkpoint) ([]api.Evidence, int, error) {
	if len(last.EvidenceChunks) > 2*api.MaxEvidence {
		return nil, 0, nil // more than a run keeps: not one this worker wrote
	}
	kept := make([]*checkpoint, len(last.EvidenceChunks))
	errs := make([]error, len(kept))
	var wg sync.WaitGroup
	for i, c := range last.EvidenceChunks {
		if c < 0 || c >= last.Chunks-1 {
			continue // not a chunk before this one: not one this worker wrote
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			kept[i], errs[i] = read(c)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	var ev []api.Evidence
	for _, cp := range kept {
		if cp != nil && cp.Evidence != nil {
			ev = append(ev, *cp.Evidence)
		}
	}
	dropped := last.EvidenceDropped
	if last.Evidence != nil {
		var d int
		ev, d = report.PruneEvidence(append(ev, *last.Evidence), last.Memory, api.MaxEvidence)
		dropped += d
	}
	return ev, dropped, nil
}
