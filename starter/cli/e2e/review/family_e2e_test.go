package review

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/starter/cli/e2e/desktest"
	"github.com/memagent/memagent/worker/workerapp"
)

// familyMailbox is 20 messages of SpamAssassin's ham corpus, then Alice's
// reply whose text says who holds the keys and whose attachments are two
// PDFs both named lease.pdf, the draft and then the lease as it came back
// signed, whose third page (the fact's) is a 300-DPI scan, and a DOCX. It
// returns the mailbox and the signed lease as it was before its page was
// scanned (the scan keeps the page's size, so its characters' boxes are
// where the scan shows them).
func familyMailbox(t *testing.T) (mbox, signed []byte) {
	t.Helper()
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	testdeps.Command(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
	signed = docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 3, Fact: docgen.Fact, Seed: 11})
	scan, err := docconvtest.ScannedCopy(pdftoppm, signed, 3)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	clitest.AppendMessages(t, &b, clitest.HamMessages(t, 20)[:20])
	part := clitest.Attachment
	b.WriteString("From alice@example.org Tue May  3 10:00:00 2022\nFrom: Alice <alice@example.org>\nTo: Bob <bob@example.org>\n" +
		"Date: Tue, 3 May 2022 10:00:00 +0200\nSubject: Re: Observatory lease\nMessage-ID: <lease@example.org>\nMIME-Version: 1.0\n" +
		"Content-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\n" + familyBody + "\n" +
		part("application/pdf", "lease.pdf", docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, Seed: 12})) +
		part("application/pdf", "lease.pdf", scan) +
		part("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "terms.docx", docconvtest.DOCX("Terms", docconvtest.Sections(3, 0, "", 12))) +
		"--b--\n")
	return b.Bytes(), signed
}

const (
	familyBody     = "Bob, the draft, the signed lease and its terms are attached. The telescope dome keys are kept by the night porter Agatha Quill."
	familyQuestion = "Who keeps the telescope dome keys?"
	familyMessage  = `msg 21 "Re: Observatory lease"`
)

