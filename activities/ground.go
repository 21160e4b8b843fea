package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

// GroundAnswerName is the registered name of GroundAnswer.
const GroundAnswerName = actwire.GroundAnswerName

// groundWindow is how much of the document GroundAnswer reads at a time;
// the grounder keeps only a few kilobytes of it between windows.
const groundWindow = 1 << 20

// groundAnswer finds each answer in the text the run read, from the
// document's own bytes (never from the model). It looks first where the
// answer's memory took it from, its evidence (passages, then chunks, the
// entries that support the answer first, latest first: api.Grounding),
// and streams the rest of the indexed document version only for answers
// not found there, in windows, whatever its size, stopping as soon as
// every answer is found verbatim. In a corpus the document headers are
// skipped: no match or quote crosses into another document. An answer the
// model gave as no answer (no \boxed{} answer, or one that says it cannot
// answer) is no_answer and not searched. Each found answer gets its pages
// from the index's page map and a quote from one small ranged read, and
// each answer its citation (report.Cite). A result.json named for an
// answer is rewritten with both.
func (a *Activities) groundAnswer(ctx context.Context, in actwire.GroundInput) (*actwire.GroundOutput, error) {
	indexLoc, docLoc, err := a.groundLocations(in)
	if err != nil {
		return nil, err
	}
	stop := a.startHeartbeat(ctx)
	defer stop()
	idx, err := a.groundIndex(ctx, in, indexLoc)
	if err != nil {
		return nil, err
	}
	groundings, searched := groundable(in.Answers)
	gaps := corpusHeaders(idx.Corpus)
	ev, err := a.searchEvidence(ctx, docLoc, in.ETag, gaps, in.Answers, searched)
	if err != nil {
		return nil, err
	}
	if err := a.groundRest(ctx, docLoc, in, gaps, ev, searched, groundings); err != nil {
		return nil, err
	}
	if err := a.placeGroundings(ctx, docLoc, in, idx, groundings); err != nil {
		return nil, err
	}
	out := &actwire.GroundOutput{Groundings: groundings, Citations: citeAnswers(idx, in.Answers, searched, ev, groundings)}
	for i, it := range in.Answers {
		if it.ResultURI != "" {
			if err := a.groundResult(ctx, it.ResultURI, in.RunID, out.Groundings[i], out.Citations[i]); err != nil {
				return nil, err
			}
		}
	}
	a.logGrounded(ctx, in, out.Groundings)
	return out, nil
}

// groundLocations parses the index and document URIs of in, and refuses
// an index this worker did not make.
func (a *Activities) groundLocations(in actwire.GroundInput) (indexLoc, docLoc s3store.Location, err error) {
	indexLoc, err = s3store.ParseURI(in.IndexURI)
	if err != nil {
		return indexLoc, docLoc, badInput(fmt.Errorf("index uri: %w", err))
	}
	if indexLoc.Bucket != a.Bucket || !strings.HasPrefix(indexLoc.Key, "indexes/") {
		return indexLoc, docLoc, forbidden("index %s is not one this worker made (under s3://%s/indexes/)", in.IndexURI, a.Bucket)
	}
	docLoc, err = s3store.ParseURI(in.Document)
	if err != nil {
		return indexLoc, docLoc, badInput(fmt.Errorf("document: %w", err))
	}
	return indexLoc, docLoc, nil
}

// groundIndex loads the index at loc, checks that it describes the
// document version in names, and checks every answer's result URI and
// evidence ranges against the worker's write prefixes and the index.
func (a *Activities) groundIndex(ctx context.Context, in actwire.GroundInput, loc s3store.Location) (*memagent.ChunkIndex, error) {
	idx, err := a.loadIndex(ctx, loc)
	if err != nil {
		return nil, storeError(err, in.IndexURI)
	}
	if err := a.allowIndexedRead(in.Document, in.ETag, in.IndexURI, loc, idx); err != nil {
		return nil, err
	}
	for i, it := range in.Answers {
		if it.ResultURI != "" {
			if err := a.allowOutput(ctx, "result_uri", it.ResultURI); err != nil {
				return nil, err
			}
		}
		for j, e := range it.Evidence {
			if err := checkEvidence(e, idx.Bytes); err != nil {
				return nil, badInput(fmt.Errorf("answers[%d].evidence[%d]: %w", i, j, err))
			}
		}
	}
	return idx, nil
}

