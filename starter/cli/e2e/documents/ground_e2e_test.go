package documents

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// groundedJSON is what ask --json prints about an answer's grounding.
type groundedJSON struct {
	Answer      string         `json:"answer"`
	AnswerFound bool           `json:"answer_found"`
	AnswerPages string         `json:"answer_pages"`
	Grounding   *api.Grounding `json:"grounding"`
	ResultURI   string         `json:"result_uri"`
}

// TestAskGroundingEndToEnd is the done-means of grounding, through the
// CLI, the DocumentQA workflow on the embedded dev clitest.Stack, the simulator
// and S3: the planted fact's answer is verbatim in the document, with a
// quote that holds it, and an "unknown" answer is no answer, with no
// citations and no grounding place. (An answer that occurs nowhere is
// not_found: the simulator only answers with the document's own words,
// so that is tested on the activity, activities/ground_test.go.)
func TestAskGroundingEndToEnd(t *testing.T) {
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	path, doc := clitest.WriteDoc(t, 19_000) // not 20,000: TestOperatingRuns lists the runs of that document

	d.Simulator.Reset()
	out, stderr, err := clitest.RunCLI(t, "ask", "--doc", path, "--question", docgen.Question, "--answer", docgen.Answer, "--chunk-tokens", "2000", "--json")
	if err != nil {
		t.Fatalf("ask: %v\nstderr: %s", err, stderr)
	}
	var res groundedJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ask --json printed %q: %v", out, err)
	}
	g := res.Grounding
	if res.Answer != docgen.Answer || g == nil || g.Status != api.GroundingVerbatim || !strings.Contains(g.Quote, docgen.Answer) {
		t.Fatalf("answer %q grounding %+v, want %q verbatim with a quote holding it", res.Answer, g, docgen.Answer)
	}
	if doc[g.Start:g.End] != docgen.Answer {
		t.Errorf("grounding range [%d,%d) holds %q, want the answer", g.Start, g.End, doc[g.Start:g.End])
	}
	// The text output says it too, on one line.
	text, _, err := clitest.RunCLI(t, "ask", "--doc", path, "--question", docgen.Question, "--answer", docgen.Answer, "--chunk-tokens", "2000")
	line := ""
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "Grounding: ") {
			line = l
		}
	}
	if err != nil || !strings.HasPrefix(line, `Grounding: verbatim: "`) || !strings.Contains(line, docgen.Answer) {
		t.Errorf("ask (text): %v; grounding line %q in\n%s", err, line, text)
	}

	// A question the document has no word of: the simulator answers
	// \boxed{unknown}.
	d.Simulator.Reset()
	out, stderr, err = clitest.RunCLI(t, "ask", "--doc", path, "--question", "Which xylophone did the quokka zymurgist prefer?", "--chunk-tokens", "2000", "--json")
	if err != nil {
		t.Fatalf("ask (unknown): %v\nstderr: %s", err, stderr)
	}
	res = groundedJSON{}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ask --json printed %q: %v", out, err)
	}
	if res.Answer != "unknown" || res.AnswerFound || res.AnswerPages != "" || res.Grounding == nil ||
		res.Grounding.Status != api.GroundingNoAnswer || res.Grounding.Quote != "" || res.Grounding.Pages != nil {
		t.Errorf("unknown answer: %+v (grounding %+v), want answer_found false, no pages, grounding no_answer", res, res.Grounding)
	}
}
