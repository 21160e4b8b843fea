package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// The corpus comparison: 40 generated documents read as one stream, then
// the same corpus grown by a 41st document of about 1% of it, then with
// one sentence replaced at about 60% of its depth; each change is read
// from the deepest memory checkpoint and afresh, against a simulator
// whose answer is a hash of every chunk read (PolicyChain), so that the
// two answers agree exactly when the resumed reading is right.
const (
	corpusDocs      = 40
	corpusDocTokens = 50_000
	// corpusGrowTokens is the appended document: 1% of the corpus.
	corpusGrowTokens = 20_000
	// corpusEdited is the document edited, counting from 1; the edit is
	// in its middle, at about 59% of the corpus.
	corpusEdited = 24
	// corpusLatency is the simulator's fixed cost of a call.
	corpusLatency = 20 * time.Millisecond
)

// corpusEdit replaces one sentence of the edited document; its words are
// not all filler words, so it differs from any sentence it replaces.
const corpusEdit = "The ferry carried a copper lantern across the harbor at dawn."

// corpusReading is one DocumentQA run over a corpus.
type corpusReading struct {
	Chunks, Reused, Calls int
	Tokens                int64
	Wall                  time.Duration
	Answer                string
	// Stream is the s3:// URI of the assembled stream the run read.
	Stream string
}

// corpusCase is one state of the corpus: read afresh, and, after a
// change, resumed from the earlier readings' checkpoints.
type corpusCase struct {
	Name string
	// Prepare is how long assembling and indexing the corpus took (an
	// Estimate run before either reading, so that both find it made).
	Prepare time.Duration
	// Unchanged is how many leading chunks of the stream have the same
	// bytes and bounds as in the previous state's stream: what a resumed
	// reading can skip.
	Unchanged int
	Resumed   *corpusReading // nil for the first reading
	Fresh     corpusReading
}

// corpusResult is the three states of the corpus: as first asked, grown
// and edited.
type corpusResult struct {
	Docs int
	// Tokens and Bytes are the first state's stream.
	Tokens, Bytes int64
	// AppendedTokens is the grown state's new document.
	AppendedTokens int64
	// EditDepth is the first changed byte of the edited state's stream,
	// as a fraction of the stream.
	EditDepth            float64
	First, Grown, Edited corpusCase
}

// corpusText is filler of about the given number of tokens, deterministic
// in seed.
func corpusText(tok memagent.Tokenizer, tokens int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for n := 0; n < tokens; {
		p := docconvtest.Paragraph(rng, 120) + "\n\n"
		n += tok.Count(p)
		b.WriteString(p)
	}
	return b.String()
}

// editMiddle replaces the first whole sentence past the middle of text
// with corpusEdit.
func editMiddle(text string) (string, error) {
	mid := len(text) / 2
	i := strings.Index(text[mid:], ". ")
	if i < 0 {
		return "", fmt.Errorf("no sentence past byte %d", mid)
	}
	start := mid + i + 2
	j := strings.Index(text[start:], ".")
	if j < 0 {
		return "", fmt.Errorf("no sentence end past byte %d", start)
	}
	return text[:start] + corpusEdit + text[start+j+1:], nil
}

