package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memagent/memagent/internal/report"
)

// localizeManifest lets a local JSON Lines manifest name local documents:
// each "document" (and each of a corpus's "documents") that is not an s3://
// URI is a path (relative to the
// manifest's folder), checked and uploaded as `ask` uploads a document
// (under its content hash, once however many items name it), and the
// manifest is rewritten with their s3:// URIs into a temporary file, whose
// path it returns with a function that removes it. A manifest that names
// only s3:// documents, an s3:// manifest and a MemAgent JSON manifest
// (whose items hold their text) are returned as they are.
func (s *session) localizeManifest(ctx context.Context, path string) (string, func(), error) {
	keep := func() {}
	if strings.HasPrefix(path, "s3://") {
		return path, keep, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", keep, badRequest(fmt.Errorf("manifest: %w", err))
	}
	if first := bytes.TrimLeft(data, " \t\r\n"); len(first) == 0 || first[0] != '{' {
		return path, keep, nil // MemAgent JSON, or empty: checked later
	}
	dir := filepath.Dir(path)
	uploaded := map[string]string{}
	var out bytes.Buffer
	changed := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), report.MaxLineBytes+1)
	upload := func(n int, doc string) (string, error) {
		local := doc
		if !filepath.IsAbs(local) {
			local = filepath.Join(dir, local)
		}
		uri, ok := uploaded[local]
		if !ok {
			var err error
			if uri, _, err = s.resolveDocument(ctx, local); err != nil {
				return "", fmt.Errorf("manifest %s line %d: %w", path, n, err)
			}
			uploaded[local] = uri
		}
		return uri, nil
	}
	local := func(doc string) bool { return doc != "" && !strings.HasPrefix(doc, "s3://") }
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		var item map[string]json.RawMessage
		var doc string
		var docs []string
		if json.Unmarshal(line, &item) != nil {
			out.Write(line) // the manifest check says what is wrong with it
			out.WriteByte('\n')
			continue
		}
		lineChanged := false
		if json.Unmarshal(item["document"], &doc) == nil && local(doc) {
			uri, err := upload(n, doc)
			if err != nil {
				return "", keep, err
			}
			item["document"], _ = json.Marshal(uri)
			lineChanged = true
		}
		// A corpus's documents, each local one uploaded as a document is.
		if json.Unmarshal(item["documents"], &docs) == nil && slices.ContainsFunc(docs, local) {
			for i, d := range docs {
				if !local(d) {
					continue
				}
				if docs[i], err = upload(n, d); err != nil {
					return "", keep, err
				}
			}
			item["documents"], _ = json.Marshal(docs)
			lineChanged = true
		}
		if !lineChanged {
			out.Write(line)
			out.WriteByte('\n')
			continue
		}
		b, err := json.Marshal(item)
		if err != nil {
			return "", keep, err
		}
		out.Write(append(b, '\n'))
		changed = true
	}
	if err := sc.Err(); err != nil {
		return "", keep, badRequest(fmt.Errorf("manifest %s: %w", path, err))
	}
	if !changed {
		return path, keep, nil
	}
	tmp, err := os.MkdirTemp("", "memagent-manifest-")
	if err != nil {
		return "", keep, err
	}
	remove := func() { os.RemoveAll(tmp) }
	rewritten := filepath.Join(tmp, filepath.Base(path))
	if err := os.WriteFile(rewritten, out.Bytes(), 0o600); err != nil {
		remove()
		return "", keep, errors.Join(err, errors.New("write the manifest with uploaded documents"))
	}
	fmt.Fprintf(s.progressOut(), "uploaded %d local documents named by the manifest\n", len(uploaded))
	return rewritten, remove, nil
}
