package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// maxEmailConversions bounds the conversions of one mailbox version
// EmailMessage looks in: one a set of OCR mode and languages.
const maxEmailConversions = 8

// EmailMessage returns message number (from 1, as citations name it:
// `msg 12`) of the email or mailbox at uri, as a conversion of the
// document's current version indexed it: its headers and its family's
// attachments, in the message's order. The review desk shows the
// message a cell's answer was grounded on from it without converting the
// mailbox again. Nil (and no error) when no conversion of this version
// is kept (one under the worker's email limits is looked in first), or
// when the index has no such message. uri must be readable by the worker
// (CheckRead).
func (a *Activities) EmailMessage(ctx context.Context, uri string, number int) (*memagent.EmailMessage, error) {
	if err := a.allowRead("document", uri); err != nil {
		return nil, err
	}
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	sctx, cancel := a.s3ctx(ctx)
	info, err := a.Store.Head(sctx, loc)
	cancel()
	if err != nil {
		return nil, err
	}
	// Conversions of this version: under the worker's email limits
	// (emailVariant), without OCR, then under each OCR mode and languages
	// (ocrVariant); then those under other email limits, without OCR. The
	// headers are the same in each.
	prefix := a.convertedPrefix(loc.String(), info)
	own := a.emailVariant(docconv.FormatEmail)
	variants := []string{own}
	if lister, ok := a.Store.(folderLister); ok {
		sctx, cancel := a.s3ctx(ctx)
		folders, err := lister.ListFolders(sctx, a.Bucket, prefix)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list conversions of %s: %w", uri, err)
		}
		var others []string
		for _, f := range folders {
			switch {
			case strings.HasPrefix(f, "ocr-"):
				variants = append(variants, f+own)
			case strings.HasPrefix(f, "email-") && f != own:
				others = append(others, f)
			}
		}
		variants = append(variants, others...)
	}
	for _, v := range variants[:min(len(variants), maxEmailConversions)] {
		mapLoc := s3store.Location{Bucket: a.Bucket, Key: prefix + v + "pages.json"}
		sctx, cancel := a.s3ctx(ctx)
		data, err := a.Store.ReadAll(sctx, mapLoc)
		cancel()
		if errors.Is(err, s3store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the email index of %s: %w", uri, err)
		}
		var d actwire.ConvertedDocument
		if json.Unmarshal(data, &d) != nil || d.Source != loc.String() || d.SourceETag != info.ETag || d.PageMap.Email == nil {
			continue
		}
		for _, m := range d.PageMap.Email.Messages {
			if m.Number == number {
				return &m, nil
			}
		}
		return nil, nil
	}
	return nil, nil
}
