package memagent

import (
	"fmt"
	"path"
	"sort"

	"github.com/memagent/memagent/api"
)

// CorpusMap says which byte ranges of a corpus's stream came from which
// document. Documents are in stream order and cover it without gaps: each
// range starts with the document's header line (CorpusHeader).
type CorpusMap struct {
	Documents []CorpusDocument `json:"documents"`
}

// CorpusDocument is one document of a corpus and its range [Start, End)
// of the stream.
type CorpusDocument struct {
	// Document is the s3:// URI the caller named.
	Document string `json:"document"`
	// Name is how citations name it: the last element of its key.
	Name string `json:"name"`
	// ETag is the version read; Format its format ("text", "pdf", …).
	ETag   string `json:"etag"`
	Format string `json:"format,omitempty"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	// PageMap is the converted document's page map, its spans moved to
	// stream offsets; nil for a text document.
	PageMap *PageMap `json:"page_map,omitempty"`
}

// CorpusHeader is the line the stream puts before the i-th document
// (from 1). It names the document and its place, never how many follow,
// so that appending a document changes no earlier byte of the stream.
func CorpusHeader(i int, name string) string {
	return fmt.Sprintf("=== Document %d: %s ===\n\n", i, name)
}

// CorpusName is how a corpus names the document at uri in its headers and
// citations: the last element of its key ("deposition-12.pdf").
func CorpusName(uri string) string {
	return path.Base(uri)
}

// Body is the range [start, end) of the stream that document i (from 0)
// brings after its header line: its text and the blank line that closes it.
func (c *CorpusMap) Body(i int) (start, end int64) {
	d := c.Documents[i]
	return min(d.Start+int64(len(CorpusHeader(i+1, d.Name))), d.End), d.End
}

// Refs returns the documents the byte range [start, end) of the stream
// touches, in order, each with the pages (or sections) of a converted
// one; nil when c is nil or the range is empty.
func (c *CorpusMap) Refs(start, end int64) []api.SourceRef {
	if c == nil || end <= start {
		return nil
	}
	i := sort.Search(len(c.Documents), func(i int) bool { return c.Documents[i].End > start })
	var refs []api.SourceRef
	for ; i < len(c.Documents) && c.Documents[i].Start < end; i++ {
		d := c.Documents[i]
		refs = append(refs, api.SourceRef{Document: d.Document, Name: d.Name,
			Pages: d.PageMap.Ref(max(start, d.Start), min(end, d.End))})
	}
	return refs
}
