package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// AssembleCorpusName is the activity that turns a corpus (several
// documents asked about as one) into one stream of text to index.
const AssembleCorpusName = actwire.AssembleCorpusName

// corpusArea is where assembled corpora live, inside the converted text
// area (derived text, never read as a caller's document).
const corpusArea = "converted/corpora/"

// corpusObject is corpus.json: the corpus map of an assembled stream,
// written once the stream is in place.
type corpusObject struct {
	Text     string             `json:"text"`
	TextETag string             `json:"text_etag"`
	Bytes    int64              `json:"bytes"`
	Map      memagent.CorpusMap `json:"map"`
}

// assembleCorpus converts each document of a corpus (PDF, DOCX and HTML
// to text, as ConvertDocument does, reusing earlier conversions) and
// writes them, in order, as one stream of text: each document opened by
// its header line (memagent.CorpusHeader) and closed by a blank line. The
// stream and its map are stored under converted/corpora/<hash of the
// documents' versions>/, so the same versions are assembled once; the
// output describes the stream as a converted document whose page map is
// the corpus map. Every document is checked against the worker's read
// prefixes before anything is read.
func (a *Activities) assembleCorpus(ctx context.Context, in actwire.CorpusInput) (*actwire.ConvertOutput, error) {
	ctx, hb := a.beginHeartbeat(ctx)
	defer hb.stop()
	if err := api.CheckDocuments("", in.Documents); err != nil {
		return nil, badInput(err)
	}
	for i, d := range in.Documents {
		if err := a.allowInput(ctx, fmt.Sprintf("documents[%d]", i), d, reader{}); err != nil {
			return nil, err
		}
	}
	parts, id, err := a.corpusParts(ctx, in)
	if err != nil {
		return nil, err
	}
	textLoc := s3store.Location{Bucket: a.Bucket, Key: corpusArea + id + "/text.txt"}
	mapLoc := s3store.Location{Bucket: a.Bucket, Key: corpusArea + id + "/corpus.json"}
	unlock, err := a.lockPlan(ctx, mapLoc.String())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if c, err := a.loadCorpus(ctx, mapLoc.String()); err == nil {
		if info, err := a.Store.Head(ctx, textLoc); err == nil && info.ETag == c.TextETag {
			return corpusOutput(c, mapLoc, true), nil
		}
	}

	f, err := os.CreateTemp("", "memagent-corpus-*")
	if err != nil {
		return nil, fmt.Errorf("assemble corpus: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	c := &corpusObject{Text: textLoc.String()}
	if c.Map.Documents, c.Bytes, err = a.writeCorpusText(ctx, f, parts, in.InvalidUTF8 == api.InvalidUTF8Replace); err != nil {
		return nil, err
	}
	if err := a.uploadCorpus(ctx, f, textLoc, mapLoc, c); err != nil {
		return nil, err
	}
	a.logger().InfoContext(ctx, "corpus assembled", "documents", len(parts), "bytes", c.Bytes, "corpus", mapLoc.String())
	return corpusOutput(c, mapLoc, false), nil
}

// corpusPart is what one document of a corpus reads as: its converted
// text, or itself.
type corpusPart struct {
	uri, name, format string
	etag              string // of the document asked about
	text              s3store.Location
	textETag          string
	pages             *memagent.PageMap
}

// corpusParts converts each document of the corpus (reusing earlier
// conversions) and returns what each reads as, and the corpus's id: a
// hash of the converter and every document's and text's version and size.
func (a *Activities) corpusParts(ctx context.Context, in actwire.CorpusInput) ([]corpusPart, string, error) {
	parts := make([]corpusPart, len(in.Documents))
	key := sha256.New()
	fmt.Fprintf(key, "corpus v1\x00%s\x00", ConverterVersion)
	mailboxes := 0
	for i, d := range in.Documents {
		p, size, err := a.corpusPart(ctx, in, i)
		if err != nil {
			return nil, "", err
		}
		fmt.Fprintf(key, "%s\x00%s\x00%s\x00%d\x00", d, p.etag, p.textETag, size)
		parts[i] = p
		if p.isEmail() {
			mailboxes++
		}
	}
	if mailboxes > 1 {
		// Duplicates across mailboxes are read once (emailDuplicates):
		// a stream assembled before that rule is not this one.
		io.WriteString(key, "email duplicates v1\x00")
	}
	return parts, hex.EncodeToString(key.Sum(nil)[:16]), nil
}

// corpusPart converts documents[i] of the corpus and returns what it
// reads as and the size of its text, refusing an empty one.
func (a *Activities) corpusPart(ctx context.Context, in actwire.CorpusInput, i int) (corpusPart, int64, error) {
	d := in.Documents[i]
	conv, err := a.convertDocument(ctx, actwire.ConvertInput{Document: d, OCR: in.OCR, OCRLanguages: in.OCRLanguages})
	if err != nil {
		return corpusPart{}, 0, err
	}
	p := corpusPart{uri: d, name: memagent.CorpusName(d), format: conv.Format}
	loc, _ := s3store.ParseURI(conv.Document)
	info, err := a.Store.Head(ctx, loc)
	if err != nil {
		return p, 0, storeError(err, conv.Document)
	}
	if info.Size == 0 {
		return p, 0, badInput(fmt.Errorf("documents[%d] %s is empty", i, d))
	}
	p.text, p.textETag, p.etag = loc, info.ETag, info.ETag
	if conv.Source != "" {
		p.etag = conv.SourceETag
		if p.pages, err = a.loadPageMap(ctx, conv.PageMapURI, conv.Document); err != nil {
			return p, 0, err
		}
	}
	return p, info.Size, nil
}

// writeCorpusText writes the parts to w in order, each opened by its
// header line and closed by a blank line, and returns where each lies in
// the stream (its page map shifted there) and the stream's size, refusing
// a stream over the worker's limit for one document.
func (a *Activities) writeCorpusText(ctx context.Context, w io.Writer, parts []corpusPart, replace bool) ([]memagent.CorpusDocument, int64, error) {
	limit := a.Limits.withDefaults().MaxDocumentBytes
	var offset int64
	var docs []memagent.CorpusDocument
	cuts := emailDuplicates(parts)
	for i, p := range parts {
		header := memagent.CorpusHeader(i+1, p.name)
		doc := memagent.CorpusDocument{Document: p.uri, Name: p.name, ETag: p.etag, Format: p.format, Start: offset}
		if _, err := io.WriteString(w, header); err != nil {
			return nil, 0, fmt.Errorf("assemble corpus: %w", err)
		}
		textStart := offset + int64(len(header))
		var cut []textCut
		if cuts != nil {
			cut = cuts[i]
		}
		n, last, err := a.copyText(ctx, w, p.text, p.textETag, replace, p.uri, cut)
		if err != nil {
			return nil, 0, err
		}
		offset = textStart + n
		// A blank line between documents, so that no sentence runs on.
		sep := "\n\n"
		if last == '\n' {
			sep = "\n"
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return nil, 0, fmt.Errorf("assemble corpus: %w", err)
		}
		offset += int64(len(sep))
		if offset > limit {
			return nil, 0, badInput(fmt.Errorf("the corpus is over %d bytes by documents[%d] %s, the worker's limit for one document: ask about fewer documents at once, or raise the limit on the worker", limit, i, p.uri))
		}
		doc.End = offset
		doc.PageMap = shiftPages(p.pages, textStart)
		docs = append(docs, doc)
	}
	return docs, offset, nil
}

// shiftPages is a copy of pm (nil for nil) with every span moved by by
// bytes.
func shiftPages(pm *memagent.PageMap, by int64) *memagent.PageMap {
	if pm == nil {
		return nil
	}
	moved := *pm
	moved.Spans = make([]memagent.PageSpan, len(pm.Spans))
	for j, s := range pm.Spans {
		s.Start += by
		s.End += by
		moved.Spans[j] = s
	}
	return &moved
}

// uploadCorpus uploads the stream in f (c.Bytes long) to textLoc, then,
// with the text's ETag, the corpus map c to mapLoc: the map is written
// only once its stream is in place.
func (a *Activities) uploadCorpus(ctx context.Context, f *os.File, textLoc, mapLoc s3store.Location, c *corpusObject) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := a.Store.PutReader(ctx, textLoc, f, c.Bytes, "text/plain; charset=utf-8"); err != nil {
		return fmt.Errorf("upload corpus text: %w", err)
	}
	info, err := a.Store.Head(ctx, textLoc)
	if err != nil {
		return fmt.Errorf("upload corpus text: %w", err)
	}
	c.TextETag = info.ETag
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode corpus map: %w", err)
	}
	if err := a.Store.Put(ctx, mapLoc, data, "application/json"); err != nil {
		return fmt.Errorf("write corpus map: %w", err)
	}
	return nil
}