// checkEvidence refuses an evidence entry whose chunk range is not in a
// document of size bytes or too long for one read, or whose passage is
// not inside its chunk.
func checkEvidence(e actwire.GroundEvidence, size int64) error {
	if e.Start < 0 || e.End < e.Start || e.End > size || e.End-e.Start > s3store.MaxRangeBytes ||
		e.PassageEnd < e.PassageStart || (e.PassageEnd > 0 && (e.PassageStart < e.Start || e.PassageEnd > e.End)) {
		return fmt.Errorf("range [%d,%d) (passage [%d,%d)) is not in the document's %d bytes",
			e.Start, e.End, e.PassageStart, e.PassageEnd, size)
	}
	return nil
}

// groundable marks the answers to search; the others, given as no answer,
// are no_answer already.
func groundable(answers []actwire.GroundItem) ([]api.Grounding, []bool) {
	groundings := make([]api.Grounding, len(answers))
	searched := make([]bool, len(answers))
	for i, it := range answers {
		if !it.AnswerFound || strings.TrimSpace(it.Answer) == "" || memagent.IsNoAnswer(it.Answer) {
			groundings[i] = api.Grounding{Status: api.GroundingNoAnswer}
			continue
		}
		searched[i] = true
	}
	return groundings, searched
}

// groundRest sets the grounding of each searched answer: where its
// evidence holds it, else where the streamed document does, else
// not_found.
func (a *Activities) groundRest(ctx context.Context, docLoc s3store.Location, in actwire.GroundInput, gaps [][2]int64,
	ev []evidenceFind, searched []bool, groundings []api.Grounding) error {
	var rest []string
	var which []int
	for i := range in.Answers {
		switch {
		case !searched[i]:
		case ev[i].match.Status != api.GroundingNotFound:
			groundings[i] = api.Grounding{Status: ev[i].match.Status, Start: ev[i].match.Start, End: ev[i].match.End, FoundIn: ev[i].in}
		default:
			rest = append(rest, strings.TrimSpace(in.Answers[i].Answer))
			which = append(which, i)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	matches, err := a.scanForAnswers(ctx, docLoc, in.ETag, gaps, rest)
	if err != nil {
		return err
	}
	for k, m := range matches {
		g := api.Grounding{Status: m.Status}
		if g.Found() {
			g.Start, g.End, g.FoundIn = m.Start, m.End, api.GroundingInText
		}
		groundings[which[k]] = g
	}
	return nil
}

// placeGroundings gives each found grounding its pages, its document in a
// corpus, and its quote: one a page when the occurrence crosses pages.
func (a *Activities) placeGroundings(ctx context.Context, docLoc s3store.Location, in actwire.GroundInput, idx *memagent.ChunkIndex, groundings []api.Grounding) error {
	for i := range groundings {
		g := &groundings[i]
		if !g.Found() {
			continue
		}
		g.Pages = idx.PageMap.Ref(g.Start, g.End)
		if refs := idx.Corpus.Refs(g.Start, g.End); len(refs) > 0 {
			g.Document, g.Pages = refs[0].Document, refs[0].Pages
		}
		parts, err := a.quote(ctx, docLoc, in.ETag, idx, memagent.GroundMatch{Status: g.Status, Start: g.Start, End: g.End})
		if err != nil {
			return storeError(err, in.Document)
		}
		if len(parts) > 0 {
			g.Quote = parts[0].Text
		}
		if len(parts) > 1 {
			g.QuoteParts = parts
		}
	}
	return nil
}

// citeAnswers is the citation of each searched answer (report.Cite) from
// its grounding and its evidence; an answer not searched has none.
func citeAnswers(idx *memagent.ChunkIndex, answers []actwire.GroundItem, searched []bool, ev []evidenceFind, groundings []api.Grounding) []api.Citation {
	citations := make([]api.Citation, len(answers))
	for i, it := range answers {
		if !searched[i] {
			continue
		}
		entries := make([]report.CiteEntry, len(it.Evidence))
		for j, e := range it.Evidence {
			entries[j] = citeEntry(idx, e, ev[i].passages[j])
		}
		citations[i] = report.Cite(it.Answer, &groundings[i], entries)
	}
	return citations
}

// logGrounded logs how many answers were grounded where, and how.
func (a *Activities) logGrounded(ctx context.Context, in actwire.GroundInput, groundings []api.Grounding) {
	counts := map[string]int{}
	for _, g := range groundings {
		counts[g.Status+g.FoundIn]++
	}
	a.logger().InfoContext(ctx, "answers grounded", "document", in.Document, "answers", len(in.Answers),
		"verbatim_in_evidence", counts[api.GroundingVerbatim+api.GroundingInPassage]+counts[api.GroundingVerbatim+api.GroundingInChunk],
		"verbatim_in_text", counts[api.GroundingVerbatim+api.GroundingInText],
		"normalized_in_evidence", counts[api.GroundingNormalized+api.GroundingInPassage]+counts[api.GroundingNormalized+api.GroundingInChunk],
		"normalized_in_text", counts[api.GroundingNormalized+api.GroundingInText],
		"not_found", counts[api.GroundingNotFound], "no_answer", counts[api.GroundingNoAnswer])
}

// citeEntry is evidence entry e as report.Cite reads it: its passage's
// pages (else its chunk's) and document, and the passage's text.
func citeEntry(idx *memagent.ChunkIndex, e actwire.GroundEvidence, passage string) report.CiteEntry {
	start, end := e.Start, e.End
	if e.PassageEnd > e.PassageStart {
		start, end = e.PassageStart, e.PassageEnd
	}
	c := report.CiteEntry{Pages: idx.PageMap.Ref(start, end), Passage: passage, Supports: e.Supports}
	if refs := idx.Corpus.Refs(start, end); len(refs) > 0 {
		c.Document, c.Pages = refs[0].Document, refs[0].Pages
	}
	return c
}

// evidenceFind is what searchEvidence found for one answer: the match it
// chose and where (api.GroundingInPassage or api.GroundingInChunk), and
// the text of each evidence entry's passage.
type evidenceFind struct {
	match    memagent.GroundMatch
	in       string
	passages []string
}

// evidenceHit is the match of an answer in one evidence entry's passage
// and in its chunk.
type evidenceHit struct{ passage, chunk memagent.GroundMatch }

// evidenceRef names entry entry of the evidence of answer item.
type evidenceRef struct{ item, entry int }

// searchEvidence reads each evidence chunk of the answers once (through
// the worker's chunk cache, which the memory updates filled) and looks
// for each searched answer in its evidence: the first place, in the order
// api.Grounding gives, that holds it verbatim, else normalised. It keeps
// every entry's passage text for the citation. An answer found in no
// entry is not_found here.
func (a *Activities) searchEvidence(ctx context.Context, loc s3store.Location, etag string, gaps [][2]int64, items []actwire.GroundItem, searched []bool) ([]evidenceFind, error) {
	finds := make([]evidenceFind, len(items))
	hits := make([][]evidenceHit, len(items))
	for i, it := range items {
		finds[i].match = memagent.GroundMatch{Status: api.GroundingNotFound}
		finds[i].passages = make([]string, len(it.Evidence))
		hits[i] = make([]evidenceHit, len(it.Evidence))
	}
	byChunk, chunks := evidenceChunks(items)
	for n, k := range chunks {
		sctx, cancel := a.s3ctx(ctx)
		text, err := a.readChunk(sctx, loc, k[0], k[1], etag)
		cancel()
		if err != nil {
			return nil, storeError(err, loc.String())
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, n)
		}
		for _, r := range byChunk[k] {
			e := items[r.item].Evidence[r.entry]
			h := &hits[r.item][r.entry]
			h.passage = memagent.GroundMatch{Status: api.GroundingNotFound}
			h.chunk = h.passage
			if e.PassageEnd > e.PassageStart {
				p := text[e.PassageStart-k[0] : e.PassageEnd-k[0]]
				finds[r.item].passages[r.entry] = string(p)
				if searched[r.item] {
					h.passage = groundIn(p, e.PassageStart, gaps, items[r.item].Answer)
				}
			}
			if searched[r.item] {
				h.chunk = groundIn(text, k[0], gaps, items[r.item].Answer)
			}
		}
	}
	for i, it := range items {
		if searched[i] {
			finds[i].match, finds[i].in = pickEvidence(it.Evidence, hits[i], finds[i].match)
		}
	}
	return finds, nil
}

// evidenceChunks are the entries of every answer by chunk range, and the
// non-empty ranges in document order, so that each chunk is read once
// whatever the number of questions that cite it.
func evidenceChunks(items []actwire.GroundItem) (map[[2]int64][]evidenceRef, [][2]int64) {
	byChunk := map[[2]int64][]evidenceRef{}
	var chunks [][2]int64
	for i, it := range items {
		for j, e := range it.Evidence {
			k := [2]int64{e.Start, e.End}
			if e.End <= e.Start {
				continue
			}
			if _, ok := byChunk[k]; !ok {
				chunks = append(chunks, k)
			}
			byChunk[k] = append(byChunk[k], evidenceRef{i, j})
		}
	}
	sort.Slice(chunks, func(x, y int) bool { return chunks[x][0] < chunks[y][0] })
	return byChunk, chunks
}

// pickEvidence chooses an answer's match among its evidence hits: a
// passage before a chunk, verbatim before normalised, supporting entries
// before the others and the latest first in each. It returns none (and
// where "") when no entry holds the answer.
func pickEvidence(evidence []actwire.GroundEvidence, hits []evidenceHit, none memagent.GroundMatch) (memagent.GroundMatch, string) {
	order := make([]int, 0, len(evidence))
	for _, supports := range []bool{true, false} {
		for j := len(evidence) - 1; j >= 0; j-- {
			if evidence[j].Supports == supports {
				order = append(order, j)
			}
		}
	}
	pick := func(get func(evidenceHit) memagent.GroundMatch) (memagent.GroundMatch, bool) {
		for _, status := range []string{api.GroundingVerbatim, api.GroundingNormalized} {
			for _, j := range order {
				if m := get(hits[j]); m.Status == status {
					return m, true
				}
			}
		}
		return memagent.GroundMatch{}, false
	}
	if m, ok := pick(func(h evidenceHit) memagent.GroundMatch { return h.passage }); ok {
		return m, api.GroundingInPassage
	}
	if m, ok := pick(func(h evidenceHit) memagent.GroundMatch { return h.chunk }); ok {
		return m, api.GroundingInChunk
	}
	return none, ""
}

// groundIn looks for answer in text, the bytes of the document from
// offset at, skipping what of it lies in gaps (ranges of the document),
// and returns its first verbatim match, else its first normalised one, in
// document offsets.
func groundIn(text []byte, at int64, gaps [][2]int64, answer string) memagent.GroundMatch {
	g := memagent.NewGrounder([]string{strings.TrimSpace(answer)})
	writeSkipping(g, text, at, gaps)
	g.Close()
	m := g.Results()[0]
	if m.Status != api.GroundingNotFound {
		m.Start += at
		m.End += at
	}
	return m
}

// writeSkipping writes text, the bytes of the document from offset at, to
// g, passing over (Grounder.Skip) the bytes that lie in gaps, which are
// sorted and do not overlap.
func writeSkipping(g *memagent.Grounder, text []byte, at int64, gaps [][2]int64) {
	end := at + int64(len(text))
	i := sort.Search(len(gaps), func(i int) bool { return gaps[i][1] > at })
	pos := at
	for ; i < len(gaps) && gaps[i][0] < end && pos < end; i++ {
		gs, ge := max(gaps[i][0], pos), min(gaps[i][1], end)
		if gs > pos {
			g.Write(text[pos-at : gs-at])
		}
		g.Skip(ge - gs)
		pos = ge
	}
	if pos < end {
		g.Write(text[pos-at:])
	}
}

// corpusHeaders are the ranges of a corpus's document header lines, in
// order; nil for a single document.
func corpusHeaders(c *memagent.CorpusMap) [][2]int64 {
	if c == nil {
		return nil
	}
	gaps := make([][2]int64, 0, len(c.Documents))
	for i, d := range c.Documents {
		body, _ := c.Body(i)
		if body > d.Start {
			gaps = append(gaps, [2]int64{d.Start, body})
		}
	}
	return gaps
}

// scanForAnswers streams the document at etag through a Grounder, a
// window at a time, skipping gaps, until it ends or every answer is found
// verbatim.
func (a *Activities) scanForAnswers(ctx context.Context, loc s3store.Location, etag string, gaps [][2]int64, answers []string) ([]memagent.GroundMatch, error) {
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
		writeSkipping(g, buf[:n], read, gaps)
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

// quote reads the text around a match and cuts the quote from it, within
// the match's document in a corpus and within its page (or section) of a
// converted document: a part a page when the match crosses pages
// (memagent.GroundQuoteParts), each with its page. The match's pages are
// the ones its page map gives: the index's, or its corpus document's.
func (a *Activities) quote(ctx context.Context, loc s3store.Location, etag string, idx *memagent.ChunkIndex, m memagent.GroundMatch) ([]api.QuotePart, error) {
	const n = api.MaxGroundingQuoteBytes
	from, to := max(0, m.Start-n), m.End+n
	if m.End-m.Start >= n {
		from, to = m.Start, m.Start+n+4
	}
	if idx.Bytes > 0 {
		to = min(to, idx.Bytes)
	}
	pm := idx.PageMap
	if c := idx.Corpus; c != nil {
		for i, d := range c.Documents {
			if d.Start <= m.Start && m.Start < d.End {
				body, end := c.Body(i)
				from, to = max(from, body), min(to, end)
				pm = d.PageMap
				break
			}
		}
	}
	pages := pm.SpanRanges(m.Start, m.End)
	if len(pages) > 0 {
		from, to = max(from, pages[0][0]), min(to, pages[len(pages)-1][1])
	}
	if to <= from {
		return nil, nil
	}
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	b, err := a.Store.ReadRange(sctx, loc, from, to, etag)
	if err != nil {
		return nil, err
	}
	cut := memagent.GroundQuoteParts(b, from, m.Start, m.End, n, pages)
	parts := make([]api.QuotePart, 0, len(cut))
	for _, p := range cut {
		if p.Text != "" {
			parts = append(parts, api.QuotePart{Text: p.Text, Pages: pm.Ref(p.Start, p.End)})
		}
	}
	return parts, nil
}

// groundResult adds the grounding and citation to the run's result.json at uri. A
// result that is missing, or another run's, is left alone.
func (a *Activities) groundResult(ctx context.Context, uri, runID string, g api.Grounding, c api.Citation) error {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return badInput(fmt.Errorf("result uri: %w", err))
	}
	var res StoredResult
	if !a.readKept(ctx, loc, &res) || res.RunID != runID {
		return nil
	}
	res.Grounding = &g
	if res.AnswerFound {
		res.AnswerPages, res.AnswerSources = c.AnswerPages, c.AnswerSources
		res.ContextPages, res.ContextSources = c.ContextPages, c.ContextSources
	}
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	if err := a.putJSON(sctx, loc, res); err != nil {
		return fmt.Errorf("write grounding into %s: %w", uri, err)
	}
	return nil
}
