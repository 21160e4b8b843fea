package activities

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

// readChunks runs UpdateMemory over chunks [from, to) of p with
// checkpoints, from memory, and returns the memory after them.
func (f *fixture) readChunks(t *testing.T, p actwire.PrepareOutput, from, to int, memory string, sample int) string {
	t.Helper()
	for i := from; i < to; i++ {
		in := f.updateInput(p, i)
		in.Memory, in.Checkpoint, in.Sample, in.FirstRunID = memory, true, sample, "chain-1"
		var out actwire.UpdateOutput
		if err := f.exec(t, UpdateMemoryName, in, &out); err != nil {
			t.Fatalf("UpdateMemory chunk %d: %v", i, err)
		}
		memory = out.Memory
	}
	return memory
}

func (f *fixture) find(t *testing.T, p actwire.PrepareOutput, question string, sample int) actwire.FindCheckpointOutput {
	t.Helper()
	return f.findAs(t, p, question, sample, "chain-1")
}

// findAs is find by a reader of the chain whose first run is chain.
func (f *fixture) findAs(t *testing.T, p actwire.PrepareOutput, question string, sample int, chain string) actwire.FindCheckpointOutput {
	t.Helper()
	var out actwire.FindCheckpointOutput
	if err := f.exec(t, FindCheckpointName, actwire.FindCheckpointInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI,
		Question: question, Options: api.ModelOptions{ChunkTokens: 100}, Sample: sample, FirstRunID: chain}, &out); err != nil {
		t.Fatalf("FindCheckpoint: %v", err)
	}
	return out
}

// TestFindCheckpoint checks the search for the deepest checkpoint: none
// before a reading, the whole reading after one, the deepest left after
// the last ones expire, none for another question, sample or document
// version, and what its reading's memory was.
func TestFindCheckpoint(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(9)))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	if p.Chunks != 9 {
		t.Fatalf("%d chunks, want 9", p.Chunks)
	}
	if got := f.find(t, p, testQuestion, 0); got.Chunks != 0 {
		t.Fatalf("before any reading: %+v", got)
	}
	memory := f.readChunks(t, p, 0, 9, "No previous memory", 0)
	got := f.find(t, p, testQuestion, 0)
	if got.Chunks != 9 || got.Memory != memory || got.WorkflowID == "" {
		t.Errorf("after a reading: %d chunks, memory %q (want 9, %q), from %q", got.Chunks, got.Memory, memory, got.WorkflowID)
	}
	// Another chain (another workflow, or a later one of the same id)
	// reuses the reading without learning whose it was.
	if got := f.findAs(t, p, testQuestion, 0, "chain-2"); got.Chunks != 9 || got.WorkflowID != "" || got.RunID != "" {
		t.Errorf("another chain: %d chunks, from %q run %q; want 9, named to nobody", got.Chunks, got.WorkflowID, got.RunID)
	}
	for _, tt := range []struct {
		name     string
		question string
		sample   int
	}{{"another question", "Which marker came first?", 0}, {"another sample", testQuestion, 2}} {
		if got := f.find(t, p, tt.question, tt.sample); got.Chunks != 0 {
			t.Errorf("%s: %d chunks reused, want none", tt.name, got.Chunks)
		}
	}

	// The last three checkpoints expire: the search halves down to the
	// deepest one left.
	idx := f.index(t, p.IndexURI)
	key := f.acts.checkpointKey(testQuestion, api.ModelOptions{ChunkTokens: 100}, "default-model", 0)
	for _, c := range idx.Chunks[6:] {
		f.store.Delete(f.acts.checkpointLoc(key, c.Chain))
	}
	if got := f.find(t, p, testQuestion, 0); got.Chunks != 6 {
		t.Errorf("after the last three expired: %d chunks reused, want 6", got.Chunks)
	}

	// Another version of the document shares the chunks before the edit.
	doc := makeDoc(9)
	f.putDoc(t, []byte(strings.Replace(doc, "w005 filler", "w005 edited", 1)))
	p2 := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	idx2 := f.index(t, p2.IndexURI)
	first := 0
	for first < len(idx2.Chunks) && idx2.Chunks[first].Chain == idx.Chunks[first].Chain {
		first++
	}
	if got := f.find(t, p2, testQuestion, 0); got.Chunks != first || first == 0 || first >= 9 {
		t.Errorf("edited version: %d chunks reused, want the %d before the edit", got.Chunks, first)
	}
}

// TestFindCheckpointChecksWhatItReads: the search reads only through an
// index the worker made, of a document the worker may read, so that no
// memory crosses a read boundary.
func TestFindCheckpointChecksWhatItReads(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	f.readChunks(t, p, 0, 3, "No previous memory", 0)
	f.acts.ReadPrefixes = []string{"s3://elsewhere/"}
	for _, tt := range []struct {
		name string
		edit func(*actwire.FindCheckpointInput)
	}{
		{"a document the worker may no longer read", func(*actwire.FindCheckpointInput) {}},
		{"an index the worker did not write", func(in *actwire.FindCheckpointInput) { in.IndexURI = "s3://memagent/documents/x.json" }},
		{"the index of another document", func(in *actwire.FindCheckpointInput) { in.Document = "s3://elsewhere/other.txt" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := actwire.FindCheckpointInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, Question: testQuestion,
				Options: api.ModelOptions{ChunkTokens: 100}}
			tt.edit(&in)
			var out actwire.FindCheckpointOutput
			err := f.exec(t, FindCheckpointName, in, &out)
			if err == nil || appError(t, err).Type() != api.ErrForbidden {
				t.Errorf("error = %v, want %s", err, api.ErrForbidden)
			}
		})
	}
}