// runCorpus reads the corpus in its three states on a worker of its own.
func runCorpus(ctx context.Context, env *benchEnv) (*corpusResult, error) {
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Latency: corpusLatency, Policy: simulator.PolicyChain})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := env.cfg
	cfg.ModelURLs = []string{srv.URL + "/v1"}
	cfg.TaskQueue = "bench-corpus"
	stop, err := env.startWorker(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer stop()

	put := func(name, text string) (string, error) {
		loc := s3store.Location{Bucket: cfg.Bucket, Key: "bench/corpus/" + name}
		if err := env.store.Put(ctx, loc, []byte(text), "text/plain"); err != nil {
			return "", err
		}
		return loc.String(), nil
	}
	var docs []string
	var edited string
	for i := range corpusDocs {
		text := corpusText(env.tok, corpusDocTokens, uint64(700+i))
		if i+1 == corpusEdited {
			if edited, err = editMiddle(text); err != nil {
				return nil, err
			}
		}
		u, err := put(fmt.Sprintf("doc-%02d.txt", i+1), text)
		if err != nil {
			return nil, err
		}
		docs = append(docs, u)
	}
	benchf("corpus: %d documents uploaded", len(docs))

	stamp := time.Now().Unix()
	start := func(id, workflow string, in any) (client.WorkflowRun, error) {
		return env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("bench-corpus-%s-%d", id, stamp), TaskQueue: cfg.TaskQueue}, workflow, in)
	}
	prepare := func(id string, docs []string) (time.Duration, error) {
		began := time.Now()
		run, err := start(id+"-prepare", api.EstimateName, api.EstimateInput{Documents: docs, Questions: []string{docgen.Question}})
		if err != nil {
			return 0, err
		}
		if err := run.Get(ctx, nil); err != nil {
			return 0, fmt.Errorf("prepare %s: %w", id, err)
		}
		return time.Since(began), nil
	}
	ask := func(id string, docs []string, reuse string) (corpusReading, error) {
		before := sim.Stats().Latency.Count
		began := time.Now()
		run, err := start(id, api.DocumentQAName, api.DocumentQAInput{Documents: docs, Question: docgen.Question, Reuse: reuse})
		if err != nil {
			return corpusReading{}, err
		}
		var out api.DocumentQAResult
		if err := run.Get(ctx, &out); err != nil {
			return corpusReading{}, fmt.Errorf("%s: %w", id, err)
		}
		r := corpusReading{Chunks: out.Chunks, Reused: out.ChunksReused, Calls: sim.Stats().Latency.Count - before, Tokens: out.Tokens,
			Wall: time.Since(began), Answer: out.Answer, Stream: out.Document}
		if r.Calls != out.Usage.Calls {
			return r, fmt.Errorf("%s: the simulator served %d calls, the result's usage counts %d", id, r.Calls, out.Usage.Calls)
		}
		if reuse == api.ReuseNone && (r.Reused != 0 || r.Calls != r.Chunks+1) {
			return r, fmt.Errorf("%s: a fresh reading reused %d chunks and made %d calls for %d chunks", id, r.Reused, r.Calls, r.Chunks)
		}
		benchf("corpus: %s: %d chunks, %d reused, %d calls, %s", id, r.Chunks, r.Reused, r.Calls, r.Wall.Round(10*time.Millisecond))
		return r, nil
	}
	// both reads a changed corpus resumed and then afresh: in that order,
	// since the fresh reading leaves checkpoints of every chunk.
	both := func(c *corpusCase, id string, docs []string, prev string) error {
		var err error
		if c.Prepare, err = prepare(id, docs); err != nil {
			return err
		}
		resumed, err := ask(id, docs, "")
		if err != nil {
			return err
		}
		c.Resumed = &resumed
		if c.Fresh, err = ask(id+"-fresh", docs, api.ReuseNone); err != nil {
			return err
		}
		if resumed.Answer != c.Fresh.Answer {
			return fmt.Errorf("%s: the resumed reading answered %q, the fresh one %q: a checkpoint carried the wrong memory", c.Name, resumed.Answer, c.Fresh.Answer)
		}
		c.Unchanged, err = unchangedChunks(ctx, env, prev, resumed.Stream, resumed.Chunks)
		return err
	}

	res := &corpusResult{Docs: corpusDocs}
	res.First.Name = fmt.Sprintf("%d documents, first reading", corpusDocs)
	if res.First.Prepare, err = prepare("first", docs); err != nil {
		return nil, err
	}
	if res.First.Fresh, err = ask("first", docs, ""); err != nil {
		return nil, err
	}
	if res.First.Fresh.Reused != 0 {
		return nil, fmt.Errorf("the first reading reused %d chunks", res.First.Fresh.Reused)
	}
	first, err := readStream(ctx, env, res.First.Fresh.Stream)
	if err != nil {
		return nil, err
	}
	res.Tokens, res.Bytes = res.First.Fresh.Tokens, int64(len(first))

	grow := corpusText(env.tok, corpusGrowTokens, 741)
	res.AppendedTokens = int64(env.tok.Count(grow))
	u, err := put(fmt.Sprintf("doc-%02d.txt", corpusDocs+1), grow)
	if err != nil {
		return nil, err
	}
	grown := append(slices.Clone(docs), u)
	res.Grown.Name = fmt.Sprintf("document %d appended (+%.1f%%)", corpusDocs+1, 100*float64(res.AppendedTokens)/float64(res.Tokens))
	if err := both(&res.Grown, "grown", grown, res.First.Fresh.Stream); err != nil {
		return nil, err
	}

	// The edit is a new version of document 24's object: the same URI,
	// so the header line that names it is unchanged.
	if _, err := put(fmt.Sprintf("doc-%02d.txt", corpusEdited), edited); err != nil {
		return nil, err
	}
	res.Edited.Name = fmt.Sprintf("a sentence of document %d replaced", corpusEdited)
	if err := both(&res.Edited, "edited", grown, res.Grown.Resumed.Stream); err != nil {
		return nil, err
	}
	before, err := readStream(ctx, env, res.Grown.Resumed.Stream)
	if err != nil {
		return nil, err
	}
	after, err := readStream(ctx, env, res.Edited.Resumed.Stream)
	if err != nil {
		return nil, err
	}
	res.EditDepth = float64(firstDifference(before, after)) / float64(len(before))
	return res, nil
}

func readStream(ctx context.Context, env *benchEnv, uri string) ([]byte, error) {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", uri, err)
	}
	return env.store.ReadAll(ctx, loc)
}

