package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// wordTokenizer is the shared test tokenizer: one token per word.
type wordTokenizer = activitiestest.WordTokenizer

// countingStore counts the writes to each location, so a test can tell a
// reused index from a rewritten one.
type countingStore struct {
	*activitiestest.Store
	mu    sync.Mutex
	puts  map[s3store.Location]int
	opens int
}

func (s *countingStore) Open(ctx context.Context, loc s3store.Location, etag string) (io.ReadCloser, error) {
	s.mu.Lock()
	s.opens++
	s.mu.Unlock()
	return s.Store.Open(ctx, loc, etag)
}

func (s *countingStore) Put(ctx context.Context, loc s3store.Location, data []byte, contentType string) error {
	s.mu.Lock()
	s.puts[loc]++
	s.mu.Unlock()
	return s.Store.Put(ctx, loc, data, contentType)
}

func (s *countingStore) putsTo(loc s3store.Location) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts[loc]
}

const (
	testQuestion = "Which marker came last?"
	testDocURI   = "s3://docs/doc.txt"
	tracePrefix  = "s3://memagent/runs/default-test-workflow-id/run-1/" // the test environment's workflow
)

var docLoc = s3store.Location{Bucket: "docs", Key: "doc.txt"}

// makeDoc is the shared test document: line N is chunk N.
var makeDoc = activitiestest.LineDoc

type fixture struct {
	store *countingStore
	model *activitiestest.Model
	acts  *Activities
}

// newFixture stores doc (unless it is nil) at testDocURI and returns
// activities over in-memory fakes whose model echoes "memory N" for the
// Nth call.
func newFixture(t *testing.T, doc []byte) *fixture {
	t.Helper()
	f := &fixture{
		store: &countingStore{Store: activitiestest.NewStore(), puts: make(map[s3store.Location]int)},
		model: &activitiestest.Model{},
	}
	calls := 0
	f.model.Respond = func(inference.Request) (string, error) {
		calls++
		return fmt.Sprintf("memory %d", calls), nil
	}
	if doc != nil {
		f.putDoc(t, doc)
	}
	f.acts = &Activities{
		// The SDK's test environment has no server to describe a run in.
		SkipExecutionChecks: true,
		ReadPrefixes:        []string{"s3://"}, WritePrefixes: []string{"s3://"}, // any bucket: the tests use several
		Store: f.store, Model: f.model, DefaultModel: "default-model", Bucket: "memagent",
		Templates:  memagent.DefaultTemplates(),
		Tokenizers: func(string) (memagent.Tokenizer, error) { return wordTokenizer{}, nil },
	}
	return f
}

// putDoc writes the document directly to the fake, bypassing the count.
func (f *fixture) putDoc(t *testing.T, doc []byte) {
	t.Helper()
	if err := f.store.Store.Put(context.Background(), docLoc, doc, "text/plain"); err != nil {
		t.Fatal(err)
	}
}

// exec runs one activity by its registered name in a fresh test activity
// environment and decodes its result into out.
func (f *fixture) exec(t *testing.T, name string, in, out any) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	// The SDK logs every failed attempt at error level; keep that in the
	// test's own log, shown only when the test fails or with -v.
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	env := s.NewTestActivityEnvironment()
	f.acts.Register(env)
	v, err := env.ExecuteActivity(name, in)
	if err != nil {
		return err
	}
	if err := v.Get(out); err != nil {
		t.Fatalf("decode %s result: %v", name, err)
	}
	return nil
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (f *fixture) prepare(t *testing.T, opts api.ModelOptions) actwire.PrepareOutput {
	t.Helper()
	var out actwire.PrepareOutput
	if err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: testDocURI, Question: testQuestion, Options: opts}, &out); err != nil {
		t.Fatalf("PrepareDocument: %v", err)
	}
	return out
}

func (f *fixture) index(t *testing.T, uri string) memagent.ChunkIndex {
	t.Helper()
	var idx memagent.ChunkIndex
	if err := json.Unmarshal(f.store.Object(mustLoc(t, uri)), &idx); err != nil {
		t.Fatalf("chunk index at %s: %v", uri, err)
	}
	return idx
}

func (f *fixture) updateInput(p actwire.PrepareOutput, chunk int) actwire.UpdateInput {
	return actwire.UpdateInput{
		Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, Chunk: chunk, Chunks: p.Chunks,
		Question: testQuestion, Memory: "previous memory", Options: api.ModelOptions{ChunkTokens: 100},
		TracePrefix: tracePrefix,
	}
}

