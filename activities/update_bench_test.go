package activities

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/procstat"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/internal/tokenizer"
)

// BenchmarkUpdateMemory is one chunk update of a 100,000-token document
// (chunks of 5,000 Qwen tokens, 21 of them) as the worker runs it: the
// index from the worker's cache, the chunk from the in-memory store, the
// prompt rendered, the model called, the evidence and the trace. With
// "http" the model is the simulator (answering at once, in this process)
// through the inference client over HTTP: profile it with -cpuprofile and
// -focus on activities or inference, since the simulator's own work is in
// the same process. With "inprocess" the model is a fake that returns the
// same text, so that ns/op is memagent's own work alone.
// "inprocess-context8192" is that with the model's context reported as
// 8,192 tokens, under which every prompt of a 5,000-token chunk is longer
// in bytes than the context and complete tokenizes it to check it fits.
func BenchmarkUpdateMemory(b *testing.B) {
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(simulator.New(simulator.Options{Tokenizer: tok}))
	defer srv.Close()
	model, err := inference.New(inference.Config{BaseURL: secret.Endpoint(srv.URL + "/v1"), Model: simulator.DefaultModel})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	doc := []byte(docgen.Needle(tok, 100_000, 0.5, 7))
	store := rangeStore{Store: activitiestest.NewStore(), doc: doc}
	if err := store.Put(ctx, docLoc, doc, "text/plain"); err != nil {
		b.Fatal(err)
	}
	a := &Activities{
		SkipExecutionChecks: true,
		ReadPrefixes:        []string{"s3://"}, WritePrefixes: []string{"s3://"},
		Store: store, DefaultModel: simulator.DefaultModel, Bucket: "memagent",
		Templates:  memagent.DefaultTemplates(),
		Tokenizers: tokenizer.New,
	}
	opts := api.ModelOptions{Tokenizer: tokenizer.Qwen}
	p, err := a.prepareDocument(ctx, actwire.PrepareInput{Document: testDocURI, Question: docgen.Question, Options: opts})
	if err != nil {
		b.Fatal(err)
	}
	fake := constantModel("The harbour master signed the survey on the third day.")
	for _, m := range []struct {
		name        string
		model       Model
		maxModelLen int
	}{{"http", model, 0}, {"inprocess", fake, 0}, {"inprocess-context8192", fake, 8192}} {
		b.Run(m.name, func(b *testing.B) {
			a.Model, a.MaxModelLen = m.model, m.maxModelLen
			memory := "No previous memory"
			b.ReportAllocs()
			cpu := procstat.CPUTime(false)
			for i := 0; b.Loop(); i++ {
				chunk := i % p.Chunks
				if chunk == 0 {
					memory = "No previous memory"
				}
				out, err := a.updateMemory(ctx, actwire.UpdateInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, Chunk: chunk, Chunks: p.Chunks,
					Question: docgen.Question, Memory: memory, Options: opts, TracePrefix: tracePrefix})
				if err != nil {
					b.Fatal(err)
				}
				memory = out.Memory
			}
			procstat.ReportCPU(b, cpu)
		})
	}
}

// rangeStore serves the document's ranges without the fake store's check
// of its ETag, an MD5 of the whole document on every read that S3 does
// not make.
type rangeStore struct {
	*activitiestest.Store
	doc []byte
}

func (s rangeStore) ReadRange(ctx context.Context, loc s3store.Location, start, end int64, tag string) ([]byte, error) {
	if loc != docLoc {
		return s.Store.ReadRange(ctx, loc, start, end, tag)
	}
	return bytes.Clone(s.doc[start:end]), nil
}

// constantModel answers every request with itself and keeps nothing.
type constantModel string

func (m constantModel) Complete(_ context.Context, req inference.Request) (inference.Completion, error) {
	return inference.Completion{Text: string(m), Model: req.Model, PromptTokens: 5000, CompletionTokens: 12, FinishReason: "stop"}, nil
}