// firstDifference is the offset of the first byte where a and b differ,
// or the shorter one's length.
func firstDifference(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// unchangedChunks plans the chunks of the streams before and after a
// change, as the worker does, and counts the leading chunks of the new
// stream with the same bounds as the old one's that end before the first
// changed byte: the chunks a resumed reading needs not read again. It is
// worked out from the bytes, not from the worker's hash chain, so that it
// checks the chain. chunks is what the worker made of the new stream.
func unchangedChunks(ctx context.Context, env *benchEnv, before, after string, chunks int) (int, error) {
	a, err := readStream(ctx, env, before)
	if err != nil {
		return 0, err
	}
	b, err := readStream(ctx, env, after)
	if err != nil {
		return 0, err
	}
	pa, err := memagent.PlanChunks(bytes.NewReader(a), env.tok, api.DefaultChunkTokens)
	if err != nil {
		return 0, err
	}
	pb, err := memagent.PlanChunks(bytes.NewReader(b), env.tok, api.DefaultChunkTokens)
	if err != nil {
		return 0, err
	}
	if len(pb.Chunks) != chunks {
		return 0, fmt.Errorf("the bench plans %d chunks of %s, the worker %d: the expectation would not be like for like", len(pb.Chunks), after, chunks)
	}
	diff := int64(firstDifference(a, b))
	n := 0
	for n < min(len(pa.Chunks), len(pb.Chunks)) {
		ca, cb := pa.Chunks[n], pb.Chunks[n]
		if ca.Start != cb.Start || ca.End != cb.End || cb.End > diff {
			break
		}
		n++
	}
	return n, nil
}

// writeCorpus writes the corpus section.
func writeCorpus(w io.Writer, r *corpusResult) {
	fmt.Fprintf(w, "## Corpora: reading again from a checkpoint\n\n"+
		"A corpus of %d generated text documents of about %dK tokens each (%d tokens, %.1f MB as the stream read, Qwen tokens, chunks of 5,000 tokens, the default), asked one `DocumentQA` question with `documents`; then grown by document %d, of %d tokens (about 1%%), appended, then with one sentence replaced in the middle of document %d (a new version of its object, at %.0f%% of the stream's bytes). "+
		"Each changed corpus is asked twice, one run after the other: resumed (the default `reuse`, starting from the deepest memory checkpoint whose chunk hash chain is its own), then as a fresh full reading (`reuse: \"none\"`, a workflow id of its own), in that order because the fresh reading also leaves a checkpoint after every chunk. "+
		"The simulator answers with a hash of the question and every chunk read, in order (`simulator.PolicyChain`), at a fixed %d ms a call, so the resumed answer equals the fresh one only if the checkpoint held the memory a full reading has at that chunk; the bench fails if they differ. "+
		"One worker of its own on the embedded stack (the server settings at the top of this file). Before each state's readings an `Estimate` run assembles the stream and indexes its chunks, so that both readings find them made (it took %.1f s, %.1f s and %.1f s for the three states); wall is from starting the run to its result, model calls are what the simulator served (equal to the result's `usage.calls`).\n\n",
		r.Docs, corpusDocTokens/1000, r.Tokens, float64(r.Bytes)/1e6, r.Docs+1, r.AppendedTokens, corpusEdited, 100*r.EditDepth,
		corpusLatency.Milliseconds(), r.First.Prepare.Seconds(), r.Grown.Prepare.Seconds(), r.Edited.Prepare.Seconds())
	fmt.Fprintln(w, "| case | chunks | chunks reused | model calls | wall | calls resumed ÷ fresh | wall resumed ÷ fresh | answers equal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	row := func(name string, g corpusReading, tail string) {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.2f s | %s |\n", name, g.Chunks, g.Reused, g.Calls, g.Wall.Seconds(), tail)
	}
	row(r.First.Name, r.First.Fresh, " | | ")
	for _, c := range []corpusCase{r.Grown, r.Edited} {
		row(c.Name+", resumed", *c.Resumed, fmt.Sprintf("%.3f× | %.3f× | %s", float64(c.Resumed.Calls)/float64(c.Fresh.Calls),
			c.Resumed.Wall.Seconds()/c.Fresh.Wall.Seconds(), yesNo(c.Resumed.Answer == c.Fresh.Answer)))
		row(c.Name+", fresh (`reuse: \"none\"`)", c.Fresh, " | | ")
	}
	fmt.Fprintln(w)
	for _, c := range []corpusCase{r.Grown, r.Edited} {
		verdict := "as many as it could"
		if c.Resumed.Reused != c.Unchanged {
			verdict = fmt.Sprintf("not the %d it could", c.Unchanged)
		}
		fmt.Fprintf(w, "%s: the first %d of %d chunks end before the first changed byte with the same bounds as before; the resumed reading reused %d, %s, and made %d calls for the %d chunks it read.\n\n",
			capitalize(c.Name), c.Unchanged, c.Resumed.Chunks, c.Resumed.Reused, verdict, c.Resumed.Calls, c.Resumed.Chunks-c.Resumed.Reused)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