func mustLoc(t *testing.T, uri string) s3store.Location {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// appError unwraps the ApplicationError an activity failed with.
func appError(t *testing.T, err error) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("error = %v, want an ApplicationError", err)
	}
	return appErr
}

func TestPrepareDocumentWritesThenReusesIndex(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(5)))
	opts := api.ModelOptions{ChunkTokens: 100}

	first := f.prepare(t, opts)
	if first.Reused {
		t.Error("first prepare: Reused = true, want false")
	}
	indexLoc := mustLoc(t, first.IndexURI)
	if indexLoc.Bucket != "memagent" || !strings.HasPrefix(indexLoc.Key, "indexes/") {
		t.Errorf("index at %s, want under s3://memagent/indexes/", first.IndexURI)
	}
	if got := f.store.putsTo(indexLoc); got != 1 {
		t.Fatalf("index writes after first prepare = %d, want 1", got)
	}
	idx := f.index(t, first.IndexURI)
	if len(idx.Chunks) != 5 || first.Chunks != 5 {
		t.Errorf("chunks: index %d, output %d; want 5", len(idx.Chunks), first.Chunks)
	}
	if first.Tokens != 500 || first.Bytes != int64(len(makeDoc(5))) || first.SHA256 != idx.SHA256 || first.SHA256 == "" {
		t.Errorf("prepare output = %+v, want 500 tokens, %d bytes and the index's sha256", first, len(makeDoc(5)))
	}
	if first.Model != "default-model" || first.Tokenizer != "words" || first.ChunkTokens != 100 {
		t.Errorf("model %q tokenizer %q chunk_tokens %d, want default-model, words, 100", first.Model, first.Tokenizer, first.ChunkTokens)
	}

	second := f.prepare(t, opts)
	if !second.Reused {
		t.Error("second prepare: Reused = false, want true")
	}
	if got := f.store.putsTo(indexLoc); got != 1 {
		t.Errorf("index writes after second prepare = %d, want still 1", got)
	}
	second.Reused = false
	if second != first {
		t.Errorf("second prepare = %+v, want %+v apart from Reused", second, first)
	}
	if n := len(f.model.Calls()); n != 0 {
		t.Errorf("model calls = %d, want 0 while preparing", n)
	}
}

func TestPrepareDocumentReplacedDocumentGetsNewIndex(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	opts := api.ModelOptions{ChunkTokens: 100}
	before := f.prepare(t, opts)

	f.putDoc(t, []byte(makeDoc(4)))
	after := f.prepare(t, opts)
	if after.Reused {
		t.Error("prepare of the replaced document: Reused = true, want false")
	}
	if after.ETag == before.ETag || after.IndexURI == before.IndexURI {
		t.Errorf("etag %s -> %s, index %s -> %s; want both to change", before.ETag, after.ETag, before.IndexURI, after.IndexURI)
	}
	if after.Chunks != 4 {
		t.Errorf("chunks = %d, want 4 from the new version", after.Chunks)
	}
	if got := f.store.putsTo(mustLoc(t, after.IndexURI)); got != 1 {
		t.Errorf("writes of the new index = %d, want 1", got)
	}
}

func TestPrepareDocumentPermanentErrors(t *testing.T) {
	tests := []struct {
		name     string
		doc      []byte // nil: no object at all
		wantType string
		wantMsg  string
	}{
		{"invalid utf-8", []byte("abc\xff\xfe def"), api.ErrBadInput, "invalid byte at offset 3"},
		{"invalid utf-8 later", []byte(makeDoc(1) + "ok \xc3\x28"), api.ErrBadInput, fmt.Sprintf("invalid byte at offset %d", len(makeDoc(1))+3)},
		{"empty", []byte{}, api.ErrBadInput, "is empty"},
		{"whitespace only", []byte(" \n\t\n  "), api.ErrBadInput, "has no text"},
		{"missing", nil, api.ErrDocumentNotFound, testDocURI + " does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.doc)
			var out actwire.PrepareOutput
			err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: testDocURI, Question: testQuestion, Options: api.ModelOptions{ChunkTokens: 100}}, &out)
			appErr := appError(t, err)
			if appErr.Type() != tt.wantType || !appErr.NonRetryable() {
				t.Errorf("error type %q nonretryable=%v, want %q nonretryable", appErr.Type(), appErr.NonRetryable(), tt.wantType)
			}
			if !strings.Contains(appErr.Error(), tt.wantMsg) {
				t.Errorf("error %q, want it to contain %q", appErr.Error(), tt.wantMsg)
			}
			for _, k := range f.store.Keys() {
				if strings.HasPrefix(k.Key, "indexes/") {
					t.Errorf("index %s written for a document that failed", k)
				}
			}
		})
	}
}