// TestDeskFamilyDecision is issue 54's desk in the review of a mailbox:
// the review's two questions are answered from one message's family (its
// text and the third page, a scan, of the second of its two PDFs named
// lease.pdf), the desk lists the family with both cells as members and
// shows the cited page of the second lease.pdf, not the first's, its
// quote highlighted from the words OCR read on the scan; alice rejects
// one member on its own and then accepts the family: the other member is
// accepted with the family named in its decision, the one decided on its
// own keeps its rejection, and the sign-off's history holds one Update a
// decision, each alice's.
func TestDeskFamilyDecision(t *testing.T) {
	if testing.Short() {
		t.Skip("a review of a mailbox and the desk; skipped in -short mode")
	}
	mbox, signed := familyMailbox(t)
	clitest.Stack(t)
	cfg, _ := clitest.Store(t)
	worker, err := workerapp.Start(context.Background(), cfg, workerapp.Options{Logger: clitest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Stop() })

	dir := t.TempDir()
	path := clitest.WriteFile(t, dir, "matter.mbox", mbox)
	signedPath := clitest.WriteFile(t, dir, "signed-lease.pdf", signed)
	grid := reviewOf(t, path, []string{docgen.Question, familyQuestion})
	subject := grid.WorkflowID
	for _, r := range grid.Rows {
		t.Logf("%s: %q grounded %s", r.ID, r.Answer, r.Grounding)
		if !r.Grounding.Found() || r.Grounding.Pages == nil || !strings.HasPrefix(r.Grounding.Pages.Label, familyMessage) {
			t.Fatalf("%s is not grounded on %s: %+v", r.ID, familyMessage, r.Grounding)
		}
	}

	token := "alice-token-54f1"
	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("alice "+reviewer.HashToken(token)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(reviewer.Env, "tokens:"+file)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tc, err := workerapp.Dial(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	mc := memclient.New(tc, memclient.Options{TaskQueue: cfg.TaskQueue})
	if _, err := mc.StartSignOff(ctx, api.SignOffInput{Review: subject}); err != nil {
		t.Fatal(err)
	}
	if _, err := signOffGridAwait(ctx, mc, subject); err != nil {
		t.Fatal(err)
	}
	base := desktest.Start(t, ctx)
	alice := desktest.SignIn(t, base, token)

	type member struct {
		Cell, Part string
		Version    int
		Own        bool
	}
	type family struct {
		Document, Message string
		Members           []member
	}
	var fams struct{ Families []family }
	alice.GetJSON(t, desktest.WithID("/api/families", subject), &fams)
	if len(fams.Families) != 1 || fams.Families[0].Message != familyMessage || len(fams.Families[0].Members) != 2 {
		t.Fatalf("families %+v, want %s with both cells", fams.Families, familyMessage)
	}
	f := fams.Families[0]
	pdfCell, textCell := f.Members[0], f.Members[1]
	if pdfCell.Part != "lease.pdf p. 3" || textCell.Part != "" {
		t.Errorf("members %+v, want q1 on lease.pdf p. 3 and q2 on the message's text", f.Members)
	}

	// A member decided on its own, then the family.
	alice.PostJSON(t, desktest.WithID("/api/decide", subject), map[string]any{"cell": textCell.Cell, "level": 1, "decision": "rejected",
		"reason": "the porter changed in June", "version": textCell.Version}, nil)
	// The family at the desk, in headless Chromium: the panel of q1 lists
	// both members, q2 decided on its own; "Accept family" decides q1 and
	// leaves q2 (a screenshot for docs/REVIEW.md with -desk-screenshots).
	chromium := testdeps.File(t, desktest.Chromium, "the desk cannot be checked without Chromium: apt-get install -y chromium (as root)")
	br := newBrowser(t, ctx, chromium, 900, `document.getElementById("message") ? document.getElementById("message").textContent : document.body.innerText`)
	br.Do("sign in", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(`input[name="token"]`),
		chromedp.SendKeys(`input[name="token"]`, token+"\r"), chromedp.WaitVisible(`b#reviewer`))
	br.Do("open the review", chromedp.Navigate(base+"/signoff?id="+url.QueryEscape(subject)))
	memberSays := func(cell, state string) string {
		return fmt.Sprintf(`(() => { const li = document.querySelector('#family li[data-cell="%s"]'); return !!li && li.textContent.includes(%q); })()`, cell, state)
	}
	br.Wait("the family panel", `!document.getElementById("family").hidden && document.querySelector("#family h3").textContent === `+fmt.Sprintf("%q", "Family: "+familyMessage)+
		` && `+memberSays(pdfCell.Cell, "lease.pdf p. 3 · pending")+` && `+memberSays(textCell.Cell, "the message's text · rejected on its own"))
	// The message itself, from the mailbox's conversion: its headers as
	// Alice's message says them, its attachments in order, lease.pdf (the
	// cell's) marked as cited.
	br.Wait("the family's message", messageShown(pdfCell.Cell))
	// The cited page of the attachment, extracted from the mailbox (the
	// second lease.pdf, the one cited, not the first of the name) and
	// rendered, the quote highlighted from the words OCR read on the
	// scan, over the quote's characters on the page the scan was made of
	// (the draft's third page holds other words there).
	br.Wait("the attachment's page", `!document.getElementById("page").hidden && document.getElementById("page-cite").textContent.startsWith(`+
		fmt.Sprintf("%q", "Cited page: "+familyMessage+" › lease.pdf p. 3 (scan, confidence ")+`) && document.getElementById("page-cite").textContent.endsWith(`+
		fmt.Sprintf("%q", " · highlighted: the quote (from the words OCR read on the scan)")+
		`) && document.getElementById("page-frame").classList.contains("loaded") && document.getElementById("page-img").naturalWidth > 0 && !!document.querySelector("#page-frame .hl.quote")`)
	for _, r := range grid.Rows {
		if r.ID == pdfCell.Cell {
			checkHighlightOver(t, br.Ctx, signedPath, 3, r, 3)
		}
	}
	br.Shot(*deskScreenshots, "desk-family-page.png")
	br.Do("mark the page", chromedp.Evaluate[chromedp.Void](`window.beforeFamily = true`))
	br.Do("accept the family", chromedp.Click(`#family-accept`))
	// The page reloads once the family is decided: a poll the reload
	// cuts short is polled again, on the new page.
	decided := fmt.Sprintf(`window.beforeFamily === undefined && (() => { const a = document.querySelector('#cells tbody tr[data-cell="%s"] td.level1'),
		b = document.querySelector('#cells tbody tr[data-cell="%s"] td.level1');
		return !!a && !!b && a.textContent.startsWith("accepted · alice") && b.textContent.startsWith("rejected · alice"); })()`, pdfCell.Cell, textCell.Cell)
	for deadline := time.Now().Add(90 * time.Second); ; {
		_, err := chromedp.Run(br.Ctx, chromedp.Poll[any](decided, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
		if err == nil {
			break
		}
		if time.Now().After(deadline) || !(strings.Contains(err.Error(), "navigated or closed") || strings.Contains(err.Error(), "Cannot find context")) {
			msg, _ := chromedp.Run(br.Ctx, chromedp.Evaluate[string](br.Says))
			t.Fatalf("browser: the grid after the family decision: %v (page says %q)", err, msg)
		}
	}
	br.Wait("the family's decision in the panel", memberSays(pdfCell.Cell, "accepted by the family")+" && "+memberSays(textCell.Cell, "rejected on its own")+
		" && "+messageShown(pdfCell.Cell))
	br.Shot(*deskScreenshots, "desk-family.png")

	g, err := mc.SignOffGrid(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if d := g.Cell(pdfCell.Cell).Level1; d == nil || d.Decision != api.DecisionAccepted || d.Reviewer != "alice" ||
		d.Comment != "[family] "+familyMessage+" of matter.mbox" {
		t.Errorf("%s: level 1 %+v, want accepted by alice by the family", pdfCell.Cell, d)
	}
	if d := g.Cell(textCell.Cell).Level1; d == nil || d.Decision != api.DecisionRejected || d.Reason != "the porter changed in June" {
		t.Errorf("%s: level 1 %+v, want its own rejection kept", textCell.Cell, d)
	}
	decides := 0
	for _, u := range signOffUpdates(t, ctx, tc, api.SignOffWorkflowID(subject)) {
		if u.name == api.DecideUpdate {
			decides++
			if u.reviewer != "alice" {
				t.Errorf("update %s by %q", u.id, u.reviewer)
			}
		}
	}
	if decides != 2 {
		t.Errorf("%d decide Updates in the sign-off's history, want 2 (one a decision)", decides)
	}
}

// messageShown is a condition on the desk's page: the family panel of
// cell shows Alice's message (familyMailbox's last) with its headers and
// its three attachments, in the message's order, the second lease.pdf
// cited.
func messageShown(cell string) string {
	headers := map[string]string{"From": "Alice <alice@example.org>", "To": "Bob <bob@example.org>",
		"Date": "Tue, 3 May 2022 10:00:00 +0200", "Subject": "Re: Observatory lease"}
	var conds []string
	for k, v := range headers {
		conds = append(conds, fmt.Sprintf(`(() => { const dd = document.querySelector('#family-headers dd[data-header="%s"]'); return !!dd && dd.textContent === %q; })()`, k, v))
	}
	sort.Strings(conds)
	conds = append(conds, `!document.querySelector('#family-headers dd[data-header="Cc"]')`,
		`(() => { const li = [...document.querySelectorAll("#family-attachments li")];
			return li.length === 3 && li[0].dataset.name === "lease.pdf" && !li[0].classList.contains("cited") && li[0].textContent.includes("read, 3 pages") &&
				li[1].dataset.name === "lease.pdf" && li[1].classList.contains("cited") && li[1].textContent.includes("read, 3 pages") &&
				li[2].dataset.name === "terms.docx" && !li[2].classList.contains("cited") && li[2].textContent.includes("docx") && li[2].textContent.includes("read, "); })()`,
		fmt.Sprintf(`!!document.querySelector('#family li.current[data-cell="%s"]')`, cell))
	return strings.Join(conds, " && ")
}
