package memagent

// EmailIndex describes the messages of a converted email (one .eml) or
// mailbox (mbox), in mailbox order: their header fields, their families
// (a message and its attachments, as spans of the page map), their
// threads, and the messages not read (duplicates, and messages refused as
// hostile or malformed). It refers to the text by span numbers, never by
// byte offsets, so that it holds for the document inside a corpus's
// stream as well.
//
// Which messages are inclusive and how they thread depends on every
// message of the mailbox, so it lives here and never in the text: the
// text of message k depends on messages 1..k only, and a mailbox that
// grows by new messages keeps every earlier byte.
type EmailIndex struct {
	Messages []EmailMessage `json:"messages"`
	// Threads counts the threads; Skipped the messages not read for a
	// limit or damage; Duplicates those read once already.
	Threads    int `json:"threads"`
	Skipped    int `json:"skipped,omitempty"`
	Duplicates int `json:"duplicates,omitempty"`
}

// EmailMessage is one message of a mailbox: the fields a grid and a
// search use, as its headers say (RFC 2047 words decoded), and where its
// family lies in the text.
type EmailMessage struct {
	// Number is the message's place in the mailbox, from 1, counting
	// every message (duplicates and skipped ones too): citations name it
	// `msg 12`.
	Number     int      `json:"number"`
	From       string   `json:"from,omitempty"`
	To         string   `json:"to,omitempty"`
	Cc         string   `json:"cc,omitempty"`
	Date       string   `json:"date,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	MessageID  string   `json:"message_id,omitempty"`
	InReplyTo  string   `json:"in_reply_to,omitempty"`
	References []string `json:"references,omitempty"`
	// Label is how citations name the message: `msg 12 "Re: Lease"`.
	Label string `json:"label"`
	// FirstSpan and LastSpan are the numbers of the page map's spans that
	// hold the message's family (its body, then its attachments); 0 for a
	// message with no text (a duplicate, a skipped message).
	FirstSpan int `json:"first_span,omitempty"`
	LastSpan  int `json:"last_span,omitempty"`
	// Attachments are the family's members, in the message's order.
	Attachments []EmailAttachment `json:"attachments,omitempty"`
	// Thread is the number of the message's thread: the Number of its
	// earliest message. Parent is the Number of the message it replies
	// to, when the mailbox has it.
	Thread int `json:"thread"`
	Parent int `json:"parent,omitempty"`
	// ParentBy says what found Parent: its References
	// (ParentByReferences), its In-Reply-To (ParentByInReplyTo), its
	// quoted text, which the parent's own text holds (ParentByQuote,
	// for a message whose headers name no message of the mailbox), or
	// its subject (ParentBySubject, for a reply linked to nothing else).
	ParentBy string `json:"parent_by,omitempty"`
	// Inclusive marks a message whose text no later message of its
	// thread carries: the end of a branch, or a message with an
	// attachment its replies dropped. A review reads the inclusive
	// messages of a thread and has read it all.
	Inclusive bool `json:"inclusive,omitempty"`
	// DuplicateOf is the Number of the earlier copy of this message (the
	// same headers and body): a duplicate is listed, not read again. In
	// a corpus, DuplicateIn names the earlier document (another mailbox)
	// that holds the copy, when it is not this one.
	DuplicateOf int    `json:"duplicate_of,omitempty"`
	DuplicateIn string `json:"duplicate_in,omitempty"`
	// Copies are the message's duplicates in later documents of a
	// corpus, as citations name them: `archive.mbox msg 7 "Re: Lease"`.
	Copies []string `json:"copies,omitempty"`
	// Hash tells duplicates: the SHA-256 (its first 16 bytes, in hex) of
	// the fields a copy in another mailbox keeps (not those its delivery
	// added) and the body; empty for a skipped message.
	Hash string `json:"hash,omitempty"`
	// Skipped says why the message was not read (over a limit, damaged);
	// the mailbox's other messages are.
	Skipped string `json:"skipped,omitempty"`
}

// What found an EmailMessage's Parent.
const (
	ParentByReferences = "references"
	ParentByInReplyTo  = "in_reply_to"
	ParentByQuote      = "quote"
	ParentBySubject    = "subject"
)

// EmailAttachment is one member of a message's family: an attachment (or
// a forwarded message) converted as the document it is.
type EmailAttachment struct {
	// Name is the attachment's file name (or, for a forwarded message
	// without one, its subject); Path the names from the top message
	// down, as the label joins them ("fwd.eml › lease.pdf").
	Name string `json:"name"`
	Path string `json:"path"`
	// Format is what it was read as ("pdf", "docx", "html", "text",
	// "email"), ContentType as the message declared it.
	Format      string `json:"format,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// FirstSpan and LastSpan are its spans in the page map; 0 when it
	// has no text.
	FirstSpan int `json:"first_span,omitempty"`
	LastSpan  int `json:"last_span,omitempty"`
	// Error says why it was not read, when it was not (a damaged PDF, an
	// image, a limit).
	Error string `json:"error,omitempty"`
}
