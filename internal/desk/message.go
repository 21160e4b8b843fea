package desk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/signoff"
)

// The message of a family (issue 54): a cell grounded on email shows, in
// its family panel, the message its citation names (`msg 12 "Re: Lease"
// › lease.pdf p. 4`) as the conversion's email index has it: From, To,
// Cc, Date and Subject, and the family's attachments in the message's
// order, each with its type, whether it was read (and how many pages or
// sections) or why not, the one the cell is grounded on marked. The
// index is read through Config.Email under the worker's read check of
// the mailbox, as a scanned page's OCR words are; header values and text
// are shown to the reviewer, never logged.

// messageView is GET /api/message's answer: the message a cell's
// citation names.
type messageView struct {
	// Message is the family's label (`msg 12 "Re: Lease"`), Number the
	// message's place in the mailbox, Document the mailbox's file name.
	Message  string `json:"message"`
	Number   int    `json:"number"`
	Document string `json:"document,omitempty"`
	// The message's header fields, as the index has them (RFC 2047
	// words decoded).
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Cc      string `json:"cc,omitempty"`
	Date    string `json:"date,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Attachments are the family's members after the message's text, in
	// the message's order.
	Attachments []attachmentView `json:"attachments"`
	// Skipped says why the message was not read; DuplicateOf the
	// earlier copy it was read as.
	Skipped     string `json:"skipped,omitempty"`
	DuplicateOf int    `json:"duplicate_of,omitempty"`
	// Error says why the message's headers are not shown (the index not
	// kept, the mailbox not readable): the members are still listed.
	Error string `json:"error,omitempty"`
}

// attachmentView is one attachment of a messageView.
type attachmentView struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	Format      string `json:"format,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// Read says its text is in the mailbox's; Parts counts its pages (a
	// PDF) or sections; Error says why it was not read.
	Read  bool   `json:"read"`
	Parts int    `json:"parts,omitempty"`
	Error string `json:"error,omitempty"`
	// Cited marks the attachment the cell is grounded on.
	Cited bool `json:"cited,omitempty"`
}

// messageNumber is the number in a family's label `msg 12 "Re: Lease"`.
func messageNumber(label string) (int, bool) {
	f := strings.Fields(label)
	if len(f) < 2 || f[0] != "msg" {
		return 0, false
	}
	n, err := strconv.Atoi(f[1])
	return n, err == nil && n > 0
}

// mailbox is the document a row grounded on email cites: the corpus
// member its grounding names, else the review's source.
func mailbox(g *api.SignOffGrid, row signoff.Row) string {
	if g.Subject.Kind == api.SubjectReview && row.Grounding != nil && row.Grounding.Document == "" {
		return g.Subject.Source
	}
	return row.EvidenceDocument()
}

// message is the message row's citation names, nil when row is not
// grounded on email.
func (d *Desk) message(ctx context.Context, g *api.SignOffGrid, row signoff.Row) *messageView {
	key, part, ok := familyOf(row)
	if !ok {
		return nil
	}
	n, ok := messageNumber(key.Message)
	if !ok {
		return nil
	}
	doc := mailbox(g, row)
	v := &messageView{Message: key.Message, Number: n, Document: signoff.DocumentName(doc), Attachments: []attachmentView{}}
	if d.cfg.Email == nil {
		v.Error = "this desk does not read mailboxes' email index: the family's members are listed below"
		return v
	}
	m, err := d.emailMessage(ctx, doc, n)
	switch {
	case err != nil:
		d.cfg.Logger.WarnContext(ctx, "email index of a mailbox not read", "message", n, "err", err)
		v.Error = plain(err)
		return v
	case m == nil:
		v.Error = fmt.Sprintf("no conversion of the current version of %s is kept (it changed, or its conversion was removed): ask the review again to see the message's headers", v.Document)
		return v
	}
	v.From, v.To, v.Cc, v.Date, v.Subject = m.From, m.To, m.Cc, m.Date, m.Subject
	v.Skipped, v.DuplicateOf = m.Skipped, m.DuplicateOf
	cited := citedAttachment(m.Attachments, part, row.Grounding.Pages.First)
	for i, a := range m.Attachments {
		// An attachment not read has an Error, and may have a span: the
		// line that says so in the text.
		av := attachmentView{Name: a.Name, Path: a.Path, Format: a.Format, ContentType: a.ContentType,
			Read: a.FirstSpan > 0 && a.Error == "", Error: a.Error, Cited: i == cited}
		if av.Read {
			av.Parts = a.LastSpan - a.FirstSpan + 1
		}
		v.Attachments = append(v.Attachments, av)
	}
	return v
}

