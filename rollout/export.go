package rollout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3client"
)

// Store is the part of S3 the export reads; the worker's object stores
// have it.
type Store interface {
	ReadAll(ctx context.Context, loc s3client.Location) ([]byte, error)
	// ReadRange reads bytes [start, end) of an object; an empty etag
	// pins no version.
	ReadRange(ctx context.Context, loc s3client.Location, start, end int64, etag string) ([]byte, error)
}

// Reward metrics: the MemAgent paper's scores (memagent.ScorePaper) of a
// sample's answer, the best over the item's gold answers.
const (
	RewardSubEM = "sub_em"
	RewardEM    = "em"
	RewardF1    = "f1"
)

// Loss masks of a turn.
const (
	// MaskUpdate trains on a memory-update turn.
	MaskUpdate = 1
	// MaskFinal leaves the final-answer turn out of the loss.
	MaskFinal = 0
)

// Options configure an export.
type Options struct {
	// Reward is RewardSubEM (the default), RewardEM or RewardF1.
	Reward string
	// Templates are the prompt templates the worker ran with; the zero
	// value is the built-in ones. A prompt rebuilt with other templates
	// than the worker's fails the export, as it is not what was sent.
	Templates memagent.Templates
}

// Message is one chat message as sent to the model.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Chunk is the document's byte range [start, end) a memory update read.
type Chunk struct {
	Index  int   `json:"index"`
	Start  int64 `json:"start"`
	End    int64 `json:"end"`
	Tokens int   `json:"tokens"`
}

// Sampling is what the turn was sampled with. A temperature of 0 is sent
// as the smallest positive float32 (greedy in effect).
type Sampling struct {
	Temperature float32 `json:"temperature"`
	TopP        float32 `json:"top_p"`
	MaxTokens   int     `json:"max_tokens"`
}

// Record is one turn of one sample: one line of the export.
type Record struct {
	// Group is the item's id (the manifest's, else its seq): the samples
	// of one group answer the same question about the same document.
	Group  string `json:"group"`
	Seq    int    `json:"seq"`
	Sample int    `json:"sample"`
	// Turn counts from 0: the memory updates in document order, then the
	// final answer, Turns in all (chunks + 1).
	Turn  int    `json:"turn"`
	Turns int    `json:"turns"`
	Kind  string `json:"kind"`
	// Messages are exactly the chat messages sent, Response exactly the
	// text returned (without a reasoning block, which the worker drops
	// before it keeps a completion).
	Messages []Message `json:"messages"`
	Response string    `json:"response"`
	LossMask int       `json:"loss_mask"`
	// Reward is SampleReward / Turns: the turns' rewards sum to the
	// sample's.
	Reward       float64 `json:"reward"`
	SampleReward float64 `json:"sample_reward"`
	RewardMetric string  `json:"reward_metric"`
	// Chunk is the memory update's byte range; nil for the final answer.
	Chunk            *Chunk   `json:"chunk,omitempty"`
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	FinishReason     string   `json:"finish_reason"`
	Model            string   `json:"model"`
	Sampling         Sampling `json:"sampling"`
	// PromptVerified says the rebuilt prompt's SHA-256 equals the one the
	// worker stored when it sent the prompt; false only for runs written
	// before workers stored it.
	PromptVerified bool   `json:"prompt_verified"`
	WorkflowID     string `json:"workflow_id"`
}

// Stats count what an export wrote and left out.
type Stats struct {
	// Samples were exported, with Turns records in all.
	Samples int `json:"samples"`
	Turns   int `json:"turns"`
	// Groups counts the items with at least one exported sample.
	Groups int `json:"groups"`
	// Failed samples have no answer; Unscored ones no gold answers to
	// reward them against. Neither is exported.
	Failed   int `json:"failed"`
	Unscored int `json:"unscored"`
	// Unverified counts turns whose prompt had no stored digest.
	Unverified int `json:"unverified"`
	// Incomplete are the answered samples left out because the batch's
	// run of them does not hold every turn, in results order; the other
	// samples of their groups are exported.
	Incomplete []Incomplete `json:"incomplete,omitempty"`
}

