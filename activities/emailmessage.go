package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	loc, info, err := a.headReadable(ctx, uri)
	if err != nil {
		return nil, err
	}
	var found *memagent.EmailMessage
	err = a.emailConversions(ctx, loc, info, func(d *actwire.ConvertedDocument) bool {
		for _, m := range d.PageMap.Email.Messages {
			if m.Number == number {
				found = &m
				break
			}
		}
		return false // the headers are the same in each
	})
	return found, err
}

// emailConversions calls visit with each kept conversion of the email or
// mailbox at loc's version info that has its email index, until visit
// says to stop: the conversion under the worker's email limits
// (emailVariant) without OCR, then under each OCR mode and languages
// (ocrVariant), then those under other email limits, without OCR; at
// most maxEmailConversions are looked in. The caller has checked that
// the worker may read loc.
func (a *Activities) emailConversions(ctx context.Context, loc s3store.Location, info s3store.ObjectInfo, visit func(*actwire.ConvertedDocument) (more bool)) error {
	prefix := a.convertedPrefix(loc.String(), info)
	own := a.emailVariant(docconv.FormatEmail)
	variants := []string{own}
	if lister, ok := a.Store.(folderLister); ok {
		sctx, cancel := a.s3ctx(ctx)
		folders, err := lister.ListFolders(sctx, a.Bucket, prefix)
		cancel()
		if err != nil {
			return fmt.Errorf("list conversions of %s: %w", loc, err)
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
			return fmt.Errorf("read the email index of %s: %w", loc, err)
		}
		var d actwire.ConvertedDocument
		if json.Unmarshal(data, &d) != nil || d.Source != loc.String() || d.SourceETag != info.ETag || d.PageMap.Email == nil {
			continue
		}
		if !visit(&d) {
			return nil
		}
	}
	return nil
}

// EmailAttachment is EmailAttachmentAt naming the attachment by its path
// alone: the message's only attachment at apath (EmailAttachment.Path);
// a message with two of that path (two files of one name) is an error
// that says to name it by its place.
func (a *Activities) EmailAttachment(ctx context.Context, uri string, number int, apath string, maxBytes int64, w io.Writer) error {
	return a.EmailAttachmentAt(ctx, uri, number, 0, apath, maxBytes, w)
}

// EmailAttachmentAt writes to w the decoded bytes of attachment part of
// message number (both from 1: part is the attachment's place in
// EmailMessage.Attachments, where two attachments may share a name) of
// the email or mailbox at uri's current version, which must be at path
// apath (EmailAttachment.Path), at most maxBytes of them: the review desk
// renders the page a citation names of a PDF attachment from it. A part
// of 0 names the attachment by apath alone (EmailAttachment). The mailbox
// is read under the worker's read check (CheckRead) and its document
// limit, that message only walked under the worker's email limits,
// nothing converted. A mailbox, message or attachment that is not there,
// a place that holds another path, or an attachment over maxBytes, is an
// error that says so.
func (a *Activities) EmailAttachmentAt(ctx context.Context, uri string, number, part int, apath string, maxBytes int64, w io.Writer) error {
	loc, info, err := a.headReadable(ctx, uri)
	if err != nil {
		return err
	}
	if limit := a.Limits.withDefaults().MaxDocumentBytes; info.Size > limit {
		return fmt.Errorf("%s is %d bytes, over the worker's limit of %d", uri, info.Size, limit)
	}
	head, err := a.Store.ReadRange(ctx, loc, 0, min(info.Size, docconv.SniffBytes), info.ETag)
	if err != nil {
		return err
	}
	format := docconv.Detect(head)
	if format != docconv.FormatEmail && format != docconv.FormatMbox {
		return fmt.Errorf("%s is not an email or a mailbox (%s)", uri, format)
	}
	src, err := os.CreateTemp("", "memagent-mbox-*")
	if err != nil {
		return err
	}
	defer os.Remove(src.Name())
	defer src.Close()
	body, err := a.Store.Open(ctx, loc, info.ETag)
	if err != nil {
		return err
	}
	_, err = io.Copy(src, body)
	body.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", uri, err)
	}
	c := &docconv.Converter{Limits: a.Limits.docconv()}
	lw := &limitedWriter{w: w, left: maxBytes}
	if err := c.ExtractAttachment(ctx, format, src.Name(), number, part, apath, lw); err != nil {
		if lw.over {
			return fmt.Errorf("%s of message %d of %s is over %d bytes", apath, number, uri, maxBytes)
		}
		var bad *docconv.Error
		if errors.As(err, &bad) {
			return fmt.Errorf("%s %s", uri, bad.Msg)
		}
		return err
	}
	return nil
}

// limitedWriter fails a write past left bytes.
type limitedWriter struct {
	w    io.Writer
	left int64
	over bool
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		l.over = true
		return 0, errors.New("over the limit")
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}
