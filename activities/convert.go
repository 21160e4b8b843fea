package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// ConvertDocumentName is the activity that turns a PDF, DOCX or HTML
// document into text before it is indexed.
const ConvertDocumentName = actwire.ConvertDocumentName

// ConverterVersion names the conversion rules; converted text is stored
// under it, so that changed rules convert again instead of reusing text
// made by the old ones.
//
// v2: running headers with changing page numbers and footnote marks
// dropped, word spaces from the text stream, page labels in the map.
// v3: running headers matched field by field (a page number set apart,
// a header-only page), footnotes kept apart after their paragraph, a
// table row a line, hyphenation kept in compounds; HTML boilerplate left
// out by main-content detection.
// v4: a PDF's scanned pages read by OCR (under a folder per OCR mode and
// languages), recorded in the page map.
// v5: structure kept: a PDF's headings, list items, terms and code apart
// (code as lines with their indentation), table cells apart by " | "
// in PDF and DOCX; DOCX list items with their markers, a table's row a
// line.
const ConverterVersion = "v5"

// convertedPrefix is where one version of a source's conversion lives.
func (a *Activities) convertedPrefix(uri string, info s3store.ObjectInfo) string {
	return "converted/" + ConverterVersion + "/" + versionID(uri, info) + "/"
}

// convertDocument detects the document's format by its first bytes and,
// for PDF, DOCX or HTML, converts it to UTF-8 text and a page map, stored
// under converted/<version>/<object version>/ in the worker's bucket: a
// second question about the same object version reuses them. Text is left
// as it is. A document that cannot be converted (encrypted, scanned
// without a text layer, corrupt, a format not supported) fails as
// memagent.BadInput saying which and what to do.
func (a *Activities) convertDocument(ctx context.Context, in actwire.ConvertInput) (*actwire.ConvertOutput, error) {
	ctx, hb := a.beginHeartbeat(ctx)
	defer hb.stop()
	loc, err := s3store.ParseURI(in.Document)
	if err != nil {
		return nil, badInput(err)
	}
	if err := a.allowInput(ctx, "document", in.Document, reader{}); err != nil {
		return nil, err
	}
	info, err := a.Store.Head(ctx, loc)
	if err != nil {
		return nil, storeError(err, in.Document)
	}
	text := &actwire.ConvertOutput{Document: in.Document, Format: docconv.FormatText}
	if info.Size == 0 {
		return text, nil // PrepareDocument says it is empty
	}
	if limit := a.Limits.withDefaults().MaxDocumentBytes; info.Size > limit {
		return nil, badInput(fmt.Errorf("document %s is %d bytes, over the worker's limit of %d: split it, or raise the limit on the worker", in.Document, info.Size, limit))
	}
	head, err := a.Store.ReadRange(ctx, loc, 0, min(info.Size, docconv.SniffBytes), info.ETag)
	if err != nil {
		return nil, storeError(err, in.Document)
	}
	format := docconv.Detect(head)
	if format == docconv.FormatText {
		return text, nil
	}
	if err := docconv.Unsupported(format, path.Base(loc.Key)); err != nil {
		return nil, badInput(fmt.Errorf("document %s %w", in.Document, err))
	}
	ocr := ocrOptions(in.OCR, in.OCRLanguages)
	if err := docconv.CheckOCR(ocr); err != nil {
		return nil, badInput(err)
	}
	prefix := a.convertedPrefix(in.Document, info) + ocrVariant(format, ocr) + a.emailVariant(format)
	textLoc := s3store.Location{Bucket: a.Bucket, Key: prefix + "text.txt"}
	mapLoc := s3store.Location{Bucket: a.Bucket, Key: prefix + "pages.json"}

	// Questions about one new document at once (a batch's) convert it
	// once in this process; the others wait and reuse it.
	unlock, err := a.lockPlan(ctx, mapLoc.String())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if done, ok := a.readConverted(ctx, mapLoc, textLoc); ok {
		out := convertOutput(done, mapLoc)
		out.Reused = true
		return out, nil
	}
	ended, err := a.guardHeavy(ctx, "conversion", in.Document)
	if err != nil {
		return nil, err
	}
	done, pending, err := a.convert(ctx, loc, info, format, textLoc, ocr, in.Survey, prefix)
	ended()
	if err != nil {
		return nil, err
	}
	if pending != nil {
		return pending, nil
	}
	data, err := json.MarshalIndent(done, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode page map: %w", err)
	}
	if err := a.Store.Put(ctx, mapLoc, data, "application/json"); err != nil {
		return nil, fmt.Errorf("write page map: %w", err)
	}
	out := convertOutput(done, mapLoc)
	a.recordOCR(ctx, done.PageMap.OCR)
	a.logger().InfoContext(ctx, "document converted", "document", in.Document, "format", done.PageMap.Format,
		"pages", done.PageMap.Pages, "bytes", done.Bytes, "dropped_lines", done.Dropped,
		"ocr_pages", out.OCRPages, "ocr_seconds", out.OCRSeconds, "ocr_check_pages", ocrCheckNote(out.OCRCheckPages), "ocr_not_read", ocrCheckNote(out.OCRNotRead))
	return out, nil
}

