package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// GroundAnswerName is the registered name of GroundAnswer.
const GroundAnswerName = "memagent.GroundAnswer"

// groundWindow is how much of the document GroundAnswer reads at a time;
// the grounder keeps only a few kilobytes of it between windows.
const groundWindow = 1 << 20

// groundAnswer finds each answer in the text the run read, from the
// document's own bytes (never from the model): it streams the indexed
// document version once, in windows, whatever its size, and stops as soon
// as every answer is found verbatim. An answer the model gave as no answer
// (no \boxed{} answer, or one that says it cannot answer) is no_answer
// and not searched. Each found answer gets its pages from the index's
// page map and a quote from one small ranged read. A result.json named
// for an answer is rewritten with its grounding.
func (a *Activities) groundAnswer(ctx context.Context, in actwire.GroundInput) (*actwire.GroundOutput, error) {
	indexLoc, err := s3store.ParseURI(in.IndexURI)
	if err != nil {
		return nil, badInput(fmt.Errorf("index uri: %w", err))
	}
	if indexLoc.Bucket != a.Bucket || !strings.HasPrefix(indexLoc.Key, "indexes/") {
		return nil, forbidden("index %s is not one this worker made (under s3://%s/indexes/)", in.IndexURI, a.Bucket)
	}
	docLoc, err := s3store.ParseURI(in.Document)
	if err != nil {
		return nil, badInput(fmt.Errorf("document: %w", err))
	}
	stop := a.startHeartbeat(ctx)
	defer stop()
	idx, err := a.loadIndex(ctx, indexLoc)
	if err != nil {
		return nil, storeError(err, in.IndexURI)
	}
	if err := a.allowIndexedRead(in.Document, in.ETag, in.IndexURI, indexLoc, idx); err != nil {
		return nil, err
	}
	for _, it := range in.Answers {
		if it.ResultURI != "" {
			if err := a.allowOutput(ctx, "result_uri", it.ResultURI); err != nil {
				return nil, err
			}
		}
	}

	out := &actwire.GroundOutput{Groundings: make([]api.Grounding, len(in.Answers))}
	var search []string
	var which []int
	for i, it := range in.Answers {
		if !it.AnswerFound || strings.TrimSpace(it.Answer) == "" || memagent.IsNoAnswer(it.Answer) {
			out.Groundings[i] = api.Grounding{Status: api.GroundingNoAnswer}
			continue
		}
		search = append(search, strings.TrimSpace(it.Answer))
		which = append(which, i)
	}
	if len(search) > 0 {
		matches, err := a.scanForAnswers(ctx, docLoc, in.ETag, search)
		if err != nil {
			return nil, err
		}
		for k, m := range matches {
			g := api.Grounding{Status: m.Status}
			if g.Found() {
				g.Start, g.End = m.Start, m.End
				g.Pages = idx.PageMap.Ref(m.Start, m.End)
				if refs := idx.Corpus.Refs(m.Start, m.End); len(refs) > 0 {
					g.Document, g.Pages = refs[0].Document, refs[0].Pages
				}
				g.Quote, err = a.quote(ctx, docLoc, in.ETag, idx.Bytes, m)
				if err != nil {
					return nil, storeError(err, in.Document)
				}
			}
			out.Groundings[which[k]] = g
		}
	}
	for i, it := range in.Answers {
		if it.ResultURI != "" {
			if err := a.groundResult(ctx, it.ResultURI, in.RunID, out.Groundings[i]); err != nil {
				return nil, err
			}
		}
	}
	counts := map[string]int{}
	for _, g := range out.Groundings {
		counts[g.Status]++
	}
	a.logger().InfoContext(ctx, "answers grounded", "document", in.Document, "answers", len(in.Answers),
		"verbatim", counts[api.GroundingVerbatim], "normalized", counts[api.GroundingNormalized],
		"not_found", counts[api.GroundingNotFound], "no_answer", counts[api.GroundingNoAnswer])
	return out, nil
}

// scanForAnswers streams the document at etag through a Grounder, a
// window at a time, until it ends or every answer is found verbatim.
func (a *Activities) scanForAnswers(ctx context.Context, loc s3store.Location, etag string, answers []string) ([]memagent.GroundMatch, error) {
	body, err := a.Store.Open(ctx, loc, etag)
	if err != nil {
		return nil, storeError(err, loc.String())
	}
	defer body.Close()
	g := memagent.NewGrounder(answers)
	buf := make([]byte, groundWindow)
	var read int64
	for !g.Done() {
		n, err := io.ReadFull(body, buf)
		g.Write(buf[:n])
		read += int64(n)
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, read)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, storeError(fmt.Errorf("read %s at byte %d: %w", loc, read, err), loc.String())
		}
	}
	g.Close()
	return g.Results(), nil
}

// quote reads the text around a match and cuts the quote from it.
func (a *Activities) quote(ctx context.Context, loc s3store.Location, etag string, size int64, m memagent.GroundMatch) (string, error) {
	const n = api.MaxGroundingQuoteBytes
	from, to := max(0, m.Start-n), m.End+n
	if m.End-m.Start >= n {
		from, to = m.Start, m.Start+n+4
	}
	if size > 0 {
		to = min(to, size)
	}
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	b, err := a.Store.ReadRange(sctx, loc, from, to, etag)
	if err != nil {
		return "", err
	}
	return memagent.GroundQuote(b, from, m.Start, m.End, n), nil
}

// groundResult adds the grounding to the run's result.json at uri. A
// result that is missing, or another run's, is left alone.
func (a *Activities) groundResult(ctx context.Context, uri, runID string, g api.Grounding) error {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return badInput(fmt.Errorf("result uri: %w", err))
	}
	var res StoredResult
	if !a.readKept(ctx, loc, &res) || res.RunID != runID {
		return nil
	}
	res.Grounding = &g
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	if err := a.putJSON(sctx, loc, res); err != nil {
		return fmt.Errorf("write grounding into %s: %w", uri, err)
	}
	return nil
}