func TestPrepareDocumentRejectsPromptOverBudget(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	opts := api.ModelOptions{ChunkTokens: 1000, MemoryMaxTokens: 16}
	overhead := wordTokenizer{}.Count(memagent.DefaultTemplates().RenderUpdate(testQuestion, "", ""))
	f.acts.MaxModelLen = overhead + 2*16 + 500

	var out actwire.PrepareOutput
	err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: testDocURI, Question: testQuestion, Options: opts}, &out)
	appErr := appError(t, err)
	if appErr.Type() != api.ErrPromptTooLong || !appErr.NonRetryable() {
		t.Errorf("error type %q nonretryable=%v, want %q nonretryable", appErr.Type(), appErr.NonRetryable(), api.ErrPromptTooLong)
	}
	for _, want := range []string{"chunk_tokens (1000)", "lower options.chunk_tokens to at most 500"} {
		if !strings.Contains(appErr.Error(), want) {
			t.Errorf("error %q, want it to contain %q", appErr.Error(), want)
		}
	}
	if keys := f.store.Keys(); len(keys) != 1 {
		t.Errorf("store holds %v, want only the document (no index before the budget passes)", keys)
	}
}

// TestPrepareDocumentRejectsAModelNotServed: a run naming a model the
// servers do not serve fails as memagent.BadInput naming what they serve,
// before any index is written or model called (the starter once checked
// this with a model pool of its own); a model they serve, or a list that
// cannot be had, passes.
func TestPrepareDocumentRejectsAModelNotServed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		model  string
		served []string
		err    error
		want   string // "" = prepared
	}{
		{"not served", "no-such-model", []string{"qwen"}, nil, `model "no-such-model" is not served at the model URL (it serves [qwen])`},
		{"served", "qwen", []string{"qwen", "other"}, nil, ""},
		{"list unavailable", "no-such-model", nil, errors.New("connection refused"), ""},
		{"no model named", "", []string{"qwen"}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []byte(makeDoc(3)))
			f.acts.Served = func(context.Context) ([]string, error) { return tt.served, tt.err }
			var out actwire.PrepareOutput
			err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: testDocURI, Question: testQuestion,
				Options: api.ModelOptions{Model: tt.model, ChunkTokens: 1000}}, &out)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("prepare: %v, want none", err)
				}
				return
			}
			appErr := appError(t, err)
			if appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() || !strings.Contains(appErr.Error(), tt.want) {
				t.Errorf("error %q (type %q), want a non-retryable %s containing %q", appErr.Error(), appErr.Type(), api.ErrBadInput, tt.want)
			}
			if keys := f.store.Keys(); len(keys) != 1 {
				t.Errorf("store holds %v, want only the document", keys)
			}
		})
	}
}

