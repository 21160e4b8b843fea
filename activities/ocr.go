package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// OCRNone, as Activities.OCRCommand, turns OCR off on the worker: a
// scanned page then fails its document as memagent.BadInput.
const OCRNone = "none"

// OCRStatus says whether this worker reads scanned pages: the engine
// and its languages, or why there is none.
type OCRStatus struct {
	// Engine is "tesseract 5.3.0", or "" without one.
	Engine string
	// Languages are the installed languages.
	Languages []string
	// Workers is how many pages are read at once.
	Workers int
	// Err says why there is no engine.
	Err error
}

// ocrEngine finds the OCR engine once (Activities.OCRCommand), for the
// worker's life.
type ocrEngine struct {
	once   sync.Once
	engine *docconv.Engine
	err    error
}

// OCR finds the worker's OCR engine (on first use; later calls return the
// same) and says what it found. The worker logs it at start.
func (a *Activities) OCR(ctx context.Context) OCRStatus {
	e, err := a.findOCR(ctx)
	if err != nil {
		return OCRStatus{Err: err}
	}
	return OCRStatus{Engine: e.Name(), Languages: e.Languages, Workers: e.Slots()}
}

func (a *Activities) findOCR(ctx context.Context) (*docconv.Engine, error) {
	a.ocr.once.Do(func() {
		if a.OCRCommand == OCRNone {
			a.ocr.err = fmt.Errorf("OCR is turned off on this worker (MEMAGENT_TESSERACT=%s)", OCRNone)
			return
		}
		e, err := docconv.FindEngine(context.WithoutCancel(ctx), a.OCRCommand)
		if err != nil {
			a.ocr.err = err
			return
		}
		e.Workers, e.PageTimeout, e.MemoryBytes = a.Limits.OCRWorkers, a.Limits.OCRPageTimeout, a.Limits.OCRMemoryBytes
		a.ocr.engine = e
	})
	return a.ocr.engine, a.ocr.err
}

// ocrOptions are a conversion's OCR options, from the request's.
func ocrOptions(mode, languages string) docconv.OCROptions {
	return docconv.OCROptions{Mode: mode, Languages: languages}.Normalized()
}

// ocrVariant is the part of a PDF's (or an email's, whose attachments'
// scans and images OCR reads) converted prefix that names how its pages
// were read: "ocr-auto-eng/", "ocr-force-eng+deu/", or "" with OCR off
// (the text layer alone).
func ocrVariant(format string, o docconv.OCROptions) string {
	switch format {
	case docconv.FormatPDF, docconv.FormatEmail, docconv.FormatMbox:
	default:
		return ""
	}
	if o.Mode == docconv.OCROff {
		return ""
	}
	return "ocr-" + o.Mode + "-" + strings.ReplaceAll(o.Languages, "/", "-") + "/"
}

// ocrPagesArea holds what OCR read of each page of each object version,
// under converted/ocr/<object version>/<engine and languages>/: a retried
// conversion, or one in another mode, reads only the pages not there.
const ocrPagesArea = "converted/ocr/"

// ocrCache is the OCR cache of one object version in the worker's bucket.
type ocrCache struct {
	a      *Activities
	prefix string // converted/ocr/<object version>/
}

func (c *ocrCache) loc(key string, page int) s3store.Location {
	sum := sha256.Sum256([]byte(key))
	return s3store.Location{Bucket: c.a.Bucket, Key: fmt.Sprintf("%s%s/page-%06d.json", c.prefix, hex.EncodeToString(sum[:8]), page)}
}

// Load implements docconv.OCRCache.
func (c *ocrCache) Load(ctx context.Context, key string, page int) (*docconv.OCRResult, bool) {
	var r docconv.OCRResult
	if !c.a.readKept(ctx, c.loc(key, page), &r) {
		return nil, false
	}
	return &r, true
}

// Store implements docconv.OCRCache: a page not kept is read again by a
// later conversion, so a failed write only costs that.
func (c *ocrCache) Store(ctx context.Context, key string, page int, r *docconv.OCRResult) {
	data, err := json.Marshal(r)
	if err != nil {
		return
	}
	sctx, cancel := c.a.s3ctx(ctx)
	defer cancel()
	if err := c.a.Store.Put(sctx, c.loc(key, page), data, "application/json"); err != nil {
		c.a.logger().WarnContext(ctx, "OCR of a page not kept", "page", page, "err", err)
	}
}

// maxOCRReadings bounds the readings of one page OCRWords looks at: one a
// set of engine and languages the page was read with.
const maxOCRReadings = 8

// OCRWords returns the words, with their boxes, that OCR read on page
// (from 1) of the document at uri when a conversion read it, one list a
// reading (engine and languages), from the OCR cache of the document's
// current version: the review desk highlights a quote on a scanned page
// from them without running the engine again. None (and no error) when
// no conversion of this version read the page by OCR, when the reading
// is older than word boxes, or when the store cannot list folders. uri
// must be readable by the worker (CheckRead).
func (a *Activities) OCRWords(ctx context.Context, uri string, page int) ([][]docconv.WordBox, error) {
	loc, info, err := a.headReadable(ctx, uri)
	if err != nil {
		return nil, err
	}
	lister, ok := a.Store.(folderLister)
	if !ok {
		return nil, nil
	}
	c := &ocrCache{a: a, prefix: ocrPagesArea + versionID(loc.String(), info) + "/"}
	sctx, cancel := a.s3ctx(ctx)
	folders, err := lister.ListFolders(sctx, a.Bucket, c.prefix)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("list OCR readings of %s: %w", uri, err)
	}
	var out [][]docconv.WordBox
	for _, f := range folders[:min(len(folders), maxOCRReadings)] {
		var r docconv.OCRResult
		loc := s3store.Location{Bucket: a.Bucket, Key: fmt.Sprintf("%s%spage-%06d.json", c.prefix, f, page)}
		if a.readKept(ctx, loc, &r) && r.Record.Page == page && len(r.Words) > 0 {
			out = append(out, r.Words)
		}
	}
	return out, nil
}

