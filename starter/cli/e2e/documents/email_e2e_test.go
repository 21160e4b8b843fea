package documents

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestAskMailboxEndToEnd asks a question of a mailbox of 201 messages:
// the first 200 of SpamAssassin's ham corpus (as Debian's JWZ threading
// library ships it), then a reply whose attachments are a PDF, on whose
// third page (a scan, read by OCR) the answer is, and a DOCX. The worker converts the mailbox
// (detected by content, uploaded as application/mbox) and the answer is
// found and cited by message and attachment page, as a reviewer cites
// "the attachment to Alice's email, page 3".
func TestAskMailboxEndToEnd(t *testing.T) {
	files := clitest.HamMessages(t, 210)
	var mbox bytes.Buffer
	clitest.AppendMessages(t, &mbox, files[:200])
	part := clitest.Attachment
	// The lease came back from the landlord signed, scanned: its third
	// page, where the answer is, is an image a scanner made (300 DPI,
	// gray), which the worker reads by OCR.
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	testdeps.Command(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
	lease, err := docconvtest.ScannedCopy(pdftoppm, docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 3, Fact: docgen.Fact, Seed: 11}), 3)
	if err != nil {
		t.Fatal(err)
	}
	mbox.WriteString("From alice@example.org Tue May  3 10:00:00 2022\nFrom: Alice <alice@example.org>\nTo: Bob <bob@example.org>\n" +
		"Date: Tue, 3 May 2022 10:00:00 +0200\nSubject: Re: Observatory lease\nMessage-ID: <lease@example.org>\nMIME-Version: 1.0\n" +
		"Content-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\nBob, the lease and its terms are attached.\n" +
		part("application/pdf", "lease.pdf", lease) +
		part("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "terms.docx", docconvtest.DOCX("Terms", docconvtest.Sections(3, 0, "", 12))) +
		"--b--\n")
	dir := t.TempDir()
	path := clitest.WriteFile(t, dir, "matter.mbox", mbox.Bytes())

	d := clitest.Stack(t)
	clitest.StartWorker(t)
	ask := func(path string) (mailboxJSON, int) {
		t.Helper()
		before := d.Simulator.Stats().Latency.Count
		out, stderr, err := clitest.RunCLI(t, "ask", "--doc", path, "--question", docgen.Question, "--answer", docgen.Answer,
			"--chunk-tokens", "2000", "--json")
		if err != nil {
			t.Fatalf("ask: %v\nstderr: %s", err, stderr)
		}
		var res mailboxJSON
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("ask --json printed %q: %v", out, err)
		}
		return res, d.Simulator.Stats().Latency.Count - before
	}
	res, calls := ask(path)
	const cite = `msg 201 "Re: Observatory lease" › lease.pdf p. 3`
	t.Logf("answer %q, format %s, found on %q, grounding %s", res.Answer, res.Format, res.AnswerPages, res.Grounding)
	if res.Answer != docgen.Answer || res.Format != "mbox" {
		t.Errorf("answer %q of a %q, want %q of the mbox", res.Answer, res.Format, docgen.Answer)
	}
	if !strings.HasPrefix(res.AnswerPages, cite) {
		t.Errorf("found on %q, want it to lead with %q", res.AnswerPages, cite)
	}
	if g := res.Grounding; g == nil || g.Status != api.GroundingVerbatim || !strings.HasPrefix(g.Pages.String(), cite+" (scan, confidence ") {
		t.Errorf("grounding %+v, want verbatim on %s, a scanned page", g, cite)
	}

	// The mailbox grown by 10 messages: its converted text keeps every
	// earlier byte, so the reading resumes from the checkpoint of the
	// last chunk the two share.
	clitest.AppendMessages(t, &mbox, files[200:210])
	grown, grownCalls := ask(clitest.WriteFile(t, dir, "matter-grown.mbox", mbox.Bytes()))
	t.Logf("first reading: %d chunks, %d calls; grown by 10 messages: %d chunks, %d reused, %d calls; answer %q found on %q",
		res.Chunks, calls, grown.Chunks, grown.ChunksReused, grownCalls, grown.Answer, grown.AnswerPages)
	if grown.Answer != docgen.Answer || !strings.HasPrefix(grown.AnswerPages, cite) {
		t.Errorf("grown: answer %q found on %q", grown.Answer, grown.AnswerPages)
	}
	if newChunks := grown.Chunks - grown.ChunksReused; grown.ChunksReused == 0 || grownCalls > newChunks+2 {
		t.Errorf("grown: %d of %d chunks reused, %d calls: want the first chunks reused and at most %d calls", grown.ChunksReused, grown.Chunks, grownCalls, newChunks+2)
	}
}

// mailboxJSON is the part of `starter ask --json` the mailbox test reads.
type mailboxJSON struct {
	clitest.ConvertedJSON
	Chunks       int `json:"chunks"`
	ChunksReused int `json:"chunks_reused"`
}
