package deploy

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/simulator"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/internal/workerapp"
	"github.com/memagent/memagent/workflows"
)

// hostileInput is one document a hostile caller could hand a worker.
type hostileInput struct {
	name string
	make func() []byte
	// settle is how the run must end: "" for an answer, else the failure
	// type.
	settle string
}

// hostileInputs are generated here, small on the wire (all but the HTML,
// which is large by construction), and each once took a worker past its
// chart's 1 GiB: a 255 KB DOCX to 3.5 GB, a 4.7 KB PDF to 3.75 GB.
var hostileInputs = []hostileInput{
	{"DOCX: one paragraph of 256 MiB of \"a \"", func() []byte { return hugeParagraphDOCX(256 << 20) }, activities.ErrBadInput},
	{"DOCX: 20 million nested elements", func() []byte { return nestedDOCX(20_000_000) }, activities.ErrBadInput},
	{"PDF: a form XObject drawn 64,000 times on one page", func() []byte { return xobjectBombPDF(64000) }, activities.ErrBadInput},
	{"HTML: 100 MiB in one <p>", func() []byte { return hugeParagraphHTML(100 << 20) }, activities.ErrBadInput},
	{"text: 1 MiB without whitespace", func() []byte { return bytes.Repeat([]byte("a"), 1<<20) }, ""},
}

// TestHostileInputsOnTheWorkerBinary runs the worker binary as a container
// would and hands it each hostile input as a DocumentQA: every run ends
// (failed as memagent.BadInput naming a limit, or answered), the worker's
// peak resident set (VmHWM) stays under the chart's 1 GiB, and the same
// worker then answers a normal question.
func TestHostileInputsOnTheWorkerBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the worker binary against the embedded stack")
	}
	workerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := workerapp.StartDev(ctx, workerapp.DevOptions{FreePorts: true, DisableUI: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	sim := httptest.NewServer(simulator.New(simulator.Options{Tokenizer: tok}))
	defer sim.Close()
	cfg := config.Default()
	cfg.TemporalAddress, cfg.TemporalNamespace = d.Stack.TemporalAddress, d.Stack.Namespace
	cfg.S3Endpoint, cfg.S3AccessKey, cfg.S3SecretKey, cfg.S3Region, cfg.Bucket = d.Stack.S3Endpoint, d.Stack.S3AccessKey, d.Stack.S3SecretKey, d.Stack.Region, d.Stack.Bucket
	store, err := workerapp.NewStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := workerapp.Dial(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const queue = "hostile"
	w := startWorkerProcess(t, map[string]string{
		"TEMPORAL_ADDRESS": d.Stack.TemporalAddress, "TEMPORAL_NAMESPACE": d.Stack.Namespace,
		"AWS_ENDPOINT_URL_S3": d.Stack.S3Endpoint, "AWS_ACCESS_KEY_ID": d.Stack.S3AccessKey,
		"AWS_SECRET_ACCESS_KEY": d.Stack.S3SecretKey, "AWS_REGION": d.Stack.Region, "MEMAGENT_BUCKET": d.Stack.Bucket,
		"MEMAGENT_HTTP_ADDR": "127.0.0.1:0", "MEMAGENT_LOG_LEVEL": "warn", "MEMAGENT_TASK_QUEUE": queue,
		"OPENAI_BASE_URL":      sim.URL + "/v1",
		"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "MEMAGENT_CODEC_KEYS": "", "MEMAGENT_CODEC_KEYS_FILE": "",
	})

	ask := func(t *testing.T, id string, doc []byte, question string) (*workflows.DocumentQAResult, error) {
		t.Helper()
		loc := s3store.Location{Bucket: d.Stack.Bucket, Key: "hostile/" + id}
		if err := store.Put(ctx, loc, doc, "application/octet-stream"); err != nil {
			t.Fatal(err)
		}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflows.DocumentQAName,
			workflows.DocumentQAInput{Document: loc.String(), Question: question, HeartbeatTimeoutSeconds: 5})
		if err != nil {
			t.Fatal(err)
		}
		var res workflows.DocumentQAResult
		err = run.Get(ctx, &res)
		return &res, err
	}
	for i, in := range hostileInputs {
		t.Run(in.name, func(t *testing.T) {
			doc := in.make()
			began := time.Now()
			_, err := ask(t, fmt.Sprintf("hostile-%d", i), doc, "What does it say?")
			took := time.Since(began)
			var appErr *temporal.ApplicationError
			switch {
			case in.settle == "" && err != nil:
				t.Errorf("run failed: %v", err)
			case in.settle != "" && (!errors.As(err, &appErr) || appErr.Type() != in.settle):
				t.Errorf("run ended with %v, want %s", err, in.settle)
			}
			peak := w.peakRSS(t)
			t.Logf("%d bytes: %v in %v; worker peak so far %.0f MB", len(doc), errMessage(err), took.Round(10*time.Millisecond), float64(peak)/(1<<20))
			if peak >= 1<<30 {
				t.Fatalf("worker peak resident set %.0f MB, over the chart's 1 GiB", float64(peak)/(1<<20))
			}
			if w.done() {
				t.Fatalf("the worker died: %v\n%s", w.exitErr, w.out)
			}
		})
	}
	t.Run("a normal question afterwards", func(t *testing.T) {
		var b strings.Builder
		for i := range 200 {
			if i == 150 {
				b.WriteString("The courier's password is MARIGOLD-88. ")
			}
			fmt.Fprintf(&b, "Entry %d notes the tide tables and the lighthouse keeper. ", i)
		}
		began := time.Now()
		res, err := ask(t, "hostile-after", []byte(b.String()), "What is the courier's password?")
		if err != nil || res.Answer != "MARIGOLD-88" {
			t.Fatalf("answer %q, %v: want MARIGOLD-88", res.Answer, err)
		}
		t.Logf("answered in %v", time.Since(began).Round(10*time.Millisecond))
	})
}

func errMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type() + ": " + appErr.Message()
	}
	if err != nil {
		return err.Error()
	}
	return "answered"
}