// TestAssembleCorpusChecksEveryDocument: one document of a corpus outside
// the read prefixes fails the whole corpus before anything is read or
// written, and a corpus map the caller points at is not one the worker
// made.
func TestAssembleCorpusChecksEveryDocument(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	ctx := context.Background()
	secret := s3store.Location{Bucket: "secret", Key: "b.txt"}
	if err := f.store.Store.Put(ctx, secret, []byte("TOP-SECRET text\n"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	f.acts.ReadPrefixes = []string{"s3://docs/"}
	writes := len(f.store.puts)
	var out actwire.ConvertOutput
	err := f.exec(t, AssembleCorpusName, actwire.CorpusInput{Documents: []string{testDocURI, secret.String()}}, &out)
	if err == nil || appError(t, err).Type() != api.ErrForbidden || !strings.Contains(err.Error(), "documents[1]") {
		t.Errorf("error = %v, want %s naming documents[1]", err, api.ErrForbidden)
	}
	if len(f.store.puts) != writes {
		t.Errorf("%d writes for a refused corpus", len(f.store.puts)-writes)
	}

	// A corpus of the readable document alone, then its stream indexed
	// through a map the caller names: the worker's own, or refused.
	if err := f.exec(t, AssembleCorpusName, actwire.CorpusInput{Documents: []string{testDocURI}}, &out); err != nil {
		t.Fatal(err)
	}
	var prep actwire.PrepareOutput
	if err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: out.Document, Question: testQuestion,
		Options: api.ModelOptions{ChunkTokens: 100}, Converted: &out}, &prep); err != nil {
		t.Fatalf("PrepareDocument of the corpus: %v", err)
	}
	forged := out
	forged.PageMapURI = "s3://docs/corpus.json"
	err = f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: out.Document, Question: testQuestion,
		Options: api.ModelOptions{ChunkTokens: 100}, Converted: &forged}, &prep)
	if err == nil || appError(t, err).Type() != api.ErrForbidden {
		t.Errorf("a corpus map the worker did not write: %v, want %s", err, api.ErrForbidden)
	}
	// The corpus stream is never a caller's document.
	err = f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: out.Document, Question: testQuestion,
		Options: api.ModelOptions{ChunkTokens: 100}}, &prep)
	if err == nil || appError(t, err).Type() != api.ErrForbidden {
		t.Errorf("the corpus stream as a document: %v, want %s", err, api.ErrForbidden)
	}
}

// TestReusedCheckpointCitesTheReader performs the attack of issue 37: two
// corpora with the same text under two clients' names. The second reads
// nothing again, and yet its evidence cites its own document, not the
// first client's, and nothing names the first reading's workflow or run.
func TestReusedCheckpointCitesTheReader(t *testing.T) {
	f := newFixture(t, nil)
	f.model.Respond = gateModel
	text := []byte(reviewDoc(4, 2))
	const question = "What is the gate code?"
	docA, docB := "s3://docs/clientA-merger/notes.txt", "s3://docs/clientB/notes.txt"
	for _, d := range []string{docA, docB} {
		if err := f.store.Store.Put(context.Background(), mustLoc(t, d), text, "text/plain"); err != nil {
			t.Fatal(err)
		}
	}
	prepare := func(doc string) actwire.PrepareOutput {
		t.Helper()
		var conv actwire.ConvertOutput
		if err := f.exec(t, AssembleCorpusName, actwire.CorpusInput{Documents: []string{doc}}, &conv); err != nil {
			t.Fatal(err)
		}
		var p actwire.PrepareOutput
		if err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: conv.Document, Question: question,
			Options: api.ModelOptions{ChunkTokens: 100}, Converted: &conv}, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pA := prepare(docA)
	memory, cited := "No previous memory", 0
	var evidenceChunks []int // as the workflow passes them
	for i := range pA.Chunks {
		in := f.updateInput(pA, i)
		in.Question, in.Memory, in.Checkpoint, in.FirstRunID = question, memory, true, "chain-of-client-a"
		in.EvidenceChunks = append([]int(nil), evidenceChunks...)
		var out actwire.UpdateOutput
		if err := f.exec(t, UpdateMemoryName, in, &out); err != nil {
			t.Fatal(err)
		}
		if out.Evidence != nil {
			evidenceChunks = append(evidenceChunks, i)
			if out.Evidence.Document == docA {
				cited++
			}
		}
		memory = out.Memory
	}
	if cited == 0 {
		t.Fatal("client A's reading left no evidence citing its document")
	}
	pB := prepare(docB)
	var got actwire.FindCheckpointOutput
	if err := f.exec(t, FindCheckpointName, actwire.FindCheckpointInput{Document: pB.Document, ETag: pB.ETag, IndexURI: pB.IndexURI,
		Question: question, Options: api.ModelOptions{ChunkTokens: 100}, FirstRunID: "chain-of-client-b"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Chunks != pB.Chunks || len(got.Evidence) == 0 {
		t.Fatalf("client B reused %d of %d chunks with %d evidence entries; want all, with the evidence", got.Chunks, pB.Chunks, len(got.Evidence))
	}
	for _, e := range got.Evidence {
		if e.Document != docB {
			t.Errorf("evidence at chunk %d cites %q, want client B's %s", e.Chunk, e.Document, docB)
		}
	}
	data, _ := json.Marshal(got)
	for _, leak := range []string{"clientA", "default-test-workflow-id", "chain-of-client-a"} {
		if strings.Contains(string(data), leak) {
			t.Errorf("client B's checkpoint names %q: %s", leak, data)
		}
	}
}