func TestCheckBudget(t *testing.T) {
	tok := wordTokenizer{}
	tmpl := memagent.DefaultTemplates()
	update := tok.Count(tmpl.RenderUpdate(testQuestion, "", ""))
	final := tok.Count(tmpl.RenderFinal(testQuestion, ""))
	small := api.ModelOptions{ChunkTokens: 100, MemoryMaxTokens: 16, AnswerMaxTokens: 8}
	updateNeed := update + 100 + 2*16
	finalNeed := final + 16 + 8
	if finalNeed >= updateNeed {
		t.Fatalf("test setup: final need %d must be below update need %d", finalNeed, updateNeed)
	}
	bigAnswer := api.ModelOptions{ChunkTokens: 100, MemoryMaxTokens: 16, AnswerMaxTokens: 1000}
	tests := []struct {
		name        string
		opts        api.ModelOptions
		maxModelLen int
		want        []string // substrings of the error; nil means no error
	}{
		{"unknown context passes", api.ModelOptions{ChunkTokens: 1 << 20}, 0, nil},
		{"negative context passes", api.ModelOptions{ChunkTokens: 1 << 20}, -1, nil},
		{"exactly fits", small, updateNeed, nil},
		{"one token over", small, updateNeed - 1, []string{
			fmt.Sprintf("chunk_tokens (100) + memory_max_tokens (16) in and out + template and question (%d) = %d exceed the model's context (%d)", update, updateNeed, updateNeed-1),
			"lower options.chunk_tokens to at most 99",
		}},
		{"defaults over a small context", api.ModelOptions{}, 4096, []string{
			"chunk_tokens (5000) + memory_max_tokens (1024)",
			fmt.Sprintf("lower options.chunk_tokens to at most %d", 4096-update-2*1024),
		}},
		{"no room for any chunk", small, update + 2*16 + 63, []string{"chunk_tokens (100)", "shorten the question or lower options.memory_max_tokens"}},
		{"final prompt over", bigAnswer, updateNeed, []string{
			fmt.Sprintf("final prompt (%d) + memory_max_tokens (16) + answer_max_tokens (1000) = %d exceed the model's context (%d)", final, final+1016, updateNeed),
			"lower options.answer_max_tokens or options.memory_max_tokens",
		}},
		{"final prompt exactly fits", bigAnswer, max(updateNeed, final+1016), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBudget(tok, tmpl, testQuestion, tt.opts, tt.maxModelLen)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckBudget = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckBudget = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CheckBudget = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestUpdateMemoryReadsOneChunkAndWritesTrace(t *testing.T) {
	doc := makeDoc(5)
	f := newFixture(t, []byte(doc))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	idx := f.index(t, p.IndexURI)
	ch := idx.Chunks[3]
	chunkText := doc[ch.Start:ch.End]
	if !strings.HasPrefix(chunkText, "w003 ") {
		t.Fatalf("test setup: chunk 3 starts %.10q, want w003", chunkText)
	}

	in := f.updateInput(p, 3)
	var out actwire.UpdateOutput
	if err := f.exec(t, UpdateMemoryName, in, &out); err != nil {
		t.Fatalf("UpdateMemory: %v", err)
	}
	// Its own chunk, and the next one read ahead for the run's next
	// update (waited for here): never the whole document.
	next := idx.Chunks[4]
	if _, ok := f.acts.ahead.take(context.Background(), chunkKey{doc: p.Document, etag: p.ETag, start: next.Start, end: next.End}); !ok {
		t.Error("chunk 4 was not read ahead")
	}
	if f.store.Ranges != 2 {
		t.Errorf("ranged reads = %d, want 2 (chunk 3, and chunk 4 ahead)", f.store.Ranges)
	}
	calls := f.model.Calls()
	if len(calls) != 1 {
		t.Fatalf("model calls = %d, want 1", len(calls))
	}
	wantPrompt := memagent.DefaultTemplates().RenderUpdate(testQuestion, "previous memory", chunkText)
	if calls[0].Prompt != wantPrompt {
		t.Errorf("prompt =\n%s\nwant exactly chunk 3's text in the update template:\n%s", calls[0].Prompt, wantPrompt)
	}
	if strings.Contains(calls[0].Prompt, "w002") || strings.Contains(calls[0].Prompt, "w004") {
		t.Error("prompt carries text of a neighbouring chunk")
	}
	if calls[0].Model != "default-model" || calls[0].MaxTokens != api.DefaultMemoryMaxTokens || calls[0].Temperature != api.DefaultTemperature || calls[0].TopP != api.DefaultTopP {
		t.Errorf("request model %q max_tokens %d temperature %g top_p %g, want the worker's model and the defaults",
			calls[0].Model, calls[0].MaxTokens, calls[0].Temperature, calls[0].TopP)
	}
	wantOut := actwire.UpdateOutput{
		Memory: "memory 1", Chunk: 3, Start: ch.Start, End: ch.End, ChunkTokens: ch.Tokens,
		Usage:        api.Usage{Calls: 1, PromptTokens: int64(len(wantPrompt) / 4), CompletionTokens: int64(len("memory 1") / 4)},
		FinishReason: "stop",
	}
	// "memory 1" has a word the old memory lacks, with a digit: the chunk
	// is evidence, without pages (a text document).
	if ev := out.Evidence; ev == nil || ev.Chunk != 3 || ev.Start != ch.Start || ev.End != ch.End || ev.Pages != nil {
		t.Errorf("evidence = %+v, want chunk 3's range and no pages", ev)
	}
	out.Evidence = nil
	if out != wantOut {
		t.Errorf("output = %+v, want %+v", out, wantOut)
	}

	traceLoc := mustLoc(t, tracePrefix+"chunks/000003.json")
	raw := f.store.Object(traceLoc)
	if raw == nil {
		t.Fatalf("no trace at %s; store holds %v", traceLoc, f.store.Keys())
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	for _, k := range []string{"chunk", "chunks", "start", "end", "chunk_tokens", "model", "prompt_tokens",
		"completion_tokens", "latency_ms", "finish_reason", "attempt", "memory_after", "written_at"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("trace lacks field %q: %s", k, raw)
		}
	}
	var trace ChunkTrace
	if err := json.Unmarshal(raw, &trace); err != nil {
		t.Fatal(err)
	}
	if trace.WrittenAt.IsZero() || time.Since(trace.WrittenAt) > time.Hour {
		t.Errorf("written_at = %v, want about now", trace.WrittenAt)
	}
	trace.WrittenAt = time.Time{}
	if trace.Kept == nil || trace.Kept.Text != "memory 1" || trace.Kept.InputSHA256 == "" {
		t.Errorf("trace keeps %+v, want the completion and the digest of its input", trace.Kept)
	}
	trace.Kept = nil
	wantTrace := ChunkTrace{
		Chunk: 3, Chunks: 5, Start: ch.Start, End: ch.End, ChunkTokens: ch.Tokens, Model: "fake",
		PromptTokens: len(wantPrompt) / 4, CompletionTokens: len("memory 1") / 4, FinishReason: "stop",
		Attempt: 1, MemoryAfter: "memory 1", Calls: 1, PromptSHA256: PromptDigest(wantPrompt),
	}
	if !reflect.DeepEqual(trace, wantTrace) {
		t.Errorf("trace = %+v, want %+v", trace, wantTrace)
	}

	// A retry of the same chunk overwrites the same key.
	if err := f.exec(t, UpdateMemoryName, in, &out); err != nil {
		t.Fatalf("second UpdateMemory: %v", err)
	}
	if got := f.store.putsTo(traceLoc); got != 2 {
		t.Errorf("writes to %s = %d, want 2", traceLoc, got)
	}
	if err := json.Unmarshal(f.store.Object(traceLoc), &trace); err != nil {
		t.Fatal(err)
	}
	if trace.MemoryAfter != "memory 2" {
		t.Errorf("trace memory after the retry = %q, want %q", trace.MemoryAfter, "memory 2")
	}
	var traces []string
	for _, k := range f.store.Keys() {
		if strings.Contains(k.Key, "/chunks/") {
			traces = append(traces, k.Key)
		}
	}
	if len(traces) != 1 {
		t.Errorf("trace objects = %v, want just one", traces)
	}
}

func TestUpdateMemoryNextMemory(t *testing.T) {
	tests := []struct {
		name       string
		completion string
		wantMemory string
		wantKept   bool
	}{
		{"plain", "new memory", "new memory", false},
		{"reasoning stripped", "<think>reasoning</think> new memory", "new memory", false},
		{"last reasoning block counts", "<think>a</think> draft <think>b</think>\nfinal memory\n", "final memory", false},
		{"empty keeps previous", "", "previous memory", true},
		{"whitespace keeps previous", " \n\t", "previous memory", true},
		{"only reasoning keeps previous", "<think>nothing useful</think>  ", "previous memory", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []byte(makeDoc(2)))
			f.model.Respond = func(inference.Request) (string, error) { return tt.completion, nil }
			p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
			var out actwire.UpdateOutput
			if err := f.exec(t, UpdateMemoryName, f.updateInput(p, 0), &out); err != nil {
				t.Fatalf("UpdateMemory: %v", err)
			}
			if out.Memory != tt.wantMemory || out.MemoryKept != tt.wantKept {
				t.Errorf("memory %q kept %v, want %q kept %v", out.Memory, out.MemoryKept, tt.wantMemory, tt.wantKept)
			}
		})
	}
}

func TestUpdateMemoryDocumentReplacedAfterPrepare(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	f.putDoc(t, []byte(makeDoc(3)+"one more line\n"))

	var out actwire.UpdateOutput
	err := f.exec(t, UpdateMemoryName, f.updateInput(p, 1), &out)
	appErr := appError(t, err)
	if appErr.Type() != api.ErrDocumentChanged || !appErr.NonRetryable() {
		t.Errorf("error type %q nonretryable=%v, want %q nonretryable", appErr.Type(), appErr.NonRetryable(), api.ErrDocumentChanged)
	}
	if !strings.Contains(appErr.Error(), "start a new run") {
		t.Errorf("error %q, want it to say what to do", appErr.Error())
	}
	if n := len(f.model.Calls()); n != 0 {
		t.Errorf("model calls = %d, want 0 for a replaced document", n)
	}
}

func TestModelErrorsAreClassified(t *testing.T) {
	tests := []struct {
		kind         inference.ErrorKind
		wantType     string
		nonRetryable bool
	}{
		{inference.KindBadRequest, api.ErrModelBadRequest, true},
		{inference.KindPromptTooLong, api.ErrPromptTooLong, true},
		{inference.KindAuth, api.ErrModelAuth, true},
		{inference.KindModelNotFound, api.ErrModelNotFound, true},
		{inference.KindRateLimited, api.ErrModelUnavailable, false},
		{inference.KindServer, api.ErrModelUnavailable, false},
		{inference.KindTimeout, api.ErrModelUnavailable, false},
		{inference.KindConnection, api.ErrModelUnavailable, false},
		{inference.KindCanceled, api.ErrModelUnavailable, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			ie := &inference.Error{Kind: tt.kind, StatusCode: 400, Message: "boom"}
			if ie.Retryable() == tt.nonRetryable {
				t.Fatalf("inference says retryable=%v for %s; the table disagrees", ie.Retryable(), tt.kind)
			}
			f := newFixture(t, []byte(makeDoc(2)))
			f.model.Respond = func(inference.Request) (string, error) { return "", ie }
			p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
			var out actwire.UpdateOutput
			err := f.exec(t, UpdateMemoryName, f.updateInput(p, 0), &out)
			appErr := appError(t, err)
			if appErr.Type() != tt.wantType || appErr.NonRetryable() != tt.nonRetryable {
				t.Errorf("error type %q nonretryable=%v, want %q nonretryable=%v", appErr.Type(), appErr.NonRetryable(), tt.wantType, tt.nonRetryable)
			}
			if !strings.Contains(appErr.Error(), "boom") {
				t.Errorf("error %q lost the server's message", appErr.Error())
			}
			for _, k := range f.store.Keys() {
				if strings.Contains(k.Key, "/chunks/") {
					t.Errorf("trace %s written for a failed model call", k)
				}
			}
		})
	}
}

func TestModelErrorCarriesRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter time.Duration
	}{
		{"retry-after 7s", 7 * time.Second},
		{"no retry-after", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.model.Respond = func(inference.Request) (string, error) {
				return "", &inference.Error{Kind: inference.KindRateLimited, StatusCode: 429, RetryAfter: tt.retryAfter, Message: "slow down"}
			}
			var out api.DocumentQAResult
			err := f.exec(t, AnswerName, actwire.AnswerInput{Question: testQuestion, Memory: "m", ResultURI: tracePrefix + "result.json"}, &out)
			appErr := appError(t, err)
			if appErr.Type() != api.ErrModelUnavailable || appErr.NonRetryable() {
				t.Errorf("error type %q nonretryable=%v, want retryable %q", appErr.Type(), appErr.NonRetryable(), api.ErrModelUnavailable)
			}
			if got := appErr.NextRetryDelay(); got != tt.retryAfter {
				t.Errorf("NextRetryDelay = %v, want %v", got, tt.retryAfter)
			}
		})
	}
}

func TestAnswerExtractsScoresAndWritesResult(t *testing.T) {
	const completion = "<think>\\boxed{Lyon}?</think> The memory says so: \\boxed{Paris}"
	tests := []struct {
		name       string
		golds      []string
		wantScored bool
	}{
		{"with gold answers", []string{"Lyon", "paris"}, true},
		{"without gold answers", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.model.Respond = func(inference.Request) (string, error) { return completion, nil }
			started := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
			in := actwire.AnswerInput{
				Question: testQuestion, Memory: "the capital is Paris", GoldAnswers: tt.golds,
				Options:   api.ModelOptions{Model: "m1", AnswerMaxTokens: 64},
				ResultURI: tracePrefix + "result.json",
				Result: api.DocumentQAResult{
					WorkflowID: "wf-1", RunID: "run-1", Chunks: 7, StartedAt: started,
					Usage: api.Usage{Calls: 7, PromptTokens: 700, CompletionTokens: 70},
				},
			}
			var res api.DocumentQAResult
			if err := f.exec(t, AnswerName, in, &res); err != nil {
				t.Fatalf("Answer: %v", err)
			}
			calls := f.model.Calls()
			if len(calls) != 1 {
				t.Fatalf("model calls = %d, want 1", len(calls))
			}
			wantPrompt := memagent.DefaultTemplates().RenderFinal(testQuestion, "the capital is Paris")
			if calls[0].Prompt != wantPrompt || calls[0].Model != "m1" || calls[0].MaxTokens != 64 {
				t.Errorf("request model %q max_tokens %d prompt %q, want m1, 64 and the final template", calls[0].Model, calls[0].MaxTokens, calls[0].Prompt)
			}
			if res.Answer != "Paris" || !res.AnswerFound || res.AnswerMethod != memagent.MethodBoxed {
				t.Errorf("answer %q found %v method %q, want Paris found boxed", res.Answer, res.AnswerFound, res.AnswerMethod)
			}
			if tt.wantScored {
				if res.Scores == nil || !res.Scores.ExactMatch || res.Scores.BestGold != "paris" {
					t.Errorf("scores = %+v, want an exact match on %q", res.Scores, "paris")
				}
			} else if res.Scores != nil {
				t.Errorf("scores = %+v without gold answers, want nil", res.Scores)
			}
			wantUsage := api.Usage{Calls: 8, PromptTokens: 700 + int64(len(wantPrompt)/4), CompletionTokens: 70 + int64(len(completion)/4)}
			if res.Usage != wantUsage {
				t.Errorf("usage = %+v, want %+v", res.Usage, wantUsage)
			}
			if res.WorkflowID != "wf-1" || res.Chunks != 7 || !res.StartedAt.Equal(started) || res.FinishedAt.IsZero() ||
				res.FinalMemory != "the capital is Paris" || res.ResultURI != in.ResultURI || !slices.Equal(res.GoldAnswers, tt.golds) {
				t.Errorf("result = %+v, want the run summary kept and the answer fields filled in", res)
			}

			raw := f.store.Object(mustLoc(t, in.ResultURI))
			if raw == nil {
				t.Fatalf("no result at %s; store holds %v", in.ResultURI, f.store.Keys())
			}
			var stored struct {
				api.DocumentQAResult
				Completion string `json:"completion"`
			}
			if err := json.Unmarshal(raw, &stored); err != nil {
				t.Fatalf("stored result is not JSON: %v", err)
			}
			if stored.Completion != completion {
				t.Errorf("stored completion = %q, want the raw completion %q", stored.Completion, completion)
			}
			if stored.Answer != "Paris" || stored.WorkflowID != "wf-1" || stored.Usage != wantUsage || (stored.Scores != nil) != tt.wantScored {
				t.Errorf("stored result = %+v, want the returned result", stored.DocumentQAResult)
			}
		})
	}
}

