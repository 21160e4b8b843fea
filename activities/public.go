package activities

import (
	"net/netip"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/notify"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
)

// The names below give the types that this package's API shares with
// memagent's internal packages a public name, so that code in another
// module can name, build and implement everything an exported signature
// here (or in the workflows, client and plugin packages) uses. They are
// aliases: a value of one is a value of the other.

// Location names one S3 object: a bucket and a key. Its String form is
// "s3://bucket/key".
type Location = s3store.Location

// ObjectInfo is what ObjectStore.Head reports of an object: its Size in
// bytes and its ETag.
type ObjectInfo = s3store.ObjectInfo

// ModelRequest is one completion request to the model (Model.Complete):
// the Model name (empty = the pool's), the whole rendered Prompt,
// MaxTokens, Temperature, TopP, and a Kind label ("update", "final") for
// metrics that is not sent.
type ModelRequest = inference.Request

// Completion is a model's answer to a ModelRequest: the Text of the first
// choice, the Model the server reports, the FinishReason ("stop" or
// "length"), token usage and latency.
type Completion = inference.Completion

// Templates are the memory-update and final-answer prompt templates.
// Build them with DefaultTemplates or ParseTemplates.
type Templates = memagent.Templates

// Tokenizer counts tokens and splits text into them; chunk budgets are
// counted with it. NewTokenizer returns the built-in ones.
type Tokenizer = memagent.Tokenizer

// PageMap says which byte range of a converted document's text came from
// which page (PDF) or section (DOCX, HTML).
type PageMap = memagent.PageMap

// PageSpan is one page's or section's byte range of the text.
type PageSpan = memagent.PageSpan

// EmailIndex is what a converted mailbox or message holds beside its text
// (PageMap.Email): each message's headers, family and thread.
type EmailIndex = memagent.EmailIndex

// EmailMessage is one message of an EmailIndex: its headers, its place in
// its thread and its attachments.
type EmailMessage = memagent.EmailMessage

// EmailAttachment is one attachment of an EmailMessage, a member of the
// message's family.
type EmailAttachment = memagent.EmailAttachment

// OCRPage is what OCR made of one scanned page (PageMap.OCR): engine,
// languages, resolution, words and their confidence.
type OCRPage = memagent.OCRPage

// OCRWord is one word OCR read on a scanned page, its line and its box
// (Activities.OCRWords): what the review desk highlights a quote on a
// scan from.
type OCRWord = docconv.WordBox

// PageBox is a box on a page, in fractions of the page's width and height
// from its top left corner.
type PageBox = docconv.Box

// NotifyPolicy says which hosts and addresses a batch's notify_url may
// reach (Activities.NotifyPolicy): Hosts, the host names allowed ("*."
// and a domain for its subdomains; empty: any), and AllowNets, the
// loopback, link-local or private networks still allowed (none by
// default). Its zero value allows any host whose addresses are public.
type NotifyPolicy = notify.Policy

// ParseNotifyNets parses CIDRs ("10.1.0.0/16") or single addresses for
// NotifyPolicy.AllowNets.
func ParseNotifyNets(nets []string) ([]netip.Prefix, error) { return notify.ParseNets(nets) }

// ErrNotFound is the error (matched with errors.Is) an ObjectStore returns
// for a missing bucket or object; the activities turn it into a
// non-retryable DocumentNotFound failure.
var ErrNotFound = s3store.ErrNotFound

// ErrChanged is the error (matched with errors.Is) an ObjectStore returns
// when an object no longer matches the ETag a read was pinned to.
var ErrChanged = s3store.ErrChanged

// DefaultTemplates returns the built-in prompt templates.
func DefaultTemplates() Templates { return memagent.DefaultTemplates() }

// ParseTemplates checks and returns templates from their text: the update
// template must hold {question}, {memory} and {chunk}, the final one
// {question} and {memory}; the error names the missing ones.
func ParseTemplates(update, final string) (Templates, error) {
	return memagent.ParseTemplates(update, final)
}

// NewTokenizer returns a built-in tokenizer by name: DefaultTokenizer
// ("qwen2.5", also "qwen" and "qwen3": the vocabulary of the published
// MemAgent models), "cl100k_base" or "o200k_base" (also "o200k"). The
// vocabularies are in the binary: it needs no download.
// Activities.Tokenizers is usually this function. Note that "" here is
// cl100k_base, while an empty options.tokenizer in a request means
// DefaultTokenizer: ModelOptions.WithDefaults fills it before a request
// reaches this function.
func NewTokenizer(name string) (Tokenizer, error) { return tokenizer.New(name) }

// ParseURI parses an s3://bucket/key URI into a Location.
func ParseURI(uri string) (Location, error) { return s3store.ParseURI(uri) }