// AttachmentOCRWords is OCRWords for a page of an attachment of the email
// or mailbox at uri: the words OCR read on page (from 1, the
// attachment's own) of the attachment whose decoded bytes' SHA-256 is
// sum (hex; the bytes EmailAttachmentAt writes), when a conversion of
// the mailbox's current version read it, one list a reading. An
// attachment's pages are kept under keys of their own in the mailbox's
// OCR cache (docconv.AttachmentOCRKey): the engines and languages that
// read them are those the kept conversions' page maps record. None (and
// no error) when no conversion of this version read the page by OCR, or
// when the store cannot list folders. uri must be readable by the worker
// (CheckRead).
func (a *Activities) AttachmentOCRWords(ctx context.Context, uri, sum string, page int) ([][]docconv.WordBox, error) {
	if err := a.allowRead("document", uri); err != nil {
		return nil, err
	}
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		return nil, badInput(fmt.Errorf("attachment digest %q is not a SHA-256 in hex", sum))
	}
	if _, ok := a.Store.(folderLister); !ok {
		return nil, nil
	}
	loc, info, err := a.headReadable(ctx, uri)
	if err != nil {
		return nil, err
	}
	// The readings the conversions made: an engine and its languages
	// each, as the page maps record the pages OCR read.
	type reading struct{ engine, languages string }
	var readings []reading
	err = a.emailConversions(ctx, loc, info, func(d *actwire.ConvertedDocument) bool {
		for _, o := range d.PageMap.OCR {
			r := reading{o.Engine, o.Languages}
			if o.Engine != "" && !slices.Contains(readings, r) {
				readings = append(readings, r)
			}
		}
		return len(readings) < maxOCRReadings
	})
	if err != nil {
		return nil, err
	}
	c := &ocrCache{a: a, prefix: ocrPagesArea + versionID(loc.String(), info) + "/"}
	var out [][]docconv.WordBox
	for _, rd := range readings[:min(len(readings), maxOCRReadings)] {
		var r docconv.OCRResult
		key := docconv.AttachmentOCRKey(docconv.OCRKey(rd.engine, rd.languages), sum)
		if a.readKept(ctx, c.loc(key, page), &r) && r.Record.Page == page && len(r.Words) > 0 {
			out = append(out, r.Words)
		}
	}
	return out, nil
}

// ocrSummary fills a conversion output's OCR figures from its page map.
func ocrSummary(out *actwire.ConvertOutput, pm *memagent.PageMap) {
	if pm == nil {
		return
	}
	out.OCRPages, out.OCRSeconds = pm.OCRPages()
	for _, o := range pm.OCR {
		if o.Check() {
			out.OCRCheckPages = append(out.OCRCheckPages, o.Page)
		}
		if o.NotRead {
			out.OCRNotRead = append(out.OCRNotRead, o.Page)
		}
	}
}

// recordOCR counts a conversion's pages read by OCR and the engine's
// seconds on them, by outcome: read, blank or failed. Reused pages are
// not counted: no engine ran.
func (a *Activities) recordOCR(ctx context.Context, pages []memagent.OCRPage) {
	m := a.Metrics
	if m == nil || m.ocrPages == nil {
		return
	}
	for _, o := range pages {
		if o.Reused {
			continue
		}
		outcome := "read"
		switch {
		case o.NotRead:
			outcome = "not_read"
		case o.Error != "":
			outcome = "failed"
		case o.Blank:
			outcome = "blank"
		}
		attrs := metric.WithAttributes(attribute.String("outcome", outcome))
		m.ocrPages.Add(ctx, 1, attrs)
		m.ocrSeconds.Add(ctx, o.Seconds, attrs)
	}
}

// ocrCheckNote is the log's note of the pages a human should check.
func ocrCheckNote(pages []int) string {
	if len(pages) == 0 {
		return ""
	}
	parts := make([]string, len(pages))
	for i, p := range pages {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ",")
}

var _ docconv.OCRCache = (*ocrCache)(nil)

// noteHeartbeat sets the details the activity's heartbeats carry from
// now on (beginHeartbeat's, recorded with its next beat).
func noteHeartbeat(ctx context.Context, details any) {
	if hb, ok := ctx.Value(heartbeatKey{}).(*heartbeat); ok {
		hb.mu.Lock()
		hb.details = details
		hb.mu.Unlock()
	}
}

// headReadable checks that the worker may read the document at uri
// (CheckRead) and returns its location and its current version's
// metadata.
func (a *Activities) headReadable(ctx context.Context, uri string) (s3store.Location, s3store.ObjectInfo, error) {
	if err := a.allowRead("document", uri); err != nil {
		return s3store.Location{}, s3store.ObjectInfo{}, err
	}
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return s3store.Location{}, s3store.ObjectInfo{}, err
	}
	sctx, cancel := a.s3ctx(ctx)
	info, err := a.Store.Head(sctx, loc)
	cancel()
	return loc, info, err
}