// citedAttachment is the index of the attachment a member part
// ("lease.pdf p. 4", "fwd.eml › lease.pdf p. 4") cites, -1 for the
// message's text: the attachment with the longest path the part opens
// with and, among attachments of one name, the one whose spans hold span.
func citedAttachment(at []memagent.EmailAttachment, part string, span int) int {
	if part == "" {
		return -1
	}
	best, bestLen := -1, -1
	for i, a := range at {
		if a.Path == "" || (part != a.Path && !strings.HasPrefix(part, a.Path+" ")) {
			continue
		}
		holds := a.FirstSpan > 0 && a.FirstSpan <= span && span <= a.LastSpan
		switch {
		case len(a.Path) > bestLen:
			best, bestLen = i, len(a.Path)
		case len(a.Path) == bestLen && holds:
			if b := at[best]; !(b.FirstSpan > 0 && b.FirstSpan <= span && span <= b.LastSpan) {
				best = i
			}
		}
	}
	return best
}

// emailMessage is message number of the mailbox at uri (Config.Email),
// under the worker's read check, kept in the page cache once found.
func (d *Desk) emailMessage(ctx context.Context, uri string, number int) (*memagent.EmailMessage, error) {
	_, _, key, err := d.version(ctx, uri)
	if err != nil {
		return nil, err
	}
	ck := fmt.Sprintf("email %s#%d", key, number)
	if v, ok := d.pages.cache.get(ck); ok {
		return v.(*memagent.EmailMessage), nil
	}
	m, err := d.cfg.Email.EmailMessage(ctx, uri, number)
	if err != nil || m == nil {
		// Not kept: a conversion may index the mailbox later.
		return nil, err
	}
	size := int64(len(ck) + len(m.From) + len(m.To) + len(m.Cc) + len(m.Date) + len(m.Subject) + len(m.MessageID) + len(m.Label) + 256)
	for _, r := range m.References {
		size += int64(len(r))
	}
	for _, a := range m.Attachments {
		size += int64(len(a.Name)+len(a.Path)+len(a.ContentType)+len(a.Error)) + 64
	}
	d.pages.cache.put(ck, m, size)
	return m, nil
}

func (d *Desk) apiMessage(w http.ResponseWriter, r *http.Request, name, sid string) {
	subject, id := r.URL.Query().Get("id"), r.URL.Query().Get("cell")
	g, rows, err := d.load(r.Context(), subject)
	if err != nil {
		jsonError(w, http.StatusNotFound, err)
		return
	}
	i := slices.IndexFunc(rows, func(row signoff.Row) bool { return row.Cell == id })
	if i < 0 {
		jsonError(w, http.StatusNotFound, fmt.Errorf("no cell %q in the sign-off of %s: reload the grid", id, subject))
		return
	}
	v := d.message(r.Context(), g, rows[i])
	if v == nil {
		jsonError(w, http.StatusNotFound, errors.New("the cell's answer is not grounded on a message"))
		return
	}
	writeJSON(w, v)
}

// attachmentMark opens the fragment of a source that names a mailbox's
// attachment: s3://bucket/matter.mbox#msg=21&part=2&attachment=lease.pdf.
const attachmentMark = "#msg="

