package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/net/html"

	"github.com/memagent/memagent/internal/s3client"
)

// maxPageLinks bounds the linked files a saved page brings along; a
// report links a handful.
const maxPageLinks = 32

// savedPage is what savePage wrote: the page, then the linked files, and
// the links it could not save (their object is missing), left as they were.
type savedPage struct {
	Files   []string
	Missing []string
}

// String is the files written, for a "Saved:" line.
func (p savedPage) String() string {
	s := p.Files[0]
	if len(p.Files) > 1 {
		s += " (with " + strings.Join(p.Files[1:], ", ") + ")"
	}
	if len(p.Missing) > 0 {
		s += "; not in the report's folder, links left as they were: " + strings.Join(p.Missing, ", ")
	}
	return s
}

// savePage copies the HTML page at uri to the local file dst so that it
// works offline: every file it links by a relative path (grid.json,
// report.json, results.csv…) is copied from beside the page in S3 into the
// folder <dst without extension>_files/ next to dst, and the page's links
// are rewritten to point there. Nothing is written outside dst's directory:
// links that leave the report's folder ("..", absolute paths, other hosts)
// and in-page anchors are kept as they are. The _files folder belongs to
// the page: saving again replaces the files in it.
func savePage(ctx context.Context, store reportReader, uri, dst string) (savedPage, error) {
	loc, err := s3client.ParseURI(uri)
	if err != nil {
		return savedPage{}, err
	}
	page, err := store.ReadAll(ctx, loc)
	if err != nil {
		return savedPage{}, fmt.Errorf("read report %s: %w", uri, err)
	}
	base := filepath.Base(dst)
	folder := strings.TrimSuffix(base, filepath.Ext(base)) + "_files"
	links, err := pageLinks(page)
	if err != nil {
		return savedPage{}, fmt.Errorf("read report %s: %w", uri, err)
	}
	saved := savedPage{Files: []string{dst}}
	rewrite := map[string]string{}
	for _, rel := range links {
		if len(rewrite) == maxPageLinks {
			break
		}
		obj := s3client.Location{Bucket: loc.Bucket, Key: path.Join(path.Dir(loc.Key), rel)}
		data, err := store.ReadAll(ctx, obj)
		if errors.Is(err, s3client.ErrNotFound) {
			saved.Missing = append(saved.Missing, rel)
			continue
		}
		if err != nil {
			return savedPage{}, fmt.Errorf("read %s: %w", obj, err)
		}
		local := filepath.Join(filepath.Dir(dst), folder, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return savedPage{}, fmt.Errorf("save report: %w", err)
		}
		if err := os.WriteFile(local, data, 0o644); err != nil {
			return savedPage{}, fmt.Errorf("save report: %w", err)
		}
		saved.Files = append(saved.Files, local)
		rewrite[rel] = (&url.URL{Path: folder + "/" + rel}).String()
	}
	if len(rewrite) > 0 {
		if page, err = rewriteLinks(page, rewrite); err != nil {
			return savedPage{}, fmt.Errorf("rewrite report %s: %w", uri, err)
		}
	}
	if err := os.WriteFile(dst, page, 0o644); err != nil {
		return savedPage{}, fmt.Errorf("save report: %w", err)
	}
	return saved, nil
}

// linkAttrs are the attributes that link a page to another file.
var linkAttrs = map[string]bool{"href": true, "src": true}

// localLink returns the cleaned slash path of a link to a file beside the
// page or under its folder, or "" for anything else: anchors, absolute
// paths, other schemes and hosts, queries, and paths that leave the folder.
func localLink(v string) string {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.RawQuery != "" || u.Path == "" || strings.HasPrefix(u.Path, "/") {
		return ""
	}
	p := path.Clean(u.Path)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, '\\') {
		return ""
	}
	return p
}

// pageLinks returns the distinct local links of an HTML page, in order.
func pageLinks(page []byte) ([]string, error) {
	var links []string
	seen := map[string]bool{}
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			if errors.Is(z.Err(), io.EOF) {
				return links, nil
			}
			return nil, z.Err()
		case html.StartTagToken, html.SelfClosingTagToken:
			for _, a := range z.Token().Attr {
				if p := localLink(a.Val); linkAttrs[a.Key] && p != "" && !seen[p] {
					seen[p] = true
					links = append(links, p)
				}
			}
		}
	}
}

// rewriteLinks replaces the local links of a page found in to (by their
// cleaned path) with their new values; everything else is copied byte for
// byte.
func rewriteLinks(page []byte, to map[string]string) ([]byte, error) {
	var out bytes.Buffer
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if errors.Is(z.Err(), io.EOF) {
				return out.Bytes(), nil
			}
			return nil, z.Err()
		}
		raw := z.Raw()
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			out.Write(raw)
			continue
		}
		// Raw is only valid until the next call; Token does not call Next.
		raw = bytes.Clone(raw)
		tok := z.Token()
		changed := false
		for i, a := range tok.Attr {
			if v, ok := to[localLink(a.Val)]; ok && linkAttrs[a.Key] && a.Namespace == "" {
				tok.Attr[i].Val = v
				changed = true
			}
		}
		if changed {
			out.WriteString(tok.String())
		} else {
			out.Write(raw)
		}
	}
}
