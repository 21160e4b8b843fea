package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3client"
)

// docFlags is what --doc (repeatable) named: one document, or a corpus
// read as one stream. A local folder stands for its files and an
// s3://bucket/prefix/ (ending in '/') for its objects, in name order.
type docFlags struct {
	values stringList
}

const docUsage = "document: a local file or s3://bucket/key; repeat it, or name a local folder or an s3://bucket/prefix/, to ask about a corpus read as one stream (required)"

// local expands the local folders among the values, before anything is
// connected, and says whether the values are a corpus (more than one
// document, or a folder or prefix of them) rather than one document.
func (d *docFlags) local() (docs []string, corpus bool, err error) {
	if len(d.values) == 0 {
		return nil, false, badRequest(errors.New("no document: pass --doc PATH or --doc s3://bucket/key"))
	}
	corpus = len(d.values) > 1
	for _, v := range d.values {
		if strings.HasPrefix(v, "s3://") {
			corpus = corpus || strings.HasSuffix(v, "/")
			docs = append(docs, v)
			continue
		}
		st, err := os.Stat(v)
		if err != nil || !st.IsDir() {
			docs = append(docs, v) // checked as a file later
			continue
		}
		corpus = true
		files, err := folderFiles(v)
		if err != nil {
			return nil, false, err
		}
		docs = append(docs, files...)
	}
	if len(docs) > api.MaxCorpusDocuments {
		return nil, false, badRequest(fmt.Errorf("--doc names %d documents, over %d: split the corpus", len(docs), api.MaxCorpusDocuments))
	}
	return docs, corpus, nil
}

// folderFiles lists a folder's regular files in name order, leaving out
// hidden ones and subfolders.
func folderFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, badRequest(fmt.Errorf("--doc %s: %w", dir, err))
	}
	var files []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		files = append(files, filepath.Join(dir, e.Name()))
	}
	if len(files) == 0 {
		return nil, badRequest(fmt.Errorf("--doc %s is a folder with no files in it", dir))
	}
	return files, nil
}

// resolveDocuments uploads the local documents of a corpus and expands
// its s3:// prefixes, returning the corpus's s3:// URIs in order.
func (s *session) resolveDocuments(ctx context.Context, docs []string) ([]string, error) {
	var uris []string
	for _, d := range docs {
		if strings.HasPrefix(d, "s3://") && strings.HasSuffix(d, "/") {
			keys, err := s.prefixObjects(ctx, d)
			if err != nil {
				return nil, err
			}
			uris = append(uris, keys...)
			continue
		}
		uri, _, err := s.resolveDocument(ctx, d)
		if err != nil {
			return nil, err
		}
		uris = append(uris, uri)
	}
	if len(uris) > api.MaxCorpusDocuments {
		return nil, badRequest(fmt.Errorf("--doc names %d documents, over %d: split the corpus", len(uris), api.MaxCorpusDocuments))
	}
	return uris, nil
}

// prefixObjects lists the objects under an s3://bucket/prefix/ in name
// order (folder markers left out).
func (s *session) prefixObjects(ctx context.Context, prefix string) ([]string, error) {
	loc, err := s3client.ParseURI(strings.TrimSuffix(prefix, "/") + "/x")
	if err != nil {
		return nil, badRequest(fmt.Errorf("--doc %s: %w", prefix, err))
	}
	p := strings.TrimSuffix(loc.Key, "x")
	keys, err := s.store.List(ctx, loc.Bucket, p, api.MaxCorpusDocuments+1)
	if err != nil {
		return nil, fmt.Errorf("--doc %s: %w", prefix, err)
	}
	var uris []string
	for _, k := range keys {
		if !strings.HasSuffix(k, "/") {
			uris = append(uris, s3client.Location{Bucket: loc.Bucket, Key: k}.String())
		}
	}
	slices.Sort(uris)
	if len(uris) == 0 {
		return nil, badRequest(fmt.Errorf("--doc %s holds no objects", prefix))
	}
	return uris, nil
}
