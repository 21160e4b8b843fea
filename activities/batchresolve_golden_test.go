package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/report"
)

// TestResolveBatchPageGolden pins what resolveBatchPage returns and writes
// for a page with an item of every kind: an earlier answer reused (scored,
// and one kept from before the no-answer rule), an earlier answer that
// answers another question (not reused), documents to run of different
// sizes (run longest first), a missing document, a document the worker
// may not read, and corpora; with one sample and two, in part and whole.
func TestResolveBatchPageGolden(t *testing.T) {
	docs := map[string]string{"a": "document a", "b": "document b", "c": "a short one",
		"d": strings.Repeat("a long document ", 40), "secret": "not for this worker"}
	items := []report.ManifestItem{
		{Seq: 0, ID: "reused", Document: "s3://docs/a", Question: "q", Answers: []string{"Paris"}, Labels: map[string]string{"k": "v"}, FairnessKey: "t1"},
		{Seq: 1, ID: "no-answer", Document: "s3://docs/b", Question: "q", Answers: []string{"Lyon"}},
		{Seq: 2, ID: "planted", Document: "s3://docs/c", Question: "q"},
		{Seq: 3, ID: "long", Document: "s3://docs/d", Question: "q2", Answers: []string{"x"}},
		{Seq: 4, ID: "missing", Document: "s3://docs/missing", Question: "q"},
		{Seq: 5, ID: "denied", Document: "s3://private/secret", Question: "q"},
		{Seq: 6, ID: "corpus", Documents: []string{"s3://docs/a", "s3://docs/d"}, Question: "q"},
		{Seq: 7, ID: "corpus-missing", Documents: []string{"s3://docs/missing", "s3://private/secret"}, Question: "q"},
	}
	var got strings.Builder
	for _, tc := range []struct {
		name    string
		samples int
		whole   bool
	}{{"one sample", 0, false}, {"two samples", 2, false}, {"whole", 0, true}, {"whole, two samples", 2, true}} {
		a, mem := batchActivities(t)
		a.ReadPrefixes = []string{"s3://docs/"}
		for name, text := range docs {
			bucket := "docs"
			if name == "secret" {
				bucket = "private"
			}
			putObject(t, mem, "s3://"+bucket+"/"+name, []byte(text))
		}
		var page bytes.Buffer
		for _, it := range items {
			line, _ := json.Marshal(it)
			page.Write(append(line, '\n'))
		}
		work := "s3://memagent/batches/wf/work/r/"
		putObject(t, mem, work+PagePath(3), page.Bytes())
		opts := api.ModelOptions{}.WithDefaults()
		opts.Model = "fake"
		earlier := func(doc, question, answer string, found bool, sample int, about string) {
			info, _ := mem.Head(context.Background(), mustLoc(t, doc))
			key := SampleAnswerKey(doc, info.ETag, question, opts, a.Templates, sample)
			res, _ := json.Marshal(api.DocumentQAResult{WorkflowID: "old", Answer: answer, AnswerFound: found, Tokens: 20, Chunks: 2,
				Document: about, Question: question, Model: "fake", Options: opts, AnswerPages: "p. 3",
				ResultURI: "s3://memagent/answers/" + key + "/result.json"})
			putObject(t, mem, "s3://memagent/answers/"+key+"/result.json", res)
		}
		earlier("s3://docs/a", "q", "paris", true, 0, "s3://docs/a")
		earlier("s3://docs/a", "q", "lyon", true, 1, "s3://docs/a")
		earlier("s3://docs/b", "q", "No answer", true, 0, "s3://docs/b")
		earlier("s3://docs/c", "q", "planted", true, 0, "s3://docs/other")
		store := &recordingStore{Store: mem}
		a.Store = store
		out, err := a.resolveBatchPage(context.Background(), actwire.ResolvePageInput{WorkPrefix: work, Page: 3, Samples: tc.samples, Whole: tc.whole})
		fmt.Fprintf(&got, "##### %s\n", tc.name)
		if err != nil {
			fmt.Fprintf(&got, "error: %v\n", err)
		} else {
			j, _ := json.MarshalIndent(out, "", "  ")
			fmt.Fprintf(&got, "output: %s\n", j)
		}
		got.Write(store.transcript.Bytes())
	}
	checkGolden(t, "resolve/page.golden", []byte(got.String()))
}
