package typescript_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/worker/workerapp/workerapptest"
)

// TestTypeScriptExample builds the TypeScript example with its own tsc and
// runs it against the embedded stack with a worker, in the environment that
// `devstack` prints: it uploads a document, runs DocumentQA following
// its progress query, a review with two questions and a batch over a
// manifest it uploads, and prints every answer.
func TestTypeScriptExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server and Node.js")
	}
	node := testdeps.Command(t, "node", "install Node.js 20.3 or later, then run npm ci --prefix examples/typescript")
	for _, dep := range []string{"@temporalio/client", "@aws-sdk/client-s3", "typescript"} {
		testdeps.File(t, filepath.Join("node_modules", dep, "package.json"), "run npm ci --prefix examples/typescript")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	tsc := exec.CommandContext(ctx, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".")
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}

	st := workerapptest.Start(t)
	cmd := exec.CommandContext(ctx, node, filepath.Join("dist", "main.js"))
	cmd.Env = st.Env()
	began := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("the example ran in %s:\n%s", time.Since(began).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("the example failed: %v (output above)", err)
	}
	for _, want := range []string{
		`(?m)^uploaded s3://` + regexp.QuoteMeta(st.Config.Bucket) + `/examples/typescript/[0-9a-f]{64}/document.txt `,
		`(?m)^  progress: (preparing|reading|answering|done) `,
		`(?m)^DocumentQA answer: 4417-ORCHID \(found true, exact match true, \d+ chunks`,
		`(?m)^  result: s3://\S+/result.json$`,
		`(?m)^review vault: 4417-ORCHID \(done, exact match true`,
		`(?m)^review termination: licensee \(done`,
		`(?m)^  grid: s3://\S+/grid.csv$`,
		`(?m)^batch: 2 items, 2 succeeded, 0 failed;`,
		`(?m)^batch vault: 4417-ORCHID \(answered\)$`,
		`(?m)^batch termination: licensee \(answered\)$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the output has no line matching %q", want)
		}
	}

	// A PDF is uploaded byte for byte, under its own name, and answered.
	pdf := docconvtest.PDF(docconvtest.PDFOptions{Pages: 6, FactPage: 4, Fact: "The vault combination is 4417-ORCHID.", Seed: 9})
	pdfPath := filepath.Join(t.TempDir(), "vault.pdf")
	if err := os.WriteFile(pdfPath, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.CommandContext(ctx, node, filepath.Join("dist", "main.js"), pdfPath)
	cmd.Env = st.Env()
	out, err = cmd.CombinedOutput()
	t.Logf("the example on a PDF:\n%s", out)
	if err != nil {
		t.Fatalf("the example failed on a PDF: %v (output above)", err)
	}
	for _, want := range []string{
		fmt.Sprintf(`(?m)^uploaded s3://%s/examples/typescript/[0-9a-f]{64}/vault.pdf \(%d bytes\)$`, regexp.QuoteMeta(st.Config.Bucket), len(pdf)),
		`(?m)^DocumentQA answer: 4417-ORCHID \(found true`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the output on a PDF has no line matching %q", want)
		}
	}
}