// Incomplete is an answered sample that the export left out because the
// batch did not take all its turns in the sample's own run: its answer
// was reused from an earlier reading, its run started from a memory
// checkpoint of another run, or traces the run wrote are gone.
type Incomplete struct {
	Group  string `json:"group"`
	Seq    int    `json:"seq"`
	Sample int    `json:"sample"`
	// WorkflowID is the run the batch's outcome names.
	WorkflowID string `json:"workflow_id"`
	// Turns is the sample's turn count (chunks + 1), Missing how many of
	// them the export could not take from the sample's own run.
	Turns   int `json:"turns"`
	Missing int `json:"missing"`
	// Reason says why, in a sentence.
	Reason string `json:"reason"`
}

// ReadReport reads a batch's report.json (BatchQAResult.ReportURI).
func ReadReport(ctx context.Context, store Store, reportURI string) (*api.BatchReport, error) {
	data, err := readURI(ctx, store, reportURI)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var rep api.BatchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("decode report %s: %w", reportURI, err)
	}
	return &rep, nil
}

// Export writes the rollouts of the batch whose report.json is at
// reportURI to w, as JSON Lines of Record in the order of results.jsonl
// (item, then sample), then each sample's turns in order. A sample whose
// turns are not all in its own run is left out and listed in
// Stats.Incomplete, never an error: the export of the others goes on.
// Each sample's turns are found through its own result (result_uri, then
// the trace_prefix it names), wherever the run wrote them.
func Export(ctx context.Context, store Store, reportURI string, opts Options, w io.Writer) (Stats, error) {
	var st Stats
	metric, err := rewardMetric(opts.Reward)
	if err != nil {
		return st, err
	}
	rep, err := ReadReport(ctx, store, reportURI)
	if err != nil {
		return st, err
	}
	results, err := readURI(ctx, store, rep.ResultsURI)
	if err != nil {
		return st, fmt.Errorf("read results: %w", err)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	lastGroup := -1
	for n, line := range bytes.Split(results, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r api.BatchItemResult
		if err := json.Unmarshal(line, &r); err != nil {
			return st, fmt.Errorf("results %s line %d: %w", rep.ResultsURI, n+1, err)
		}
		switch {
		case r.Status == api.ItemFailed || r.ResultURI == "":
			st.Failed++
			continue
		case len(r.GoldAnswers) == 0:
			st.Unscored++
			continue
		}
		recs, inc, err := sampleTurns(ctx, store, r, metric, opts.Templates)
		if err != nil {
			return st, fmt.Errorf("item %d sample %d: %w", r.Seq, r.Sample, err)
		}
		if inc != nil {
			st.Incomplete = append(st.Incomplete, *inc)
			continue
		}
		for _, rec := range recs {
			if err := enc.Encode(rec); err != nil {
				return st, err
			}
			if !rec.PromptVerified {
				st.Unverified++
			}
		}
		st.Samples++
		st.Turns += len(recs)
		if r.Seq != lastGroup {
			st.Groups++
			lastGroup = r.Seq
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
	return st, bw.Flush()
}

func rewardMetric(name string) (string, error) {
	switch name {
	case "":
		return RewardSubEM, nil
	case RewardSubEM, RewardEM, RewardF1:
		return name, nil
	}
	return "", fmt.Errorf("reward %q is not %q, %q or %q", name, RewardSubEM, RewardEM, RewardF1)
}

// SampleReward scores an answer against gold answers with the paper's
// metric: the best over the gold answers.
func SampleReward(answer string, golds []string, metric string) float64 {
	best := 0.0
	for _, g := range golds {
		s := memagent.ScorePaper(answer, g)
		v := s.SubEM
		switch metric {
		case RewardEM:
			v = s.EM
		case RewardF1:
			v = s.F1
		}
		best = max(best, v)
	}
	return best
}

// sampleTurns rebuilds the turns of one answered sample from its
// result.json and chunk traces. A sample whose turns are not all in its
// own run comes back as an Incomplete instead; an error is one that no
// sample would escape (a store that fails, other templates than the
// worker's).
func sampleTurns(ctx context.Context, store Store, r api.BatchItemResult, metric string, tmpl memagent.Templates) ([]Record, *Incomplete, error) {
	group := r.ID
	if group == "" {
		group = strconv.Itoa(r.Seq)
	}
	incomplete := func(turns, missing int, reason string, args ...any) *Incomplete {
		return &Incomplete{Group: group, Seq: r.Seq, Sample: r.Sample, WorkflowID: r.WorkflowID,
			Turns: turns, Missing: missing, Reason: fmt.Sprintf(reason, args...)}
	}
	res, inc, err := loadSample(ctx, store, r, incomplete)
	if res == nil {
		return nil, inc, err
	}
	turns := res.Chunks + 1
	reward := SampleReward(r.Answer, r.GoldAnswers, metric)
	s := sample{res: res, tmpl: tmpl, opts: res.Options.WithDefaults(), incomplete: incomplete, base: Record{
		Group: group, Seq: r.Seq, Sample: r.Sample, Turns: turns,
		Reward: reward / float64(turns), SampleReward: reward, RewardMetric: metric,
		WorkflowID: res.WorkflowID,
	}}
	out, inc, err := s.updates(ctx, store)
	if inc != nil || err != nil {
		return nil, inc, err
	}
	final, err := s.final()
	if err != nil {
		return nil, nil, err
	}
	return append(out, final), nil, nil
}

// incompleteFunc describes a sample whose turns cannot all be rebuilt.
type incompleteFunc func(turns, missing int, reason string, args ...any) *Incomplete

// loadSample reads an answered sample's result.json. It returns no result,
// but an Incomplete, for a sample whose turns were not all taken in its own
// run (a reused answer, a run started from another's checkpoint) or whose
// result is gone.
func loadSample(ctx context.Context, store Store, r api.BatchItemResult, incomplete incompleteFunc) (*actwire.StoredResult, *Incomplete, error) {
	if r.Status == api.ItemReused {
		// The answer is an earlier reading's, kept under answers/: none of
		// its turns were taken by this batch, whatever that reading holds.
		return nil, incomplete(r.Chunks+1, r.Chunks+1, "its answer was reused from %s, an earlier reading: none of its turns were taken in this batch", r.WorkflowID), nil
	}
	data, err := readURI(ctx, store, r.ResultURI)
	if errors.Is(err, s3client.ErrNotFound) {
		return nil, incomplete(r.Chunks+1, r.Chunks+1, "its result %s does not exist", r.ResultURI), nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read result: %w", err)
	}
	var res actwire.StoredResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, nil, fmt.Errorf("decode result %s: %w", r.ResultURI, err)
	}
	if res.ChunksReused > 0 {
		from := "an earlier reading"
		if res.ReusedFrom != nil {
			from = res.ReusedFrom.WorkflowID
		}
		return nil, incomplete(res.Chunks+1, res.ChunksReused, "its run started from the memory checkpoint of %s after %d of %d chunks: those memory updates were made there, not in this batch",
			from, res.ChunksReused, res.Chunks), nil
	}
	return &res, nil, nil
}

// sample is one answered sample whose turns are being rebuilt.
type sample struct {
	res        *actwire.StoredResult
	tmpl       memagent.Templates
	opts       api.ModelOptions
	incomplete incompleteFunc
	// base is every record's group, reward and run.
	base Record
}

// updates rebuilds the memory-update turns, one per chunk, from the chunk
// traces, or says why they cannot all be.
func (s sample) updates(ctx context.Context, store Store) ([]Record, *Incomplete, error) {
	res, turns := s.res, s.res.Chunks+1
	docLoc, err := s3client.ParseURI(res.Document)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Record, 0, turns)
	memory := memagent.InitialMemory
	// Every trace is looked at, so that an incomplete sample says how many
	// turns it lacks; nothing is rebuilt once one is missing.
	gone, unkept := 0, 0
	for i := range res.Chunks {
		tr, err := readTrace(ctx, store, res.TracePrefix, i)
		switch {
		case errors.Is(err, s3client.ErrNotFound):
			gone++
			continue
		case err != nil:
			return nil, nil, err
		case tr.Kept == nil:
			unkept++
			continue
		case gone > 0 || unkept > 0:
			continue
		}
		text, err := store.ReadRange(ctx, docLoc, tr.Start, tr.End, "")
		if errors.Is(err, s3client.ErrNotFound) {
			return nil, s.incomplete(turns, turns, "its document %s no longer exists, so its prompts cannot be rebuilt", res.Document), nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read chunk %d of %s: %w", i, res.Document, err)
		}
		rec, err := s.update(i, tr, memory, string(text))
		if err != nil {
			return nil, nil, err
		}
		out = append(out, rec)
		memory = tr.MemoryAfter
	}
	if res.Kept == nil {
		unkept++
	}
	switch {
	case gone > 0:
		return nil, s.incomplete(turns, gone+unkept, "%d of its %d chunk traces are not under %s", gone, res.Chunks, res.TracePrefix), nil
	case unkept > 0:
		return nil, s.incomplete(turns, unkept, "its run predates kept completions: the responses of %d turns are unknown", unkept), nil
	case memory != res.FinalMemory:
		return nil, s.incomplete(turns, turns, "its traces are of another run: the last chunk's memory is not the memory its answer was asked from"), nil
	}
	return out, nil, nil
}

// update is chunk i's memory-update turn, its prompt rebuilt from the
// memory before it and the chunk's text.
func (s sample) update(i int, tr *actwire.ChunkTrace, memory, text string) (Record, error) {
	prompt := s.tmpl.RenderUpdate(s.res.Question, memory, text)
	verified, err := verify(prompt, tr.PromptSHA256, fmt.Sprintf("chunk %d", i))
	if err != nil {
		return Record{}, err
	}
	rec := s.base
	rec.Turn, rec.Kind, rec.LossMask = i, "update", MaskUpdate
	rec.Messages = []Message{{Role: "user", Content: prompt}}
	rec.Response = tr.Kept.Text
	rec.Chunk = &Chunk{Index: i, Start: tr.Start, End: tr.End, Tokens: tr.ChunkTokens}
	rec.PromptTokens, rec.CompletionTokens, rec.FinishReason = tr.Kept.PromptTokens, tr.Kept.CompletionTokens, tr.Kept.FinishReason
	rec.Model = tr.Kept.Model
	rec.Sampling = Sampling{Temperature: *s.opts.Temperature, TopP: *s.opts.TopP, MaxTokens: s.opts.MemoryMaxTokens}
	rec.PromptVerified = verified
	return rec, nil
}

// final is the answer turn, asked from the final memory.
func (s sample) final() (Record, error) {
	res := s.res
	prompt := s.tmpl.RenderFinal(res.Question, res.FinalMemory)
	verified, err := verify(prompt, res.PromptSHA256, "final answer")
	if err != nil {
		return Record{}, err
	}
	rec := s.base
	rec.Turn, rec.Kind, rec.LossMask = res.Chunks, "final", MaskFinal
	rec.Messages = []Message{{Role: "user", Content: prompt}}
	rec.Response = res.Completion
	rec.PromptTokens, rec.CompletionTokens, rec.FinishReason = res.Kept.PromptTokens, res.Kept.CompletionTokens, res.Kept.FinishReason
	rec.Model = res.Kept.Model
	rec.Sampling = Sampling{Temperature: *s.opts.Temperature, TopP: *s.opts.TopP, MaxTokens: s.opts.AnswerMaxTokens}
	rec.PromptVerified = verified
	return rec, nil
}

// verify compares a rebuilt prompt with the digest stored when it was
// sent; an empty digest (a run from before workers stored it) proves
// nothing and fails nothing.
func verify(prompt, stored, what string) (bool, error) {
	if stored == "" {
		return false, nil
	}
	if actwire.PromptDigest(prompt) != stored {
		return false, fmt.Errorf("the prompt of the %s rebuilt from the stored memory and chunk differs from the one sent: pass the prompt templates the worker ran with, and check the document was not replaced since", what)
	}
	return true, nil
}

// readTrace reads one chunk's trace; prefix is QAResult.TracePrefix (the
// run's output prefix + "chunks/").
func readTrace(ctx context.Context, store Store, prefix string, chunk int) (*actwire.ChunkTrace, error) {
	uri := prefix + fmt.Sprintf("%06d.json", chunk)
	data, err := readURI(ctx, store, uri)
	if err != nil {
		return nil, fmt.Errorf("read trace of chunk %d: %w", chunk, err)
	}
	var tr actwire.ChunkTrace
	if err := json.Unmarshal(data, &tr); err != nil {
		return nil, fmt.Errorf("decode trace %s: %w", uri, err)
	}
	if tr.Chunk != chunk {
		return nil, fmt.Errorf("trace %s is of chunk %d", uri, tr.Chunk)
	}
	return &tr, nil
}

func readURI(ctx context.Context, store Store, uri string) ([]byte, error) {
	loc, err := s3client.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	return store.ReadAll(ctx, loc)
}