// copyText appends one document's text to w: valid UTF-8, or with its
// invalid bytes replaced when replace is set, less the ranges cuts
// replace (duplicate messages, emailDuplicates). It returns the bytes
// written and the last of them.
func (a *Activities) copyText(ctx context.Context, w io.Writer, loc s3store.Location, etag string, replace bool, uri string, cuts []textCut) (int64, byte, error) {
	body, err := a.Store.Open(ctx, loc, etag)
	if err != nil {
		return 0, 0, storeError(err, uri)
	}
	defer body.Close()
	r := &heartbeatReader{ctx: ctx, r: body, every: a.heartbeatEvery(ctx)}
	rep := memagent.NewUTF8Replacer(r)
	lw := &lastByteWriter{w: w}
	sw := &spliceWriter{w: lw, cuts: cuts}
	_, err = io.Copy(sw, rep)
	if err == nil {
		err = sw.finish()
	}
	n := sw.n
	switch {
	case r.err != nil:
		return 0, 0, storeError(r.err, uri)
	case err != nil:
		return 0, 0, fmt.Errorf("assemble corpus: copy %s: %w", uri, err)
	case rep.Replaced() > 0 && !replace:
		return 0, 0, badInput(fmt.Errorf("document %s is not UTF-8 text (%d invalid bytes); convert it to UTF-8 first, or ask with invalid_utf8 \"replace\"", uri, rep.Replaced()))
	}
	return n, lw.last, nil
}

