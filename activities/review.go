package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

// Names of the ReviewDocument workflow's own activities. Its final answers
// are Answer's.
const (
	ReviewUpdateName = actwire.ReviewUpdateName
	WriteReviewName  = actwire.WriteReviewName
)

// Names of the objects WriteReview writes under a review's prefix.
const (
	ReviewGridJSON = "grid.json"
	ReviewGridCSV  = "grid.csv"
	ReviewHTML     = "report.html"
)

// reviewUpdate is UpdateMemory for one question of a review: the same read
// (through the chunk cache, so that the review's questions share one S3
// read per chunk), model call, budget check, trace and metrics, plus the
// evidence the review records: whether the memory changed materially and,
// if it did, which sentence of the chunk the change came from. The chunk's
// text is at hand only here, so the passage is found here rather than by
// reading chunks again at the end.
func (a *Activities) reviewUpdate(ctx context.Context, in actwire.UpdateInput) (*actwire.ReviewUpdateOutput, error) {
	out, err := a.updateMemoryReading(ctx, in, a.readChunk, false)
	if err != nil {
		return nil, err
	}
	res := &actwire.ReviewUpdateOutput{UpdateOutput: *out}
	// The review keeps its evidence in its own fields, as before pages.
	res.UpdateOutput.Evidence = nil
	if ev := out.Evidence; ev != nil {
		res.Material, res.Added, res.Passage, res.Document = true, ev.Added, ev.Passage, ev.Document
	}
	return res, nil
}

// maxPassageRead bounds the bytes read for one passage's text.
const maxPassageRead = 2 * report.EvidenceMaxPassageBytes

// writeReview reads the text of every evidence passage (one small ranged
// read each, shared by questions that cite the same one) and writes the
// grid as JSON and CSV and the HTML report. A passage that can no longer be
// read (the document was deleted or replaced) is left without text; the
// page says where it was. Writes overwrite, so a retry is harmless.
func (a *Activities) writeReview(ctx context.Context, in actwire.WriteReviewInput) (*actwire.WriteReviewOutput, error) {
	g := in.Grid
	if err := a.ownReviewPrefix(ctx, &g); err != nil {
		return nil, err
	}
	out := &actwire.WriteReviewOutput{JSONURI: g.JSONURI, CSVURI: g.CSVURI, HTMLURI: g.HTMLURI}
	locs, err := a.reviewOutputs(ctx, g)
	if err != nil {
		return nil, err
	}
	doc, err := s3store.ParseURI(g.Document)
	if err != nil {
		return nil, badInput(fmt.Errorf("review document: %w", err))
	}
	if !a.derivedDocument(g.Document) {
		if err := a.allowInput(ctx, "document", g.Document, reader{}); err != nil {
			return nil, err
		}
	}
	stop := a.startHeartbeat(ctx)
	defer stop()

	if out.Passages, err = a.fillPassages(ctx, &g, doc, in.ETag); err != nil {
		return nil, err
	}
	if err := a.putReview(ctx, g, locs); err != nil {
		return nil, err
	}
	a.logger().InfoContext(ctx, "review written", "prefix", g.Prefix, "questions", len(g.Rows), "passages", out.Passages)
	return out, nil
}

// reviewOutputs are the locations of the grid's JSON, CSV and HTML, each
// one the worker may write.
func (a *Activities) reviewOutputs(ctx context.Context, g api.ReviewGrid) ([3]s3store.Location, error) {
	var locs [3]s3store.Location
	for i, uri := range []string{g.JSONURI, g.CSVURI, g.HTMLURI} {
		loc, err := s3store.ParseURI(uri)
		if err != nil {
			return locs, badInput(fmt.Errorf("review output: %w", err))
		}
		locs[i] = loc
	}
	for i, field := range []string{"json_uri", "csv_uri", "html_uri"} {
		if err := a.allowOutput(ctx, field, locs[i].String()); err != nil {
			return locs, err
		}
	}
	return locs, nil
}

