package documents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestAskConvertedDocumentsEndToEnd is the done-means of document
// conversion: a generated 30-page PDF with the fact on page 17, and a DOCX
// and an HTML page with it in the third clause, asked through the CLI on
// the real clitest.Stack; the answers, results and review evidence name the page
// or section; a second question converts nothing; an encrypted PDF and a
// PDF of scans fail fast as memagent.BadInput.
func TestAskConvertedDocumentsEndToEnd(t *testing.T) {
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	dir := t.TempDir()
	secs := docconvtest.Sections(6, 3, docgen.Fact, 7)
	clause3 := "§ " + secs[2].Heading // section 1 is the title
	docs := []struct {
		name, path, format, cite string
	}{
		{"pdf", clitest.WriteFile(t, dir, "agreement.pdf", docconvtest.PDF(docconvtest.PDFOptions{Pages: 30, FactPage: 17, Fact: docgen.Fact, Seed: 3})), "pdf", "p. 17"},
		{"docx", clitest.WriteFile(t, dir, "agreement.docx", docconvtest.DOCX("Supply agreement", secs)), "docx", clause3},
		{"html", clitest.WriteFile(t, dir, "agreement.html", docconvtest.HTML("Supply agreement", secs)), "html", clause3},
	}
	cfg, store := clitest.Store(t)
	for _, doc := range docs {
		t.Run(doc.name, func(t *testing.T) {
			d.Simulator.Reset()
			out, stderr, err := clitest.RunCLI(t, "ask", "--doc", doc.path, "--question", docgen.Question, "--answer", docgen.Answer,
				"--chunk-tokens", "800", "--json")
			if err != nil {
				t.Fatalf("ask: %v\nstderr: %s", err, stderr)
			}
			var res clitest.ConvertedJSON
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("ask --json printed %q: %v", out, err)
			}
			if res.Answer != docgen.Answer || res.Scores == nil || !res.Scores.ExactMatch {
				t.Errorf("answer %q, want %q", res.Answer, docgen.Answer)
			}
			if res.Format != doc.format || !strings.HasSuffix(res.Source, filepath.Base(doc.path)) {
				t.Errorf("source %q format %q, want the uploaded %s as %s", res.Source, res.Format, filepath.Base(doc.path), doc.format)
			}
			if res.AnswerPages != doc.cite {
				t.Errorf("answer_pages %q, want %q", res.AnswerPages, doc.cite)
			}
			if g := res.Grounding; g == nil || g.Status != api.GroundingVerbatim || g.Pages.String() != doc.cite || !strings.Contains(g.Quote, docgen.Answer) {
				t.Errorf("grounding %+v, want verbatim on %s with a quote holding %q", g, doc.cite, docgen.Answer)
			}
			// The stored result: the evidence that supports the answer is
			// the fact's sentence, on its page.
			var stored api.DocumentQAResult
			clitest.ReadJSON(t, store, res.ResultURI, &stored)
			found := false
			for _, e := range stored.Evidence {
				if e.SupportsAnswer && e.Passage != nil && e.Passage.Pages.String() == doc.cite {
					found = true
				}
			}
			if !found {
				t.Errorf("result.json evidence %+v has no supporting passage on %s", stored.Evidence, doc.cite)
			}
			if stored.Grounding == nil || stored.Grounding.Status != api.GroundingVerbatim {
				t.Errorf("result.json grounding %+v, want verbatim", stored.Grounding)
			}

			// The text version of the human output says where too.
			d.Simulator.Reset()
			human, _, err := clitest.RunCLI(t, "ask", "--doc", doc.path, "--question", docgen.Question, "--answer", docgen.Answer, "--chunk-tokens", "800")
			if err != nil || !strings.Contains(human, "Found on: "+doc.cite) || !strings.Contains(human, "Grounding: verbatim, "+doc.cite+": \"") {
				t.Errorf("ask (text): %v\n%s", err, human)
			}
		})
	}

	// A second question about the same PDF converts nothing: pages.json,
	// written by the one conversion, is the same object.
	pagesKey := func() map[string]string {
		keys, err := store.List(context.Background(), cfg.Bucket, "converted/", 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, k := range keys {
			if strings.HasSuffix(k, "/pages.json") {
				data, err := store.ReadAll(context.Background(), s3store.Location{Bucket: cfg.Bucket, Key: k})
				if err != nil {
					t.Fatal(err)
				}
				out[k] = string(data)
			}
		}
		return out
	}
	before := pagesKey()
	if len(before) != len(docs) {
		t.Fatalf("%d conversions stored, want %d", len(before), len(docs))
	}
	out, stderr, err := clitest.RunCLI(t, "ask", "--doc", docs[0].path, "--question", "Which observatory has a north gate with an access code?",
		"--chunk-tokens", "800", "--json")
	if err != nil {
		t.Fatalf("second question: %v\n%s", err, stderr)
	}
	if after := pagesKey(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Error("the second question converted the PDF again")
	}
	var second clitest.ConvertedJSON
	_ = json.Unmarshal([]byte(out), &second)
	if second.Format != "pdf" {
		t.Errorf("second question: format %q", second.Format)
	}

	// A review of the PDF: its grid and report name page 17 beside the
	// passage.
	d.Simulator.Reset()
	htmlPath := filepath.Join(dir, "report.html")
	out, stderr, err = clitest.RunCLI(t, "review", "--doc", docs[0].path, "--question", docgen.Question, "--answer", docgen.Answer,
		"--chunk-tokens", "800", "--json", "--html", htmlPath)
	if err != nil {
		t.Fatalf("review: %v\n%s", err, stderr)
	}
	var grid api.ReviewResult
	if err := json.Unmarshal([]byte(out), &grid); err != nil {
		t.Fatalf("review --json printed %q: %v", out, err)
	}
	if grid.Format != "pdf" || len(grid.Rows) != 1 {
		t.Fatalf("grid format %q rows %d", grid.Format, len(grid.Rows))
	}
	cited := false
	for _, e := range grid.Rows[0].Evidence {
		if e.SupportsAnswer && e.Cite() == "p. 17" {
			cited = true
		}
	}
	if !cited {
		t.Errorf("review evidence %+v cites no supporting passage on p. 17", grid.Rows[0].Evidence)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil || !bytes.Contains(page, []byte(`<strong class="page">p. 17</strong>`)) {
		t.Errorf("report.html (%v) does not show p. 17 beside the passage", err)
	}
	var csv []byte
	if loc, err := s3store.ParseURI(grid.CSVURI); err == nil {
		csv, _ = store.ReadAll(context.Background(), loc)
	}
	if !bytes.Contains(csv, []byte("p. 17")) {
		t.Errorf("grid.csv does not cite p. 17:\n%s", csv)
	}

	// A batch over the three uploaded documents: each result line cites.
	var manifest bytes.Buffer
	for _, doc := range docs {
		var q clitest.ConvertedJSON
		out, _, err := clitest.RunCLI(t, "ask", "--doc", doc.path, "--question", docgen.Question, "--answer", docgen.Answer, "--chunk-tokens", "800", "--json")
		if err != nil || json.Unmarshal([]byte(out), &q) != nil {
			t.Fatalf("ask %s: %v", doc.name, err)
		}
		line, _ := json.Marshal(map[string]any{"id": doc.name, "document": q.Source,
			// A variant of the question per item, without digits: a digit
			// in the question would match the clause numbers.
			"question": fmt.Sprintf("%s (%s item)", docgen.Question, doc.name), "answers": []string{docgen.Answer}})
		manifest.Write(append(line, '\n'))
	}
	mpath := clitest.WriteFile(t, dir, "manifest.jsonl", manifest.Bytes())
	b, _ := clitest.RunBatch(t, "--manifest", mpath, "--chunk-tokens", "800", "--json")
	items := clitest.ReadResults(t, store, b.Report.ResultsURI)
	if len(items) != len(docs) {
		t.Fatalf("%d batch results, want %d", len(items), len(docs))
	}
	for i, it := range items {
		if it.Answer != docgen.Answer || it.AnswerPages != docs[i].cite {
			t.Errorf("batch item %s: answer %q pages %q, want %q on %q", it.ID, it.Answer, it.AnswerPages, docgen.Answer, docs[i].cite)
		}
	}
}

// TestAskRefusesUnconvertibleDocuments: an encrypted PDF and a PDF of
// scans asked about with OCR off fail as memagent.BadInput, each saying
// why and what to do, before any model call.
func TestAskRefusesUnconvertibleDocuments(t *testing.T) {
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want string
		args []string
	}{
		{"encrypted", docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, Password: "open-sesame", Seed: 1}), "is an encrypted PDF that needs a password to open: save an unprotected copy", nil},
		{"scanned, OCR off", docconvtest.ImagePDF(4), "has no text layer on pages 1–4 of its 4 pages (only images: a scan), and OCR is off: ask with ocr auto (--ocr auto)", []string{"--ocr", "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".pdf")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			d.Simulator.Reset()
			began := time.Now()
			_, _, err := clitest.RunCLI(t, append([]string{"ask", "--doc", path, "--question", docgen.Question}, tc.args...)...)
			took := time.Since(began)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ask: error %v, want it to say %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "failed ("+api.ErrBadInput+")") || cli.ExitCode(err) != cli.ExitBadInput {
				t.Errorf("error %v is not a memagent.BadInput with exit code %d", err, cli.ExitBadInput)
			}
			if n := len(d.Simulator.Calls()); n != 0 {
				t.Errorf("%d model calls, want 0", n)
			}
			t.Logf("%s refused in %s", tc.name, took.Round(time.Millisecond))
		})
	}
}
