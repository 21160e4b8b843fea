package activities_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/worker/workerapp/workerapptest"
)

// TestWorkerAreasCoverEveryWrite runs every kind of work on the embedded
// stack (DocumentQA over text, PDF, invalid UTF-8 and a corpus, with the
// default prefix and a caller's; a review; batches of both manifest
// formats, dated, reusing answers and comparing) and then checks every key
// in the worker's bucket: each is an input the test wrote, under one of
// the worker's areas (workerAreas, the one list the read, write and claim
// checks use), or under a prefix a caller claimed. A key in none is an
// area the worker writes that the boundary does not know: the test fails
// until it is added to workerAreas, and to TestBoundaryTable.
func TestWorkerAreasCoverEveryWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	s := workerapptest.Start(t)
	d := s.Dev.Stack
	ctx := context.Background()
	c, err := client.Dial(client.Options{HostPort: d.TemporalAddress, Namespace: d.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store, err := s3store.New(ctx, s3store.Config{Endpoint: secret.Endpoint(d.S3Endpoint), Region: d.Region, AccessKeyID: d.S3AccessKey, SecretAccessKey: secret.Value(d.S3SecretKey)})
	if err != nil {
		t.Fatal(err)
	}
	bucket := "s3://" + d.Bucket + "/"
	inputs := map[string]bool{}
	put := func(key string, data []byte) string {
		t.Helper()
		if err := store.Put(ctx, s3store.Location{Bucket: d.Bucket, Key: key}, data, ""); err != nil {
			t.Fatal(err)
		}
		inputs[key] = true
		return bucket + key
	}
	var text strings.Builder
	for i := range 60 {
		fmt.Fprintf(&text, "Paragraph %d tells of river boats and the harvest weather in the valley. ", i)
	}
	text.WriteString(docgen.Fact + "\n")
	notes := put("docs/areas/notes.txt", []byte(text.String()))
	latin1 := put("docs/areas/latin1.txt", []byte("Caf\xe9 au lait. "+text.String()))
	pdf := put("docs/areas/agreement.pdf", docconvtest.PDF(docconvtest.PDFOptions{Pages: 4, FactPage: 3, Fact: docgen.Fact, Seed: 1}))
	html := put("docs/areas/page.html", docconvtest.HTML("Page", docconvtest.Sections(3, 1, docgen.Fact, 2)))
	jsonl := put("docs/areas/m.jsonl", []byte(fmt.Sprintf(`{"id":"one","document":%q,"question":%q}`+"\n"+
		`{"id":"two","documents":[%q,%q],"question":%q}`+"\n", notes, docgen.Question, notes, html, docgen.Question)))
	memagentManifest := put("docs/areas/m.json", []byte(fmt.Sprintf(`[{"context":%q,"input":%q,"answers":[%q]}]`,
		text.String(), docgen.Question, docgen.Answer)))

	opts := api.ModelOptions{ChunkTokens: 500}
	run := func(id, name string, in any) {
		t.Helper()
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: api.DefaultTaskQueue}, name, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Get(ctx, nil); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	run("areas-qa", api.DocumentQAName, api.DocumentQAInput{Document: notes, Question: docgen.Question, Options: opts})
	run("areas-qa-pdf", api.DocumentQAName, api.DocumentQAInput{Document: pdf, Question: docgen.Question, Options: opts,
		OutputPrefix: bucket + "team/areas-qa/"})
	replace := opts
	replace.InvalidUTF8 = api.InvalidUTF8Replace
	run("areas-qa-latin1", api.DocumentQAName, api.DocumentQAInput{Document: latin1, Question: docgen.Question, Options: replace})
	run("areas-corpus", api.DocumentQAName, api.DocumentQAInput{Documents: []string{notes, html}, Question: docgen.Question, Options: opts})
	run("areas-review", api.ReviewDocumentName, api.ReviewInput{Document: notes, Options: opts,
		Questions: []api.ReviewQuestion{{ID: "q1", Question: docgen.Question}, {ID: "q2", Question: "Who tells of river boats?"}}})
	run("areas-batch", api.BatchQAName, api.BatchQAInput{Manifest: jsonl, Options: opts})
	run("areas-batch-dated-1", api.BatchQAName, api.BatchQAInput{Manifest: jsonl, Options: opts,
		ReportPrefix: bucket + "team/areas-batch/", DatedReport: true})
	run("areas-batch-dated-2", api.BatchQAName, api.BatchQAInput{Manifest: jsonl, Options: opts,
		ReportPrefix: bucket + "team/areas-batch/", DatedReport: true, CompareWith: api.CompareWithPrevious})
	run("areas-batch-memagent", api.BatchQAName, api.BatchQAInput{Manifest: memagentManifest, Format: api.ManifestMemAgent, Options: opts})

	keys, err := store.List(ctx, d.Bucket, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	claimed := map[string]bool{}
	for _, k := range keys {
		if dir, ok := strings.CutSuffix(k, activities.OwnerObject); ok {
			claimed[dir] = true
		}
	}
	seen := map[string]int{}
	for _, k := range keys {
		if inputs[k] {
			continue
		}
		if area := activities.AreaOfKey(k); area != "" {
			seen[area]++
			continue
		}
		under := false
		for dir := k; !under && strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(strings.TrimSuffix(dir, "/"), "/")+1]
			under = claimed[dir]
			if dir == "" {
				break
			}
		}
		if !under {
			t.Errorf("the worker wrote %s, outside every area of workerAreas and every claimed prefix: list its area in workerAreas (activities/areas.go) and give it a row in TestBoundaryTable", k)
		}
	}
	// The runs above write into every area but the uploads, which the
	// starter makes.
	for _, area := range activities.WorkerAreaPrefixes() {
		if seen[area] == 0 && area != "documents/" && area != "manifests/" {
			t.Errorf("nothing was written under %s: the test no longer exercises it", area)
		}
	}
	t.Logf("%d keys: %v in the worker's areas, %d claimed prefixes", len(keys), seen, len(claimed))
}