func convertOutput(d *actwire.ConvertedDocument, mapLoc s3store.Location) *actwire.ConvertOutput {
	out := &actwire.ConvertOutput{
		Document: d.Text, Format: d.PageMap.Format, Source: d.Source, SourceETag: d.SourceETag,
		PageMapURI: mapLoc.String(), Unit: d.PageMap.Unit, Pages: d.PageMap.Pages, Bytes: d.Bytes,
	}
	ocrSummary(out, &d.PageMap)
	return out
}

// readConverted returns an earlier conversion whose text is still there,
// unchanged.
func (a *Activities) readConverted(ctx context.Context, mapLoc, textLoc s3store.Location) (*actwire.ConvertedDocument, bool) {
	data, err := a.Store.ReadAll(ctx, mapLoc)
	if err != nil {
		return nil, false
	}
	var d actwire.ConvertedDocument
	if json.Unmarshal(data, &d) != nil || d.Text != textLoc.String() {
		return nil, false
	}
	// A conversion whose OCR budget ran out is not reused: converting
	// again reads the pages it did not (those it read are cached).
	for _, o := range d.PageMap.OCR {
		if o.NotRead {
			return nil, false
		}
	}
	info, err := a.Store.Head(ctx, textLoc)
	if err != nil || info.ETag != d.TextETag {
		return nil, false
	}
	return &d, true
}