// lastByteWriter remembers the last byte written through it.
type lastByteWriter struct {
	w    io.Writer
	last byte
}

func (l *lastByteWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.last = p[len(p)-1]
	}
	return l.w.Write(p)
}

func corpusOutput(c *corpusObject, mapLoc s3store.Location, reused bool) *actwire.ConvertOutput {
	return &actwire.ConvertOutput{Document: c.Text, Format: actwire.FormatCorpus, PageMapURI: mapLoc.String(),
		Pages: len(c.Map.Documents), Bytes: c.Bytes, Reused: reused}
}

// loadCorpus reads a corpus map the worker wrote.
func (a *Activities) loadCorpus(ctx context.Context, uri string) (*corpusObject, error) {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return nil, badInput(fmt.Errorf("corpus map uri: %w", err))
	}
	if loc.Bucket != a.Bucket || !strings.HasPrefix(loc.Key, corpusArea) {
		return nil, forbidden("corpus map %s is not one this worker assembled (under s3://%s/%s)", uri, a.Bucket, corpusArea)
	}
	data, err := a.Store.ReadAll(ctx, loc)
	if err != nil {
		return nil, storeError(err, uri)
	}
	var c corpusObject
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decode corpus map %s: %w", uri, err)
	}
	return &c, nil
}

// allowReadCorpus checks a corpus PrepareDocument indexes: the stream is
// the one its map describes, and every document of it is one this worker
// may read.
func (a *Activities) allowReadCorpus(ctx context.Context, in actwire.PrepareInput) (*memagent.CorpusMap, error) {
	c, err := a.loadCorpus(ctx, in.Converted.PageMapURI)
	if err != nil {
		return nil, err
	}
	if c.Text != in.Document {
		return nil, badInput(fmt.Errorf("corpus map %s describes %s, not %s", in.Converted.PageMapURI, c.Text, in.Document))
	}
	for i, d := range c.Map.Documents {
		if err := a.allowInput(ctx, fmt.Sprintf("documents[%d]", i), d.Document, reader{}); err != nil {
			return nil, err
		}
	}
	return &c.Map, nil
}

// citeCorpus cites a corpus chunk by the first of its sources (its
// documents, c.Refs of its range), and names the document of its evidence
// entry: the one its passage is in (citing the passage's pages), else the
// one the chunk starts in (citing the page it starts on).
func citeCorpus(c *memagent.CorpusMap, sources []api.SourceRef, out *actwire.UpdateOutput) {
	if len(sources) == 0 {
		return
	}
	out.Pages = sources[0].Pages
	citeEvidence(c, out.Evidence)
}

// citeEvidence names the corpus document of an evidence entry: the one its
// passage is in (citing the passage's pages), else the one its chunk
// starts in (citing the page it starts on). A nil corpus or entry is left
// as it is.
func citeEvidence(c *memagent.CorpusMap, ev *api.Evidence) {
	if c == nil || ev == nil {
		return
	}
	start, end := ev.Start, ev.Start+1
	if p := ev.Passage; p != nil {
		start, end = p.Start, p.End
	}
	if refs := c.Refs(start, end); len(refs) > 0 {
		ev.Document, ev.Pages = refs[0].Document, refs[0].Pages
		if p := ev.Passage; p != nil {
			p.Pages = refs[0].Pages
		}
	}
}