// fillPassages gives every evidence passage of g its text, read from doc
// at etag once per range, on copies of the rows (the grid came from
// workflow history), and returns the number of ranges read. After the
// first range that cannot be read (the document was deleted or replaced)
// it reads no more, and those passages keep their ranges only.
func (a *Activities) fillPassages(ctx context.Context, g *api.ReviewGrid, doc s3store.Location, etag string) (int, error) {
	g.Rows = append([]api.ReviewRow(nil), g.Rows...)
	texts := map[[2]int64]string{}
	unreadable := false
	passages := 0
	for i := range g.Rows {
		ev := append([]api.Evidence(nil), g.Rows[i].Evidence...)
		for k := range ev {
			p := ev[k].Passage
			if p == nil || p.End <= p.Start {
				continue
			}
			span := [2]int64{p.Start, p.End}
			text, ok := texts[span]
			if !ok && !unreadable {
				var err error
				text, err = a.readPassage(ctx, doc, p.Start, p.End, etag)
				switch {
				case errors.Is(err, s3store.ErrNotFound) || errors.Is(err, s3store.ErrChanged):
					a.logger().WarnContext(ctx, "review passages not readable; the report gives their ranges only", "document", g.Document, "err", err)
					unreadable = true
				case err != nil:
					return passages, fmt.Errorf("read passage %d-%d of %s: %w", p.Start, p.End, g.Document, err)
				default:
					texts[span] = text
					passages++
				}
				if activity.IsActivity(ctx) {
					activity.RecordHeartbeat(ctx, passages)
				}
			}
			cp := *p
			cp.Text = text
			ev[k].Passage = &cp
		}
		g.Rows[i].Evidence = ev
	}
	return passages, nil
}

// putReview renders g as JSON, CSV and HTML and writes them to locs, in
// that order.
func (a *Activities) putReview(ctx context.Context, g api.ReviewGrid, locs [3]s3store.Location) error {
	var js, csv, page bytes.Buffer
	if err := report.WriteReviewJSON(&js, g); err != nil {
		return fmt.Errorf("render %s: %w", ReviewGridJSON, err)
	}
	if err := report.WriteReviewCSV(&csv, g); err != nil {
		return fmt.Errorf("render %s: %w", ReviewGridCSV, err)
	}
	if err := report.WriteReviewHTML(&page, g); err != nil {
		return fmt.Errorf("render %s: %w", ReviewHTML, err)
	}
	for i, obj := range []struct {
		data        []byte
		contentType string
	}{
		{js.Bytes(), "application/json"},
		{csv.Bytes(), "text/csv; charset=utf-8"},
		{page.Bytes(), "text/html; charset=utf-8"},
	} {
		if err := a.Store.Put(ctx, locs[i], obj.data, obj.contentType); err != nil {
			return fmt.Errorf("write %s: %w", locs[i], err)
		}
	}
	return nil
}

// readPassage reads at most maxPassageRead bytes of a passage, as valid
// UTF-8 (a clipped end may cut a character).
func (a *Activities) readPassage(ctx context.Context, doc s3store.Location, start, end int64, etag string) (string, error) {
	end = min(end, start+maxPassageRead)
	b, err := a.Store.ReadRange(ctx, doc, start, end, etag)
	if err != nil {
		return "", err
	}
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// registerReview registers the activities of the ReviewDocument workflow.
func (a *Activities) registerReview(r Registry) {
	bind(r, actwire.ReviewUpdate, a.reviewUpdate)
	bind(r, actwire.WriteReview, a.writeReview)
}

// ownReviewPrefix keeps a grid of another run (a reset, or a re-run into
// the same prefix): when grid.json exists and names another run, this
// run's grid, CSV and page go under runs/<run id>/ beside it. A grid of
// the same run (a retried activity) is rewritten in place.
func (a *Activities) ownReviewPrefix(ctx context.Context, g *api.ReviewGrid) error {
	loc, err := s3store.ParseURI(g.JSONURI)
	if err != nil || g.RunID == "" {
		return nil // reported with the other outputs below
	}
	other, err := a.heldByOtherRun(ctx, loc, g.RunID)
	if err != nil || !other {
		return err
	}
	prefix := strings.TrimSuffix(g.JSONURI, ReviewGridJSON) + "runs/" + g.RunID + "/"
	g.Prefix = prefix
	g.JSONURI, g.CSVURI, g.HTMLURI = prefix+ReviewGridJSON, prefix+ReviewGridCSV, prefix+ReviewHTML
	return nil
}