// peakRSS is the worker process's peak resident set, from VmHWM.
func (w *workerProcess) peakRSS(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the worker's status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	t.Fatal("no VmHWM in the worker's status")
	return 0
}

// docx writes a DOCX whose word/document.xml is written by body.
func docx(body func(w io.Writer)) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	add := func(name, content string) {
		f, _ := z.Create(name)
		io.WriteString(f, content)
	}
	add("[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`)
	add("_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`)
	f, _ := z.Create("word/document.xml")
	io.WriteString(f, `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`)
	body(f)
	io.WriteString(f, `</w:body></w:document>`)
	z.Close()
	return buf.Bytes()
}

// hugeParagraphDOCX is one paragraph of n bytes of "a a a …", streamed
// into the deflater, so the file stays small.
func hugeParagraphDOCX(n int) []byte {
	return docx(func(w io.Writer) {
		io.WriteString(w, `<w:p><w:r><w:t xml:space="preserve">`)
		block := bytes.Repeat([]byte("a "), 32<<10)
		for written := 0; written < n; written += len(block) {
			w.Write(block)
		}
		io.WriteString(w, `</w:t></w:r></w:p>`)
	})
}

// nestedDOCX nests n elements inside one another.
func nestedDOCX(n int) []byte {
	return docx(func(w io.Writer) {
		open, closing := bytes.Repeat([]byte("<w:p>"), 1<<12), bytes.Repeat([]byte("</w:p>"), 1<<12)
		for i := 0; i < n; i += 1 << 12 {
			w.Write(open)
		}
		for i := 0; i < n; i += 1 << 12 {
			w.Write(closing)
		}
	})
}

// hugeParagraphHTML is an HTML page of one <p> of n bytes of words.
func hugeParagraphHTML(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 64)
	b.WriteString("<!DOCTYPE html><html><body><p>")
	word := []byte("lorem ipsum ")
	for b.Len() < n {
		b.Write(word)
	}
	b.WriteString("</p></body></html>")
	return b.Bytes()
}

// xobjectBombPDF is a one-page PDF whose content stream draws one form
// XObject, holding a line of text, draws times over: a few KB deflated,
// millions of characters for a text extractor.
func xobjectBombPDF(draws int) []byte {
	var content bytes.Buffer
	zw := zlib.NewWriter(&content)
	for range draws {
		io.WriteString(zw, "q /X1 Do Q\n")
	}
	zw.Close()
	form := "BT /F1 10 Tf 20 700 Td (The quick brown fox jumps over the lazy dog, again and again and again and again.) Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X1 5 0 R >> /Font << /F1 6 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", content.Len(), content.Bytes()),
		fmt.Sprintf("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 6 0 R >> >> /Length %d >>\nstream\n%s\nendstream", len(form), form),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// TestHostileInputsAreSmall: the generators make what a hostile caller
// would send, a few hundred KB at most (the HTML aside).
func TestHostileInputsAreSmall(t *testing.T) {
	for _, in := range hostileInputs {
		if n := len(in.make()); n > 2<<20 && !strings.HasPrefix(in.name, "HTML") {
			t.Errorf("%s: %d bytes", in.name, n)
		}
	}
}