// convert downloads the source to a temporary file (PDF and DOCX need
// random access), converts it into another, and uploads the text: memory
// holds a page at a time, never the document.
//
// With survey, a PDF whose scanned pages are not all read yet is not
// converted: its other pages' text is stored under prefix's survey/ and
// described by the returned pending output.
func (a *Activities) convert(ctx context.Context, loc s3store.Location, info s3store.ObjectInfo, format string, textLoc s3store.Location, ocr docconv.OCROptions, survey bool, prefix string) (_ *actwire.ConvertedDocument, pending *actwire.ConvertOutput, _ error) {
	src, err := os.CreateTemp("", "memagent-src-*")
	if err != nil {
		return nil, nil, fmt.Errorf("convert: %w", err)
	}
	defer os.Remove(src.Name())
	defer src.Close()
	body, err := a.Store.Open(ctx, loc, info.ETag)
	if err != nil {
		return nil, nil, storeError(err, loc.String())
	}
	r := &heartbeatReader{ctx: ctx, r: body, every: a.heartbeatEvery(ctx)}
	_, err = io.Copy(src, r)
	body.Close()
	if err != nil {
		if r.err != nil {
			return nil, nil, storeError(r.err, loc.String())
		}
		return nil, nil, fmt.Errorf("convert: save %s: %w", loc, err)
	}
	if err := src.Close(); err != nil {
		return nil, nil, fmt.Errorf("convert: %w", err)
	}
	out, err := os.CreateTemp("", "memagent-text-*")
	if err != nil {
		return nil, nil, fmt.Errorf("convert: %w", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	// The heartbeats carry how far the conversion is: pages laid out,
	// then pages read by OCR.
	var mu sync.Mutex
	var prog actwire.ConvertProgress
	note := func(update func(*actwire.ConvertProgress)) {
		mu.Lock()
		update(&prog)
		p := prog
		mu.Unlock()
		noteHeartbeat(ctx, p)
	}
	opts := docconv.Options{
		OCR:         ocr,
		Survey:      survey,
		OCRCache:    &ocrCache{a: a, prefix: ocrPagesArea + versionID(loc.String(), info) + "/"},
		Progress:    func(done, total int64) { note(func(p *actwire.ConvertProgress) { p.PagesRead, p.Pages = done, total }) },
		OCRProgress: func(done, total int) { note(func(p *actwire.ConvertProgress) { p.OCRDone, p.OCRPages = done, total }) },
	}
	res, err := a.converter(ctx).ConvertWith(ctx, format, src.Name(), out, opts)
	var bad *docconv.Error
	switch {
	case errors.As(err, &bad):
		return nil, nil, badInput(fmt.Errorf("document %s %s", loc, bad.Msg))
	case err != nil:
		return nil, nil, fmt.Errorf("convert %s: %w", loc, err)
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return nil, nil, err
	}
	if res.OCRPending > 0 {
		textLoc = s3store.Location{Bucket: a.Bucket, Key: prefix + "survey/text.txt"}
	}
	if err := a.Store.PutReader(ctx, textLoc, out, res.Bytes, "text/plain; charset=utf-8"); err != nil {
		return nil, nil, fmt.Errorf("upload text of %s: %w", loc, err)
	}
	textInfo, err := a.Store.Head(ctx, textLoc)
	if err != nil {
		return nil, nil, fmt.Errorf("upload text of %s: %w", loc, err)
	}
	done := &actwire.ConvertedDocument{
		Source: loc.String(), SourceETag: info.ETag, SourceSize: info.Size, Converter: ConverterVersion,
		Text: textLoc.String(), TextETag: textInfo.ETag, Bytes: res.Bytes, Dropped: res.Dropped,
		PageMap: res.Map, ConvertedAt: time.Now().UTC(),
	}
	if res.OCRPending == 0 {
		return done, nil, nil
	}
	// A survey: its map goes beside its text, never where a conversion's
	// would be found.
	mapLoc := s3store.Location{Bucket: a.Bucket, Key: prefix + "survey/pages.json"}
	data, err := json.Marshal(done)
	if err != nil {
		return nil, nil, fmt.Errorf("encode page map: %w", err)
	}
	if err := a.Store.Put(ctx, mapLoc, data, "application/json"); err != nil {
		return nil, nil, fmt.Errorf("write page map: %w", err)
	}
	p := convertOutput(done, mapLoc)
	p.OCRPages, p.OCRPending, p.OCRCached = res.OCRPending, res.OCRPending, res.OCRCached
	if e, err := a.findOCR(ctx); err == nil {
		p.OCRSecondsExpected = float64(res.OCRPending-res.OCRCached) * e.SecondsPerPage() / float64(e.Slots())
	}
	return nil, p, nil
}

// converter is the worker's Converter, made on first use, with the
// worker's OCR engine if it has one.
func (a *Activities) converter(ctx context.Context) *docconv.Converter {
	engine, _ := a.findOCR(ctx)
	a.indexMu.Lock()
	defer a.indexMu.Unlock()
	if a.documents == nil {
		a.documents = &docconv.Converter{CacheDir: docconv.DefaultCacheDir(), Limits: a.Limits.docconv(), OCR: engine}
	}
	return a.documents
}

// docconv is the converter's limits.
func (l Limits) docconv() docconv.Limits {
	return docconv.Limits{
		MaxTextBytes: l.MaxConvertedBytes, PDFMemoryBytes: l.PDFMemoryBytes, Timeout: l.ConvertTimeout,
		MaxOCRPages: l.OCRMaxPages, OCRBudget: l.OCRBudget,
		MaxMessages: l.EmailMaxMessages, MaxMessageBytes: l.EmailMaxMessageBytes, MaxParts: l.EmailMaxParts,
		MaxMIMEDepth: l.EmailMaxDepth, MaxPartBytes: l.EmailMaxPartBytes, MaxHeaderBytes: l.EmailMaxHeaderBytes,
	}
}

// loadPageMap reads the page map a conversion stored, for PrepareDocument
// to keep in the chunk index. The map must describe text.
func (a *Activities) loadPageMap(ctx context.Context, uri, text string) (*memagent.PageMap, error) {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return nil, badInput(fmt.Errorf("page map uri: %w", err))
	}
	if loc.Bucket != a.Bucket || !strings.HasPrefix(loc.Key, "converted/") {
		return nil, badInput(fmt.Errorf("page map %s is not one this worker converted", uri))
	}
	data, err := a.Store.ReadAll(ctx, loc)
	if err != nil {
		return nil, storeError(err, uri)
	}
	var d actwire.ConvertedDocument
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decode page map %s: %w", uri, err)
	}
	if d.Text != text {
		return nil, badInput(fmt.Errorf("page map %s describes %s, not %s", uri, d.Text, text))
	}
	return &d.PageMap, nil
}

// allowReadDocument checks the document a PrepareDocument reads: for
// converted text, the source it came from (the text is the worker's own,
// under converted/ in its bucket).
func (a *Activities) allowReadDocument(ctx context.Context, in actwire.PrepareInput) error {
	if in.Converted == nil {
		return a.allowInput(ctx, "document", in.Document, reader{})
	}
	if !strings.HasPrefix(in.Document, "s3://"+a.Bucket+"/converted/") {
		return badInput(fmt.Errorf("converted document %s is not under this worker's converted/ prefix", in.Document))
	}
	return a.allowInput(ctx, "document", in.Converted.Source, reader{})
}

// pageMapOf is the page map of converted text, or nil for a text document.
func (a *Activities) pageMapOf(ctx context.Context, in actwire.PrepareInput) (*memagent.PageMap, error) {
	if in.Converted == nil || in.Converted.PageMapURI == "" {
		return nil, nil
	}
	return a.loadPageMap(ctx, in.Converted.PageMapURI, in.Document)
}

// Close releases what the activities started for the worker's life: the
// PDFium runtime (about 200 MB once a PDF has been converted). Call it
// after the worker has stopped; a later ConvertDocument of a PDF fails.
// The plugin and memagent's worker call it when a worker stops.
func (a *Activities) Close() error {
	a.indexMu.Lock()
	defer a.indexMu.Unlock()
	if a.documents == nil {
		// Nothing started; a later conversion must not start it either.
		a.documents = &docconv.Converter{}
	}
	return a.documents.Close()
}
