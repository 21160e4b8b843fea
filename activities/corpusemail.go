package activities

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
)

// textCut replaces the bytes [start, end) of a document's converted text
// with text, as the corpus stream carries it.
type textCut struct {
	start, end int64
	text       string
}

// isEmail says a part is a converted email or mailbox with its index.
func (p corpusPart) isEmail() bool {
	return (p.format == docconv.FormatEmail || p.format == docconv.FormatMbox) && p.pages != nil && p.pages.Email != nil
}

// emailDuplicates finds the messages of a corpus's mailboxes that an
// earlier mailbox of the corpus holds already (the same hash: the same
// fields and body, EmailMessage.Hash): each is read once, where it comes
// first. A later copy's family is cut from the stream, its place holding
// a line that names the first (`[message 7 is a duplicate of inbox.mbox
// msg 3 "Re: Lease", read there]`) under a span of the copy's label; its
// index entry says where the copy was read (DuplicateOf, DuplicateIn) and
// the first's lists it (Copies). It returns the cuts of each part, in
// order, and sets each part's page map to a copy that matches its cut
// text; parts with no cut keep theirs. A corpus of fewer than two
// mailboxes has none.
func emailDuplicates(parts []corpusPart) [][]textCut {
	mailboxes := 0
	for _, p := range parts {
		if p.isEmail() {
			mailboxes++
		}
	}
	if mailboxes < 2 {
		return nil
	}
	type first struct{ part, msg int }
	seen := map[string]first{}
	cuts := make([][]textCut, len(parts))
	moved := make([]int64, len(parts)) // how far the part's cuts so far moved its later spans
	copied := make([]bool, len(parts)) // page map copied already
	own := func(i int) {
		if !copied[i] {
			parts[i].pages = copyEmailPages(parts[i].pages)
			copied[i] = true
		}
	}
	for i := range parts {
		if !parts[i].isEmail() {
			continue
		}
		for k, m := range parts[i].pages.Email.Messages {
			if m.Hash == "" || m.Skipped != "" || m.DuplicateOf > 0 {
				continue
			}
			f, ok := seen[m.Hash]
			if !ok {
				seen[m.Hash] = first{i, k}
				continue
			}
			if f.part == i {
				continue // within one mailbox: docconv found it
			}
			own(i)
			own(f.part)
			orig := &parts[f.part].pages.Email.Messages[f.msg]
			dup := &parts[i].pages.Email.Messages[k]
			orig.Copies = append(orig.Copies, parts[i].name+" "+dup.Label)
			if cut, ok := cutFamily(parts[i].pages, dup, fmt.Sprintf("--- %s ---\n\n[message %d is a duplicate of %s %s, read there]",
				dup.Label, dup.Number, parts[f.part].name, orig.Label)); ok {
				// The spans were moved by the cuts before: the text's
				// own offsets are where they were.
				delta := int64(len(cut.text)) - (cut.end - cut.start)
				cut.start, cut.end = cut.start-moved[i], cut.end-moved[i]
				moved[i] += delta
				cuts[i] = append(cuts[i], cut)
			}
			dup.DuplicateOf, dup.DuplicateIn, dup.Inclusive = orig.Number, parts[f.part].name, false
			parts[i].pages.Email.Duplicates++
		}
	}
	return cuts
}

// copyEmailPages is a copy of pm that cutFamily may change without
// changing pm: its spans, OCR records and email index.
func copyEmailPages(pm *memagent.PageMap) *memagent.PageMap {
	c := *pm
	c.Spans = append([]memagent.PageSpan(nil), pm.Spans...)
	c.OCR = append([]memagent.OCRPage(nil), pm.OCR...)
	ix := *pm.Email
	ix.Messages = append([]memagent.EmailMessage(nil), pm.Email.Messages...)
	for k := range ix.Messages {
		m := &ix.Messages[k]
		m.Attachments = append([]memagent.EmailAttachment(nil), m.Attachments...)
		m.Copies = append([]string(nil), m.Copies...)
	}
	c.Email = &ix
	return &c
}

// cutFamily replaces message m's family in pm (its spans FirstSpan to
// LastSpan) with one span of notice, moving the spans after it, dropping
// the OCR records of the spans cut, and returns the cut, at pm's offsets;
// false when the family has no text.
func cutFamily(pm *memagent.PageMap, m *memagent.EmailMessage, notice string) (textCut, bool) {
	if m.FirstSpan == 0 {
		return textCut{}, false
	}
	lo := sort.Search(len(pm.Spans), func(i int) bool { return pm.Spans[i].Number >= m.FirstSpan })
	hi := sort.Search(len(pm.Spans), func(i int) bool { return pm.Spans[i].Number > m.LastSpan })
	if lo >= hi {
		return textCut{}, false
	}
	cut := textCut{start: pm.Spans[lo].Start, end: pm.Spans[hi-1].End, text: notice}
	delta := int64(len(notice)) - (cut.end - cut.start)
	spans := append([]memagent.PageSpan(nil), pm.Spans[:lo]...)
	spans = append(spans, memagent.PageSpan{Number: m.FirstSpan, Label: m.Label, Start: cut.start, End: cut.start + int64(len(notice))})
	for _, s := range pm.Spans[hi:] {
		s.Start += delta
		s.End += delta
		spans = append(spans, s)
	}
	pm.Spans = spans
	ocr := pm.OCR[:0]
	for _, o := range pm.OCR {
		if o.Page < m.FirstSpan || o.Page > m.LastSpan {
			ocr = append(ocr, o)
		}
	}
	pm.OCR = ocr
	m.LastSpan = m.FirstSpan
	for a := range m.Attachments {
		m.Attachments[a].FirstSpan, m.Attachments[a].LastSpan = 0, 0
	}
	return cut, true
}

// spliceWriter writes what it is given, in the order of the source's
// bytes, less the ranges of its cuts (sorted, apart), each replaced by its
// text; n counts the bytes written.
type spliceWriter struct {
	w    io.Writer
	cuts []textCut
	pos  int64 // of the source
	n    int64
}

func (s *spliceWriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		if len(s.cuts) == 0 || s.pos < s.cuts[0].start {
			k := int64(len(p))
			if len(s.cuts) > 0 {
				k = min(k, s.cuts[0].start-s.pos)
			}
			if err := s.write(p[:k]); err != nil {
				return 0, err
			}
			p, s.pos = p[k:], s.pos+k
			continue
		}
		c := s.cuts[0]
		if s.pos == c.start {
			if err := s.write([]byte(c.text)); err != nil {
				return 0, err
			}
		}
		k := min(int64(len(p)), c.end-s.pos)
		p, s.pos = p[k:], s.pos+k
		if s.pos >= c.end {
			s.cuts = s.cuts[1:]
		}
	}
	return total, nil
}

func (s *spliceWriter) write(p []byte) error {
	n, err := s.w.Write(p)
	s.n += int64(n)
	return err
}

// finish reports a cut the source did not reach: a text shorter than its
// page map said.
func (s *spliceWriter) finish() error {
	if len(s.cuts) > 0 {
		return errors.New("the converted text ends before a duplicate message its page map places")
	}
	return nil
}
