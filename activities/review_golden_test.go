package activities

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// TestWriteReviewGolden pins what writeReview writes, logs and returns,
// in order, with the number of ranged reads: a grid whose passages are
// shared, distinct, empty or missing; the same run again (in place);
// another run into the same prefix (beside it, under runs/); a document
// replaced since (ranges only); and the error of each refused input. Run
// with -update to rewrite the file.
func TestWriteReviewGolden(t *testing.T) {
	doc := reviewDoc(4, 2)
	f := newFixture(t, []byte(doc))
	info, _ := f.store.Head(context.Background(), docLoc)
	store := &recordingStore{Store: f.store.Store}
	f.acts.Store = store
	f.acts.Logger = goldenLog(store)
	f.acts.ReadPrefixes = []string{"s3://docs/"}
	f.acts.WritePrefixes = []string{"s3://memagent/"}
	grid := func(change func(*api.ReviewGrid)) actwire.WriteReviewInput {
		g := reviewTestGrid(doc)
		other := int64(strings.Index(doc, "w001"))
		g.Rows = append(g.Rows,
			api.ReviewRow{ID: "q3", Question: "Where does line one start?", Status: api.ReviewStatusDone, Answer: "w001", AnswerFound: true,
				Evidence: []api.Evidence{
					{Chunk: 1, Start: 100, End: 200, Passage: &api.EvidencePassage{Start: other, End: other + 11}, Added: []string{"w001"}, SupportsAnswer: true},
					{Chunk: 3, Start: 300, End: 400, Passage: &api.EvidencePassage{Start: 5, End: 5}},
					{Chunk: 0, Start: 0, End: 100},
				}},
			api.ReviewRow{ID: "q4", Question: "Nothing?", Status: api.ReviewStatusFailed, Error: "boom"})
		if change != nil {
			change(&g)
		}
		return actwire.WriteReviewInput{Grid: g, ETag: info.ETag}
	}
	steps := []struct {
		name string
		in   actwire.WriteReviewInput
	}{
		{"first", grid(nil)},
		{"same run again", grid(nil)},
		{"another run", grid(func(g *api.ReviewGrid) { g.RunID = "run-2" })},
		{"document replaced", func() actwire.WriteReviewInput { in := grid(nil); in.ETag = `"other"`; return in }()},
		{"output not a uri", grid(func(g *api.ReviewGrid) { g.CSVURI = "/tmp/grid.csv" })},
		{"output outside write prefixes", grid(func(g *api.ReviewGrid) { g.HTMLURI = "s3://elsewhere/report.html" })},
		{"document not a uri", grid(func(g *api.ReviewGrid) { g.Document = "docs/doc.txt" })},
		{"document outside read prefixes", grid(func(g *api.ReviewGrid) { g.Document = "s3://elsewhere/doc.txt" })},
	}
	for _, s := range steps {
		fmt.Fprintf(&store.transcript, "=== step %s\n", s.name)
		ranges := store.Ranges
		out, err := f.acts.writeReview(context.Background(), s.in)
		fmt.Fprintf(&store.transcript, "ranged reads: %d\n", store.Ranges-ranges)
		recordOutcome(t, &store.transcript, out, err)
	}
	checkGolden(t, "review/steps.golden", store.transcript.Bytes())
}