func TestModelOptionsValidate(t *testing.T) {
	f32 := func(v float32) *float32 { return &v }
	tests := []struct {
		name string
		opts api.ModelOptions
		want string // substring of the error; "" means valid
	}{
		{"zero value", api.ModelOptions{}, ""},
		{"smallest values", api.ModelOptions{ChunkTokens: 64, MemoryMaxTokens: 16, AnswerMaxTokens: 1, Temperature: f32(0), TopP: f32(0.01)}, ""},
		{"largest sampling values", api.ModelOptions{Temperature: f32(2), TopP: f32(1)}, ""},
		{"chunk tokens too small", api.ModelOptions{ChunkTokens: 63}, "chunk_tokens (63) must be at least 64: raise options.chunk_tokens"},
		{"chunk tokens negative", api.ModelOptions{ChunkTokens: -1}, "chunk_tokens (-1)"},
		{"memory tokens too small", api.ModelOptions{MemoryMaxTokens: 15}, "memory_max_tokens (15) must be at least 16: raise options.memory_max_tokens"},
		{"memory tokens negative", api.ModelOptions{MemoryMaxTokens: -5}, "memory_max_tokens (-5)"},
		{"answer tokens negative", api.ModelOptions{AnswerMaxTokens: -1}, "answer_max_tokens (-1) must be within [0, 65536]"},
		{"chunk tokens too large", api.ModelOptions{ChunkTokens: 1 << 40}, "chunk_tokens (1099511627776) must be at most 1000000: lower options.chunk_tokens"},
		{"temperature negative", api.ModelOptions{Temperature: f32(-0.1)}, "temperature (-0.1) must be within [0, 2]"},
		{"temperature too high", api.ModelOptions{Temperature: f32(2.5)}, "temperature (2.5)"},
		{"top_p zero", api.ModelOptions{TopP: f32(0)}, "top_p (0) must be within (0, 1]"},
		{"top_p above one", api.ModelOptions{TopP: f32(1.5)}, "top_p (1.5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestModelOptionsWithDefaults(t *testing.T) {
	f32 := func(v float32) *float32 { return &v }
	tests := []struct {
		name string
		in   api.ModelOptions
		want api.ModelOptions
	}{
		{"zero value gets every default", api.ModelOptions{}, api.ModelOptions{
			Tokenizer: api.DefaultTokenizer, ChunkTokens: api.DefaultChunkTokens, MemoryMaxTokens: api.DefaultMemoryMaxTokens,
			AnswerMaxTokens: api.DefaultAnswerMaxTokens, Temperature: f32(api.DefaultTemperature), TopP: f32(api.DefaultTopP),
		}},
		{"explicit zero temperature survives", api.ModelOptions{Temperature: f32(0)}, api.ModelOptions{
			Tokenizer: api.DefaultTokenizer, ChunkTokens: api.DefaultChunkTokens, MemoryMaxTokens: api.DefaultMemoryMaxTokens,
			AnswerMaxTokens: api.DefaultAnswerMaxTokens, Temperature: f32(0), TopP: f32(api.DefaultTopP),
		}},
		{"explicit values kept", api.ModelOptions{
			Model: "m", Tokenizer: "o200k_base", ChunkTokens: 2000, MemoryMaxTokens: 256, AnswerMaxTokens: 32,
			Temperature: f32(1.5), TopP: f32(0.5),
		}, api.ModelOptions{
			Model: "m", Tokenizer: "o200k_base", ChunkTokens: 2000, MemoryMaxTokens: 256, AnswerMaxTokens: 32,
			Temperature: f32(1.5), TopP: f32(0.5),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.WithDefaults()
			if !sameOptions(got, tt.want) {
				t.Errorf("WithDefaults = %s, want %s", showOptions(got), showOptions(tt.want))
			}
			if again := got.WithDefaults(); !sameOptions(again, got) {
				t.Errorf("WithDefaults twice = %s, want %s", showOptions(again), showOptions(got))
			}
		})
	}
}

func sameOptions(a, b api.ModelOptions) bool {
	eq := func(x, y *float32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if !eq(a.Temperature, b.Temperature) || !eq(a.TopP, b.TopP) {
		return false
	}
	a.Temperature, a.TopP, b.Temperature, b.TopP = nil, nil, nil, nil
	return a == b
}

func showOptions(o api.ModelOptions) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// TestOutputLocationNotS3IsBadInput: a trace prefix or result URI that is
// not s3:// can never succeed, so it must fail at once rather than be
// retried, each retry paying for another model call.
func TestOutputLocationNotS3IsBadInput(t *testing.T) {
	tests := []struct {
		name string
		run  func(f *fixture, t *testing.T) error
	}{
		{"trace prefix", func(f *fixture, t *testing.T) error {
			in := f.updateInput(f.prepare(t, api.ModelOptions{ChunkTokens: 100}), 0)
			in.TracePrefix = "runs/wf-1/"
			var out actwire.UpdateOutput
			return f.exec(t, UpdateMemoryName, in, &out)
		}},
		{"result uri", func(f *fixture, t *testing.T) error {
			var out api.DocumentQAResult
			return f.exec(t, AnswerName, actwire.AnswerInput{Question: testQuestion, Memory: "m", ResultURI: "runs/wf-1/result.json"}, &out)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []byte(makeDoc(2)))
			appErr := appError(t, tt.run(f, t))
			if n := len(f.model.Calls()); n != 0 {
				t.Errorf("model calls = %d, want 0: the location is checked before the model is paid", n)
			}
			if appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() {
				t.Errorf("error type %q nonretryable=%v (%v), want %q nonretryable: a retry can never fix the location, and each retry repeats the model call",
					appErr.Type(), appErr.NonRetryable(), appErr, api.ErrBadInput)
			}
		})
	}
}

// Runs that prepare the same new document at the same time index it once:
// one streams it, the others wait and reuse its index.
func TestPrepareDocumentIndexesOnceForConcurrentRuns(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(20)))
	const runs = 8
	outs := make([]*actwire.PrepareOutput, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = f.acts.prepareDocument(context.Background(), actwire.PrepareInput{
				Document: testDocURI, Question: testQuestion, Options: api.ModelOptions{ChunkTokens: 100},
			})
		}()
	}
	wg.Wait()
	reused := 0
	for i := range runs {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if outs[i].Reused {
			reused++
		}
		if outs[i].IndexURI != outs[0].IndexURI || outs[i].Chunks != outs[0].Chunks {
			t.Errorf("run %d prepared %+v, run 0 %+v", i, outs[i], outs[0])
		}
	}
	if f.store.opens != 1 || reused != runs-1 {
		t.Errorf("%d document streams and %d reused indexes for %d runs; want 1 and %d", f.store.opens, reused, runs, runs-1)
	}
	if n := len(f.acts.planning); n != 0 {
		t.Errorf("%d plan locks left behind", n)
	}
}
