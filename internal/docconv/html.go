package docconv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// skipped are elements whose content is not the page's text: code,
// styles, embedded objects, and the navigation and footer that repeat on
// every page of a site.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Canvas: true,
	atom.Nav: true, atom.Footer: true, atom.Head: true, atom.Select: true, atom.Button: true,
}

// blocks end the paragraph before and after them.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Aside: true, atom.Blockquote: true, atom.Pre: true, atom.Ul: true,
	atom.Ol: true, atom.Li: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Table: true,
	atom.Tr: true, atom.Td: true, atom.Th: true, atom.Caption: true, atom.Figure: true,
	atom.Figcaption: true, atom.Form: true, atom.Fieldset: true, atom.Address: true, atom.Hr: true,
	atom.Br: true, atom.Body: true, atom.Html: true, atom.Details: true, atom.Summary: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

var headingTags = map[atom.Atom]bool{
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

// voidTags have no end tag: a start tag of one must not count as an open
// skipped element.
var voidTags = map[atom.Atom]bool{
	atom.Br: true, atom.Hr: true, atom.Img: true, atom.Input: true, atom.Meta: true, atom.Link: true,
	atom.Area: true, atom.Base: true, atom.Col: true, atom.Embed: true, atom.Source: true, atom.Track: true, atom.Wbr: true,
}

// convertHTML writes the visible text of an HTML page, a paragraph per
// block element, a new section at every h1–h6. Its encoding is taken from
// a byte order mark, a <meta charset> in the first KiB, or else UTF-8 (or
// windows-1252 where the bytes say so), as browsers do.
func convertHTML(ctx context.Context, path string, w io.Writer, progress Progress, limits Limits) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(1024)
	enc, _, _ := charset.DetermineEncoding(head, "text/html")
	cr := &countingReader{r: br}
	z := html.NewTokenizer(&runGuard{r: enc.NewDecoder().Reader(cr)})
	res := &Result{Map: memagent.PageMap{Format: FormatHTML, Unit: api.UnitSection}}
	tw := newTextWriter(w, limits.MaxTextBytes)
	sections := newSectionCounter(tw)
	para := newParagraphBuilder(sections.paragraph)
	heading := newParagraphBuilder(func(string) error { return nil })
	skip, pre, inHeading, depth := 0, 0, 0, 0
	var lastProgress int64
	flush := func() error {
		err := para.Flush()
		para.keepRaw = pre > 0
		return err
	}
	for {
		tt := z.Next()
		switch tt {
		case html.StartTagToken:
			if depth++; depth > maxDepth*16 {
				return nil, overLimit(fmt.Sprintf("nests its HTML more than %d elements deep", maxDepth*16), maxDepth*16, "levels", "")
			}
		case html.EndTagToken:
			depth = max(depth-1, 0)
		}
		if cr.n-lastProgress > 1<<20 {
			lastProgress = cr.n
			progress(cr.n, st.Size())
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				return nil, z.Err()
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := flush(); err != nil {
				return nil, err
			}
			if err := tw.finish(); err != nil {
				return nil, err
			}
			res.Map.Pages = len(tw.spans)
			res.Bytes, res.Map.Spans = tw.n, tw.spans
			return res, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if skipped[a] {
				if tt == html.StartTagToken && !voidTags[a] {
					skip++
				}
				continue
			}
			if skip > 0 {
				continue
			}
			if blocks[a] {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			if a == atom.Pre {
				pre++
				para.keepRaw = true
			}
			if headingTags[a] && tt == html.StartTagToken {
				inHeading++
				heading.Flush()
			}
			if a == atom.Img {
				// Alt text stands in for an image.
				for {
					k, v, more := z.TagAttr()
					if string(k) == "alt" && strings.TrimSpace(string(v)) != "" {
						para.WriteString(" " + string(v) + " ")
					}
					if !more {
						break
					}
				}
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if skipped[a] {
				if skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 {
				continue
			}
			if headingTags[a] && inHeading > 0 {
				inHeading--
				sections.heading(heading.String())
			}
			if blocks[a] {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			if a == atom.Pre && pre > 0 {
				pre--
				para.keepRaw = pre > 0
			}
		case html.TextToken:
			if skip > 0 {
				continue
			}
			t := z.Text()
			para.Write(t)
			if inHeading > 0 && len(heading.buf) < 1<<10 {
				heading.Write(t)
			}
		}
	}
}
