package activities

import (
	"context"
	"io"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

// dyingStore stands in for a document whose indexing takes its worker
// down: opening it panics, so the attempt never returns normally (the
// SDK turns the panic into a failed attempt; a real worker would be gone).
type dyingStore struct {
	*countingStore
	opens int
}

func (s *dyingStore) Open(ctx context.Context, loc s3store.Location, etag string) (io.ReadCloser, error) {
	if loc == docLoc {
		s.opens++
		panic("worker out of memory")
	}
	return s.countingStore.Open(ctx, loc, etag)
}

// TestPoisonDocumentIsRefused: after MaxUnfinishedAttempts attempts that
// began indexing and never returned, the next attempt refuses the document
// as memagent.BadInput without reading it again.
func TestPoisonDocumentIsRefused(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	store := &dyingStore{countingStore: f.store}
	f.acts.Store = store
	in := actwire.PrepareInput{Document: testDocURI, Question: testQuestion, Options: api.ModelOptions{ChunkTokens: 100}}
	for i := range MaxUnfinishedAttempts {
		var out actwire.PrepareOutput
		if err := f.exec(t, PrepareDocumentName, in, &out); err == nil {
			t.Fatalf("attempt %d succeeded", i+1)
		}
	}
	var out actwire.PrepareOutput
	err := f.exec(t, PrepareDocumentName, in, &out)
	assertType(t, err, api.ErrBadInput)
	if store.opens != MaxUnfinishedAttempts {
		t.Errorf("the document was opened %d times, want %d (not again once refused)", store.opens, MaxUnfinishedAttempts)
	}
	t.Log(err)

	// A healthy attempt resets the count: failures that return (an S3
	// error, bad input) are not deaths.
	g := newFixture(t, []byte(makeDoc(3)))
	for range MaxUnfinishedAttempts + 1 {
		if err := g.exec(t, PrepareDocumentName, in, &out); err != nil {
			t.Fatalf("a healthy document: %v", err)
		}
	}
}
