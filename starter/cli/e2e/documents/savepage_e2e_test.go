package documents

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestSavedReportsWorkOffline saves a review's and a batch's report with
// --html and checks that every relative link of each saved page (href and
// src) names a file that exists on disk, under the page's _files folder,
// and that nothing else was written.
func TestSavedReportsWorkOffline(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	facts := docgen.Facts()[:2]
	text, _ := docgen.MultiNeedle(tok, 1500, facts, 5)
	dir := t.TempDir()
	docPath := filepath.Join(dir, "doc.txt")
	if err := os.WriteFile(docPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var manifest bytes.Buffer
	for _, f := range facts {
		line, _ := json.Marshal(map[string]any{"document": docPath, "question": f.Question, "answers": []string{f.Answer}})
		manifest.Write(append(line, '\n'))
	}
	manifestPath := filepath.Join(dir, "manifest.jsonl")
	if err := os.WriteFile(manifestPath, manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	for _, tc := range []struct {
		name, page string
		args       []string
		want       []string // the linked files
	}{
		{"review", "review report.html", []string{"review", "--doc", docPath, "--question", facts[0].Question, "--chunk-tokens", "600"},
			[]string{"grid.json", "grid.csv"}},
		{"batch", "batch.html", []string{"batch", "--manifest", manifestPath, "--name", "offline", "--chunk-tokens", "600"},
			[]string{"report.json", "results.jsonl", "results.csv", "chart.svg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pagePath := filepath.Join(out, tc.page)
			stdout, stderr, err := clitest.RunCLI(t, append(tc.args, "--html", pagePath)...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.name, err, stderr)
			}
			folder := strings.TrimSuffix(tc.page, ".html") + "_files"
			if !strings.Contains(stdout, pagePath+" (with "+filepath.Join(out, folder, tc.want[0])) {
				t.Errorf("%s does not say what it saved:\n%s", tc.name, stdout)
			}
			page, err := os.ReadFile(pagePath)
			if err != nil {
				t.Fatal(err)
			}
			links := map[string]bool{}
			z := html.NewTokenizer(bytes.NewReader(page))
			for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
				for _, a := range z.Token().Attr {
					if (a.Key == "href" || a.Key == "src") && !strings.HasPrefix(a.Val, "#") && !strings.Contains(a.Val, ":") {
						links[a.Val] = true
					}
				}
			}
			for _, name := range tc.want {
				if !links[(&url.URL{Path: folder + "/" + name}).String()] {
					t.Errorf("the saved page does not link %s/%s; its links: %v", folder, name, links)
				}
			}
			for l := range links {
				rel, err := url.PathUnescape(l)
				if err != nil {
					t.Errorf("link %q: %v", l, err)
					continue
				}
				if info, err := os.Stat(filepath.Join(out, filepath.FromSlash(rel))); err != nil || info.Size() == 0 {
					t.Errorf("link %q: %v", l, err)
				}
			}
		})
	}
	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, ","), "batch.html,batch_files,review report.html,review report_files"; got != want {
		t.Errorf("written beside the pages: %s, want %s", got, want)
	}
}
