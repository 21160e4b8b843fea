package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

// probeLog records the objects read whole through it, in order.
type probeLog struct {
	*countingStore
	mu    sync.Mutex
	reads []string
}

func (s *probeLog) ReadAll(ctx context.Context, loc s3store.Location) ([]byte, error) {
	s.mu.Lock()
	s.reads = append(s.reads, loc.String())
	s.mu.Unlock()
	return s.countingStore.ReadAll(ctx, loc)
}

// TestFindCheckpointGolden pins what findCheckpoint returns and which
// checkpoints it reads, in order: before a reading, after one (by its
// own chain and by another), after the last three expire, with one
// checkpoint overwritten by a foreign object, and the error of each
// refused input. Run with -update to rewrite the file.
func TestFindCheckpointGolden(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(9)))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	idx := f.index(t, p.IndexURI)
	key := f.acts.checkpointKey(testQuestion, api.ModelOptions{ChunkTokens: 100}, "default-model", 0)
	rec := &probeLog{countingStore: f.store}
	f.acts.Store = rec
	var golden strings.Builder
	// The checkpoint of chunk i reads as cp<i>.
	names := map[string]string{}
	for i, c := range idx.Chunks {
		names[f.acts.checkpointLoc(key, c.Chain).String()] = fmt.Sprintf("cp%d", i)
	}
	step := func(name string, in actwire.FindCheckpointInput) {
		rec.reads = nil
		var out actwire.FindCheckpointOutput
		err := f.exec(t, FindCheckpointName, in, &out)
		fmt.Fprintf(&golden, "=== step %s\nreads:", name)
		for _, r := range rec.reads {
			if n, ok := names[r]; ok {
				r = n
			}
			fmt.Fprintf(&golden, " %s", r)
		}
		golden.WriteString("\n")
		if err != nil {
			fmt.Fprintf(&golden, "error %s: %v\n", appError(t, err).Type(), err)
			return
		}
		raw, _ := json.MarshalIndent(out, "", " ")
		fmt.Fprintf(&golden, "%s\n", raw)
	}
	in := func(change func(*actwire.FindCheckpointInput)) actwire.FindCheckpointInput {
		in := actwire.FindCheckpointInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI,
			Question: testQuestion, Options: api.ModelOptions{ChunkTokens: 100}, FirstRunID: "chain-1"}
		if change != nil {
			change(&in)
		}
		return in
	}
	step("before any reading", in(nil))
	f.acts.Store = f.store
	f.readChunks(t, p, 0, 9, "No previous memory", 0)
	f.acts.Store = rec
	step("after a reading", in(nil))
	step("another chain", in(func(in *actwire.FindCheckpointInput) { in.FirstRunID = "chain-2" }))
	step("another sample", in(func(in *actwire.FindCheckpointInput) { in.Sample = 1 }))
	for _, c := range idx.Chunks[6:] {
		f.store.Delete(f.acts.checkpointLoc(key, c.Chain))
	}
	step("last three expired", in(nil))
	putObject(t, f.store.Store, f.acts.checkpointLoc(key, idx.Chunks[5].Chain).String(), []byte(`{"version":1,"chunks":2}`))
	step("foreign object at chunk 5", in(nil))
	step("index not the worker's", in(func(in *actwire.FindCheckpointInput) { in.IndexURI = "s3://memagent/documents/x.json" }))
	step("index of another document", in(func(in *actwire.FindCheckpointInput) { in.Document = "s3://docs/other.txt" }))
	step("another version", in(func(in *actwire.FindCheckpointInput) { in.ETag = `"other"` }))
	f.acts.ReadPrefixes = []string{"s3://elsewhere/"}
	step("outside read prefixes", in(nil))
	checkGolden(t, "checkpoint/find.golden", []byte(golden.String()))
}