// attachmentSource is the source of the PDF attachment of mbox a message
// row cites a page of ("" when it cites the message's text, or a part
// that is not a page of a PDF): the mailbox's URI and a fragment naming
// the message, the attachment's place among the message's attachments
// (part, from 1; 0 when the index is not at hand) and its path.
func attachmentSource(mbox string, row signoff.Row, part int) string {
	n, apath, _, ok := attachmentPage(row)
	if !ok || !strings.HasSuffix(strings.ToLower(apath), ".pdf") || strings.Contains(mbox, "#") {
		return ""
	}
	return mbox + attachmentMark + strconv.Itoa(n) + "&part=" + strconv.Itoa(part) + "&attachment=" + url.QueryEscape(apath)
}

// parseAttachmentSource reads an attachmentSource.
func parseAttachmentSource(src string) (mbox string, number, part int, apath string, ok bool) {
	mbox, frag, ok := strings.Cut(src, attachmentMark)
	if !ok {
		return "", 0, 0, "", false
	}
	q, err := url.ParseQuery("msg=" + frag)
	if err != nil {
		return "", 0, 0, "", false
	}
	number, err1 := strconv.Atoi(q.Get("msg"))
	part, err2 := strconv.Atoi(q.Get("part"))
	apath = q.Get("attachment")
	if err1 != nil || err2 != nil || number < 1 || part < 0 || apath == "" {
		return "", 0, 0, "", false
	}
	return mbox, number, part, apath, true
}

// attachmentPlace is the place (from 1) among its message's attachments
// of the attachment a message row cites a page of, as the mailbox's
// email index lists them: of two attachments of one name, the one whose
// spans hold the cited span (citedAttachment). 0 when the index is not
// at hand (no conversion of the mailbox's current version kept, a desk
// without Config.Email, the mailbox not readable): the attachment is
// then named by its path alone, which the worker refuses when two share
// it.
func (d *Desk) attachmentPlace(ctx context.Context, mbox string, row signoff.Row) int {
	n, apath, _, ok := attachmentPage(row)
	if !ok || d.cfg.Email == nil {
		return 0
	}
	_, part, _ := familyOf(row)
	m, err := d.emailMessage(ctx, mbox, n)
	if err != nil || m == nil {
		return 0
	}
	span := row.Grounding.Pages.First
	i := citedAttachment(m.Attachments, part, span)
	if i < 0 || m.Attachments[i].Path != apath {
		return 0
	}
	// Of two of one path, only the one whose spans hold the cited span
	// (an index of another conversion may number its spans otherwise).
	a := m.Attachments[i]
	holds := a.FirstSpan > 0 && a.FirstSpan <= span && span <= a.LastSpan
	if !holds && slices.ContainsFunc(m.Attachments[i+1:], func(o memagent.EmailAttachment) bool { return o.Path == apath }) {
		return 0
	}
	return i + 1
}

// attachmentPageRE is the page an attachment's part cites: "p. 3",
// "p. 13 (PDF p. 17)" (the physical page in parentheses), "p. 12 (scan,
// confidence 0.91)".
var attachmentPageRE = regexp.MustCompile(`^(.+) p\. (\d+)(?: \(PDF p\. (\d+)[;)])?`)

// attachmentPage is the message number, the attachment's path and the
// (physical) page a message row's citation names, when it names a page
// of an attachment.
func attachmentPage(row signoff.Row) (number int, apath string, page int, ok bool) {
	key, part, ok := familyOf(row)
	if !ok || part == "" {
		return 0, "", 0, false
	}
	if number, ok = messageNumber(key.Message); !ok {
		return 0, "", 0, false
	}
	m := attachmentPageRE.FindStringSubmatch(part)
	if m == nil {
		return 0, "", 0, false
	}
	p := m[2]
	if m[3] != "" {
		p = m[3]
	}
	page, err := strconv.Atoi(p)
	return number, m[1], page, err == nil && page > 0
}
