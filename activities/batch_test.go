package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

func batchActivities(t *testing.T) (*Activities, *activitiestest.Store) {
	t.Helper()
	store := activitiestest.NewStore()
	return &Activities{
		ReadPrefixes: []string{"s3://"}, WritePrefixes: []string{"s3://"}, // any bucket: the tests use several
		Store: store, Model: &activitiestest.Model{}, DefaultModel: "fake", Bucket: "memagent",
		Templates:  memagent.DefaultTemplates(),
		Tokenizers: func(string) (memagent.Tokenizer, error) { return activitiestest.WordTokenizer{}, nil },
	}, store
}

func putObject(t *testing.T, s *activitiestest.Store, uri string, data []byte) {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), loc, data, ""); err != nil {
		t.Fatal(err)
	}
}

func getObject(t *testing.T, s *activitiestest.Store, uri string) []byte {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Object(loc)
	if b == nil {
		t.Fatalf("%s does not exist", uri)
	}
	return b
}

func pageItems(t *testing.T, data []byte) []report.ManifestItem {
	t.Helper()
	var items []report.ManifestItem
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte{'\n'}) {
		var it report.ManifestItem
		if err := json.Unmarshal(line, &it); err != nil {
			t.Fatal(err)
		}
		items = append(items, it)
	}
	return items
}

func TestExpandManifestPages(t *testing.T) {
	a, store := batchActivities(t)
	var b strings.Builder
	for i := range 23 {
		fmt.Fprintf(&b, `{"document": "s3://docs/d%d.txt", "question": "q%d"}`+"\n", i%3, i)
	}
	putObject(t, store, "s3://in/m.jsonl", []byte(b.String()))
	out, err := a.expandManifest(context.Background(), actwire.ExpandInput{
		Manifest: "s3://in/m.jsonl", WorkflowID: "wf", RunKey: "r1", PageSize: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := actwire.ExpandOutput{Format: "jsonl", Items: 23, Pages: 3, ReportPrefix: "s3://memagent/batches/wf/",
		WorkPrefix: "s3://memagent/batches/wf/work/r1/", Model: "fake"}
	if *out != want {
		t.Errorf("output\n got %+v\nwant %+v", *out, want)
	}
	seq := 0
	for p, wantN := range []int{10, 10, 3} {
		items := pageItems(t, getObject(t, store, out.WorkPrefix+PagePath(p)))
		if len(items) != wantN {
			t.Errorf("page %d has %d items, want %d", p, len(items), wantN)
		}
		for _, it := range items {
			if it.Seq != seq || it.ID != fmt.Sprint(seq+1) || it.Question != fmt.Sprintf("q%d", seq) {
				t.Errorf("page %d item %+v, want seq %d", p, it, seq)
			}
			seq++
		}
	}
}

func TestExpandManifestBoundsPageBytes(t *testing.T) {
	a, store := batchActivities(t)
	var b strings.Builder
	q := strings.Repeat("long question ", 1000) // 14 KB
	for i := range 40 {
		fmt.Fprintf(&b, `{"document": "s3://docs/d.txt", "question": "%s %d"}`+"\n", q, i)
	}
	putObject(t, store, "s3://in/m.jsonl", []byte(b.String()))
	out, err := a.expandManifest(context.Background(), actwire.ExpandInput{Manifest: "s3://in/m.jsonl", WorkflowID: "wf", RunKey: "r", PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if out.Pages < 3 {
		t.Errorf("40 items of 14 KB went into %d page(s): pages are not bounded in bytes", out.Pages)
	}
	total := 0
	for p := range out.Pages {
		data := getObject(t, store, out.WorkPrefix+PagePath(p))
		if len(data) > pageBytes+20<<10 {
			t.Errorf("page %d is %d bytes", p, len(data))
		}
		total += len(pageItems(t, data))
	}
	if total != 40 {
		t.Errorf("pages hold %d items, want 40", total)
	}
}

func TestExpandManifestMemAgentContexts(t *testing.T) {
	a, store := batchActivities(t)
	existing := "Already stored context."
	sum := "contexts/sha256/" + sha256Hex(existing) + ".txt"
	putObject(t, store, "s3://memagent/"+sum, []byte(existing))
	manifest, _ := json.Marshal([]map[string]any{
		{"_id": 1, "context": "First context.", "input": "q1", "answers": []string{"a"}, "length": 1000},
		{"_id": 2, "context": "First context.", "input": "q2", "answers": []string{"b"}, "length": 1000},
		{"_id": 3, "context": existing, "input": "q3", "length": 2000},
		{"_id": 4, "context": "Second context.", "input": "q4", "length": 2000},
	})
	putObject(t, store, "s3://in/eval.json", manifest)
	out, err := a.expandManifest(context.Background(), actwire.ExpandInput{Manifest: "s3://in/eval.json", WorkflowID: "wf", RunKey: "r", Dated: "2025-01-02T030405Z"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Format != "memagent" || out.Items != 4 || out.Contexts != 3 || out.ContextsWritten != 2 {
		t.Errorf("output = %+v, want 4 items, 3 distinct contexts, 2 written", out)
	}
	if out.ReportPrefix != "s3://memagent/batches/wf/2025-01-02T030405Z/" {
		t.Errorf("dated prefix = %q", out.ReportPrefix)
	}
	page := getObject(t, store, out.WorkPrefix+PagePath(0))
	if bytes.Contains(page, []byte("First context")) {
		t.Error("a page holds context text")
	}
	items := pageItems(t, page)
	if items[0].Document != items[1].Document || items[0].Document == items[3].Document ||
		items[2].Document != "s3://memagent/"+sum || items[0].Labels["length"] != "1000" {
		t.Errorf("items = %+v", items)
	}
	if got := string(getObject(t, store, items[3].Document)); got != "Second context." {
		t.Errorf("stored context = %q", got)
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestExpandManifestErrors(t *testing.T) {
	a, store := batchActivities(t)
	var b strings.Builder
	for i := range 30 {
		switch {
		case i == 4:
			b.WriteString(`{"document": "s3://docs/d.txt"}` + "\n")
		case i >= 10:
			b.WriteString(`{"document": "file.txt", "question": "q"}` + "\n")
		default:
			fmt.Fprintf(&b, `{"document": "s3://docs/d.txt", "question": "q%d"}`+"\n", i)
		}
	}
	putObject(t, store, "s3://in/bad.jsonl", []byte(b.String()))
	_, err := a.expandManifest(context.Background(), actwire.ExpandInput{Manifest: "s3://in/bad.jsonl", WorkflowID: "wf", RunKey: "r"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() {
		t.Fatalf("error = %v, want non-retryable %s", err, api.ErrBadInput)
	}
	for _, want := range []string{"line 5: missing question", `line 11: document "file.txt" is not an s3:// URI`, "stopped checking there"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	for _, k := range store.Keys() {
		if strings.Contains(k.Key, "/items/") {
			t.Errorf("a bad manifest left page %s", k)
		}
	}
}

func TestExpandManifestResumesFromHeartbeat(t *testing.T) {
	a, store := batchActivities(t)
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, `{"document": "s3://docs/d.txt", "question": "q%d"}`+"\n", i)
	}
	putObject(t, store, "s3://in/m.jsonl", []byte(b.String()))
	// Pages 0 and 1 were written by an attempt that died: a stale marker
	// in them shows they are not written again.
	for p := range 2 {
		putObject(t, store, "s3://memagent/batches/wf/work/r/"+PagePath(p), []byte("stale\n"))
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.SetHeartbeatDetails(expandProgress{Pages: 2, Items: 20})
	// The test environment runs activities for no workflow it can describe.
	a.SkipExecutionChecks = true
	a.Register(env)
	v, err := env.ExecuteActivity(ExpandManifestName, actwire.ExpandInput{Manifest: "s3://in/m.jsonl", WorkflowID: "wf", RunKey: "r", PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	var out actwire.ExpandOutput
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	if out.Items != 25 || out.Pages != 3 {
		t.Errorf("output = %+v", out)
	}
	if got := string(getObject(t, store, out.WorkPrefix+PagePath(1))); got != "stale\n" {
		t.Errorf("page 1 was written again: %q", got)
	}
	if items := pageItems(t, getObject(t, store, out.WorkPrefix+PagePath(2))); len(items) != 5 || items[0].Seq != 20 {
		t.Errorf("page 2 = %+v", items)
	}
}

func TestResolveBatchPage(t *testing.T) {
	a, store := batchActivities(t)
	putObject(t, store, "s3://docs/a.txt", []byte("document a"))
	putObject(t, store, "s3://docs/b.txt", []byte("document b"))
	items := []report.ManifestItem{
		{Seq: 0, ID: "x", Document: "s3://docs/a.txt", Question: "q", Answers: []string{"Paris"}, Labels: map[string]string{"k": "v"}},
		{Seq: 1, ID: "y", Document: "s3://docs/missing.txt", Question: "q"},
		{Seq: 2, ID: "z", Document: "s3://docs/b.txt", Question: "q"},
	}
	var page bytes.Buffer
	for _, it := range items {
		line, _ := json.Marshal(it)
		page.Write(append(line, '\n'))
	}
	work := "s3://memagent/batches/wf/work/r/"
	putObject(t, store, work+PagePath(0), page.Bytes())
	// An earlier answer to item 0's request.
	info, _ := store.Head(context.Background(), s3store.Location{Bucket: "docs", Key: "a.txt"})
	opts := api.ModelOptions{}.WithDefaults()
	opts.Model = "fake"
	key := AnswerKey("s3://docs/a.txt", info.ETag, "q", opts, a.Templates)
	earlier, _ := json.Marshal(api.DocumentQAResult{WorkflowID: "old/0", Answer: "paris", AnswerFound: true, Tokens: 2, Chunks: 1,
		Document: "s3://docs/a.txt", Question: "q", Model: "fake", Options: opts,
		ResultURI: "s3://memagent/answers/" + key + "/result.json"})
	putObject(t, store, "s3://memagent/answers/"+key+"/result.json", earlier)
	// A result planted under item 2's key by a run that answered another
	// question (or document) is not reused.
	infoB, _ := store.Head(context.Background(), s3store.Location{Bucket: "docs", Key: "b.txt"})
	keyB := AnswerKey("s3://docs/b.txt", infoB.ETag, "q", opts, a.Templates)
	planted, _ := json.Marshal(api.DocumentQAResult{WorkflowID: "=HYPERLINK(\"x\")", Answer: "planted", AnswerFound: true,
		Document: "s3://docs/other.txt", Question: "q", Model: "fake", Options: opts,
		ResultURI: "s3://memagent/answers/" + keyB + "/result.json"})
	putObject(t, store, "s3://memagent/answers/"+keyB+"/result.json", planted)

	out, err := a.resolveBatchPage(context.Background(), actwire.ResolvePageInput{WorkPrefix: work, Page: 0})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reused != 1 || out.Failed != 1 || len(out.Run) != 1 || out.Run[0].Seq != 2 {
		t.Fatalf("output = %+v", out)
	}
	if !strings.HasPrefix(out.Run[0].OutputPrefix, "s3://memagent/answers/") || out.Run[0].Bytes == 0 {
		t.Errorf("run item = %+v", out.Run[0])
	}
	var settled []api.BatchItemResult
	for _, line := range bytes.Split(bytes.TrimSpace(getObject(t, store, out.Part)), []byte{'\n'}) {
		var r api.BatchItemResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		settled = append(settled, r)
	}
	if len(settled) != 2 {
		t.Fatalf("settled = %+v", settled)
	}
	// A reused item names no other batch's run: the cache entry is where
	// its answer is.
	if r := settled[0]; r.Status != api.ItemReused || r.Scores == nil || !r.Scores.ExactMatch || r.WorkflowID != "" ||
		!strings.HasPrefix(r.ResultURI, "s3://memagent/answers/") || r.Labels["k"] != "v" {
		t.Errorf("reused = %+v", r)
	}
	if r := settled[1]; r.Status != api.ItemFailed || r.ErrorType != api.ErrDocumentNotFound || !strings.Contains(r.Error, "missing.txt does not exist") {
		t.Errorf("failed = %+v", r)
	}

	// A new version of document a is a new key: no longer reused.
	putObject(t, store, "s3://docs/a.txt", []byte("document a, second edition"))
	out, err = a.resolveBatchPage(context.Background(), actwire.ResolvePageInput{WorkPrefix: work, Page: 0})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reused != 0 || len(out.Run) != 2 {
		t.Errorf("after the document changed: %+v", out)
	}
}

// batchItems makes n outcomes of every kind, with labels, some with
// hostile text.
func batchItems(n int) []api.BatchItemResult {
	var items []api.BatchItemResult
	for i := range n {
		r := api.BatchItemResult{Seq: i, ID: fmt.Sprintf("id-%d", i), Document: fmt.Sprintf("s3://docs/d%d.txt", i%7),
			Question: fmt.Sprintf("question %d", i), Labels: map[string]string{"length": fmt.Sprint([]int{8000, 16000, 32000}[i%3]), "uniq": fmt.Sprint(i)},
			WorkflowID: fmt.Sprintf("wf/%d", i)}
		if i%4 != 3 {
			r.GoldAnswers = []string{fmt.Sprintf("gold %d", i)}
		}
		switch {
		case i%11 == 5:
			r.Status, r.Error, r.ErrorType = api.ItemFailed, `prompt <b>too</b> long, "quoted"`, api.ErrPromptTooLong
		case i%5 == 0:
			r.Status = api.ItemReused
		default:
			r.Status = api.ItemAnswered
			r.Usage = api.Usage{Calls: 3, PromptTokens: 1000, CompletionTokens: 50}
		}
		if r.Status != api.ItemFailed {
			r.Answer = fmt.Sprintf("=answer %d <script>", i)
			r.AnswerFound = true
			r.Tokens = int64(1000 * (i%9 + 1))
			r.Chunks = i%9 + 1
			if len(r.GoldAnswers) > 0 {
				r.Scores = &api.Scores{ExactMatch: i%3 == 0, SubstringMatch: i%2 == 0, F1: float64(i%10) / 10, Recall: float64(i%4) / 4}
			}
		}
		items = append(items, r)
	}
	return items
}

// recompute is the aggregate of items, computed independently of the
// report code.
func recompute(items []api.BatchItemResult, keep func(api.BatchItemResult) bool) api.ScoreAggregate {
	var a api.ScoreAggregate
	var em, sub, f1, recall, tok float64
	tokItems := 0
	for _, r := range items {
		if !keep(r) {
			continue
		}
		a.Items++
		switch r.Status {
		case api.ItemAnswered:
			a.Answered++
		case api.ItemReused:
			a.Reused++
		case api.ItemFailed:
			a.Failed++
		}
		a.Usage = a.Usage.Add(r.Usage)
		if r.Tokens > 0 {
			tok += float64(r.Tokens)
			tokItems++
		}
		if r.Status != api.ItemFailed && len(r.GoldAnswers) > 0 && r.Scores != nil {
			a.Scored++
			if r.Scores.ExactMatch {
				em++
			}
			if r.Scores.SubstringMatch {
				sub++
			}
			f1 += r.Scores.F1
			recall += r.Scores.Recall
		}
	}
	if a.Scored > 0 {
		n := float64(a.Scored)
		a.ExactMatch, a.SubstringMatch, a.F1, a.Recall = em/n, sub/n, f1/n, recall/n
	}
	if tokItems > 0 {
		a.MeanTokens = tok / float64(tokItems)
	}
	return a
}

func sameAggregate(a, b api.ScoreAggregate) bool {
	close := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return a.Items == b.Items && a.Answered == b.Answered && a.Reused == b.Reused && a.Failed == b.Failed &&
		a.Scored == b.Scored && close(a.ExactMatch, b.ExactMatch) && close(a.SubstringMatch, b.SubstringMatch) &&
		close(a.F1, b.F1) && close(a.Recall, b.Recall) && close(a.MeanTokens, b.MeanTokens) && a.Usage == b.Usage
}

// writeParts stores items as parts of JSON Lines, shuffled across parts.
func writeParts(t *testing.T, store *activitiestest.Store, prefix string, items []api.BatchItemResult, parts int) []string {
	t.Helper()
	bufs := make([]bytes.Buffer, parts)
	for i, r := range items {
		line, _ := json.Marshal(r)
		bufs[(i*7)%parts].Write(append(line, '\n'))
	}
	var uris []string
	for p := range bufs {
		uri := fmt.Sprintf("%sparts/p%d.jsonl", prefix, p)
		putObject(t, store, uri, bufs[p].Bytes())
		uris = append(uris, uri)
	}
	return uris
}

func TestWriteBatchReport(t *testing.T) {
	a, store := batchActivities(t)
	items := batchItems(150)
	prefix := "s3://memagent/batches/wf/"
	parts := writeParts(t, store, prefix+"work/r/", items, 4)
	start := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	rep, err := a.writeBatchReport(context.Background(), actwire.ReportInput{
		Name: `nightly <b>`, WorkflowID: "wf", Manifest: "s3://in/m.jsonl", Model: "fake", StartedAt: start,
		ReportPrefix: prefix, Parts: parts, Items: len(items),
	})
	if err != nil {
		t.Fatal(err)
	}

	// report.json is what the activity returned, and its aggregates are
	// those of the items.
	var stored api.BatchReport
	if err := json.Unmarshal(getObject(t, store, prefix+"report.json"), &stored); err != nil {
		t.Fatal(err)
	}
	if !sameAggregate(stored.Overall, rep.Overall) || stored.HTMLURI != prefix+"report.html" || stored.ReportURI != prefix+"report.json" {
		t.Errorf("stored report differs from the returned one: %+v", stored)
	}
	if want := recompute(items, func(api.BatchItemResult) bool { return true }); !sameAggregate(rep.Overall, want) {
		t.Errorf("overall\n got %+v\nwant %+v", rep.Overall, want)
	}
	for _, v := range []string{"8000", "16000", "32000"} {
		want := recompute(items, func(r api.BatchItemResult) bool { return r.Labels["length"] == v })
		if got := rep.ByLabel["length"][v]; !sameAggregate(got, want) {
			t.Errorf("length %s\n got %+v\nwant %+v", v, got, want)
		}
	}
	if _, ok := rep.ByLabel["uniq"]; ok || len(rep.LabelsOmitted) != 1 || rep.LabelsOmitted[0] != "uniq" {
		t.Errorf("a label with 150 values: by_label has it %v, omitted %v", ok, rep.LabelsOmitted)
	}
	if !stored.StartedAt.Equal(start) || stored.Options.ChunkTokens != api.DefaultChunkTokens || stored.Options.Model != "fake" {
		t.Errorf("report header: started %v options %+v", stored.StartedAt, stored.Options)
	}

	// results.jsonl: every item once, in manifest order, as written.
	lines := bytes.Split(bytes.TrimSpace(getObject(t, store, rep.ResultsURI)), []byte{'\n'})
	if len(lines) != len(items) {
		t.Fatalf("results.jsonl has %d lines, want %d", len(lines), len(items))
	}
	for i, line := range lines {
		var r api.BatchItemResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Seq != i || r.ID != items[i].ID || r.Status != items[i].Status {
			t.Errorf("results line %d = seq %d id %s status %s", i, r.Seq, r.ID, r.Status)
		}
	}

	// results.csv: a header with the label columns, a row per item, free
	// text safe for spreadsheets.
	rows, err := csv.NewReader(bytes.NewReader(getObject(t, store, rep.CSVURI))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(items)+1 {
		t.Fatalf("CSV has %d rows, want %d", len(rows), len(items)+1)
	}
	header := strings.Join(rows[0], ",")
	if !strings.HasPrefix(header, "seq,id,status,document,question,gold_answers,answer,answer_found,exact_match,substring_match,f1,recall,") ||
		!strings.HasSuffix(header, ",label:length,documents,found_on,scan") {
		t.Errorf("CSV header = %s", header)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	if got := rows[2][col["answer"]]; got != "'=answer 1 <script>" {
		t.Errorf("CSV answer cell = %q, want the formula neutralised", got)
	}
	if got := rows[6][col["error"]]; got != `prompt <b>too</b> long, "quoted"` || rows[6][col["error_type"]] != api.ErrPromptTooLong {
		t.Errorf("CSV error cells = %q, %q", got, rows[6][col["error_type"]])
	}
	// Item 1 is scored with recall 1/4; item 3 has no gold answers and no
	// scores.
	if got, none := rows[2][col["recall"]], rows[4][col["recall"]]; got != "0.2500" || none != "" {
		t.Errorf("CSV recall cells = %q, %q; want 0.2500 and empty", got, none)
	}

	// The chart and the page: well-formed, escaped, self-contained.
	svg := string(getObject(t, store, rep.SVGURI))
	if !strings.HasPrefix(svg, "<svg") || strings.Contains(svg, "<b>") {
		t.Errorf("chart.svg: %.200s", svg)
	}
	page := string(getObject(t, store, rep.HTMLURI))
	for _, bad := range []string{"<script", "<b>", "https://", "http://cdn"} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	for _, want := range []string{"nightly &lt;b&gt;", "<svg", "By length", "Failed items (14)", `href="results.csv"`, "8000", "32000",
		"<th>recall</th>", "recall (mean)", fmt.Sprintf(`<td class="n">%.3f</td>`, rep.Overall.Recall)} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Index(page, ">8000<") > strings.Index(page, ">16000<") {
		t.Error("length values are not in numeric order")
	}
}

func TestWriteBatchReportChecksCompleteness(t *testing.T) {
	a, store := batchActivities(t)
	items := batchItems(10)
	prefix := "s3://memagent/batches/wf/"
	// Item 4 is missing; item 2 appears twice (a later outcome wins and
	// counts once).
	dup := items[2]
	dup.Status, dup.Scores, dup.Error, dup.ErrorType = api.ItemFailed, nil, "x", "T"
	parts := writeParts(t, store, prefix+"work/r/", append(append([]api.BatchItemResult{}, items[:4]...), items[5:]...), 2)
	extra := writeParts(t, store, prefix+"work/r/extra/", []api.BatchItemResult{dup}, 1)
	_, err := a.writeBatchReport(context.Background(), actwire.ReportInput{Name: "n", ReportPrefix: prefix, Parts: append(parts, extra...), Items: 10})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrBatchIncomplete || !strings.Contains(err.Error(), "item 4 of 10 has no outcome") {
		t.Fatalf("error = %v, want %s naming item 4", err, ErrBatchIncomplete)
	}
	whole := writeParts(t, store, prefix+"work/r/whole/", []api.BatchItemResult{items[4]}, 1)
	rep, err := a.writeBatchReport(context.Background(), actwire.ReportInput{Name: "n", ReportPrefix: prefix, Parts: append(append(parts, extra...), whole...), Items: 10})
	if err != nil {
		t.Fatal(err)
	}
	withDup := append([]api.BatchItemResult{}, items...)
	withDup[2] = dup
	if want := recompute(withDup, func(api.BatchItemResult) bool { return true }); !sameAggregate(rep.Overall, want) {
		t.Errorf("overall\n got %+v\nwant %+v", rep.Overall, want)
	}
}

func TestResolveBatchPageSamples(t *testing.T) {
	a, store := batchActivities(t)
	putObject(t, store, "s3://docs/a.txt", []byte("document a"))
	items := []report.ManifestItem{
		{Seq: 0, ID: "x", Document: "s3://docs/a.txt", Question: "q", Answers: []string{"Paris"}},
		{Seq: 1, ID: "y", Document: "s3://docs/missing.txt", Question: "q"},
	}
	var page bytes.Buffer
	for _, it := range items {
		line, _ := json.Marshal(it)
		page.Write(append(line, '\n'))
	}
	work := "s3://memagent/batches/wf/work/r/"
	putObject(t, store, work+PagePath(0), page.Bytes())
	// An earlier batch without samples answered item 0: that is sample 0's
	// answer, and no other sample's.
	info, _ := store.Head(context.Background(), s3store.Location{Bucket: "docs", Key: "a.txt"})
	opts := api.ModelOptions{}.WithDefaults()
	opts.Model = "fake"
	key := AnswerKey("s3://docs/a.txt", info.ETag, "q", opts, a.Templates)
	if got := SampleAnswerKey("s3://docs/a.txt", info.ETag, "q", opts, a.Templates, 0); got != key {
		t.Fatalf("sample 0's key %s is not the item's answer key %s", got, key)
	}
	earlier, _ := json.Marshal(api.DocumentQAResult{WorkflowID: "old/0", Answer: "paris", ResultURI: "s3://memagent/answers/" + key + "/result.json",
		Document: "s3://docs/a.txt", Question: "q", Model: "fake", Options: opts})
	putObject(t, store, "s3://memagent/answers/"+key+"/result.json", earlier)

	out, err := a.resolveBatchPage(context.Background(), actwire.ResolvePageInput{WorkPrefix: work, Page: 0, Samples: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Item 0: sample 0 reused, samples 1 and 2 run; item 1: 3 failures.
	if out.Reused != 1 || out.Failed != 3 || len(out.Run) != 2 {
		t.Fatalf("output = %+v", out)
	}
	prefixes := map[string]bool{}
	for i, r := range out.Run {
		if r.Seq != 0 || r.Sample != i+1 {
			t.Errorf("run %d = seq %d sample %d, want seq 0 sample %d", i, r.Seq, r.Sample, i+1)
		}
		if strings.Contains(r.OutputPrefix, key) {
			t.Errorf("sample %d writes under the first sample's key: %s", r.Sample, r.OutputPrefix)
		}
		prefixes[r.OutputPrefix] = true
	}
	if len(prefixes) != 2 {
		t.Errorf("samples share an output prefix: %v", prefixes)
	}
	var samples []int
	for _, line := range bytes.Split(bytes.TrimSpace(getObject(t, store, out.Part)), []byte{'\n'}) {
		var r api.BatchItemResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, r.Seq*10+r.Sample)
	}
	if want := []int{0, 10, 11, 12}; !slices.Equal(samples, want) {
		t.Errorf("settled seq*10+sample = %v, want %v", samples, want)
	}
	if _, err := a.resolveBatchPage(context.Background(), actwire.ResolvePageInput{WorkPrefix: work, Page: 0, Samples: api.MaxSamples + 1}); err == nil {
		t.Error("samples over the maximum: no error")
	}

	// A whole batch takes no earlier answer: all 3 samples of item 0 run,
	// sample 0 under its key; the missing document still fails at once.
	out, err = a.resolveBatchPage(context.Background(), actwire.ResolvePageInput{WorkPrefix: work, Page: 0, Samples: 3, Whole: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reused != 0 || out.Failed != 3 || len(out.Run) != 3 {
		t.Fatalf("whole: output = %+v, want item 0's 3 samples to run and item 1's to fail", out)
	}
	for i, r := range out.Run {
		if r.Seq != 0 || r.Sample != i || strings.Contains(r.OutputPrefix, key) != (i == 0) {
			t.Errorf("whole: run %d = seq %d sample %d under %s", i, r.Seq, r.Sample, r.OutputPrefix)
		}
	}
}

func TestWriteBatchReportGroups(t *testing.T) {
	a, store := batchActivities(t)
	f1 := func(v float64, sub bool) *api.Scores { return &api.Scores{F1: v, SubstringMatch: sub} }
	gold := []string{"Paris"}
	results := []api.BatchItemResult{
		{Seq: 0, Sample: 0, ID: "a", Status: api.ItemAnswered, GoldAnswers: gold, Scores: f1(1, true), Usage: api.Usage{Calls: 3}},
		{Seq: 0, Sample: 1, ID: "a", Status: api.ItemAnswered, GoldAnswers: gold, Scores: f1(0, false), Usage: api.Usage{Calls: 3}},
		{Seq: 1, Sample: 0, ID: "b", Status: api.ItemFailed, GoldAnswers: gold},
		{Seq: 1, Sample: 1, ID: "b", Status: api.ItemAnswered, GoldAnswers: gold, Scores: f1(0.5, false), Usage: api.Usage{Calls: 2}},
	}
	prefix := "s3://memagent/batches/g/"
	var part bytes.Buffer
	// Out of order, as parts may be.
	for _, i := range []int{3, 0, 2, 1} {
		line, _ := json.Marshal(results[i])
		part.Write(append(line, '\n'))
	}
	putObject(t, store, prefix+"work/r/parts/p.jsonl", part.Bytes())
	in := actwire.ReportInput{Name: "g", WorkflowID: "g", Model: "fake", ReportPrefix: prefix,
		Parts: []string{prefix + "work/r/parts/p.jsonl"}, Items: 2, Samples: 2}
	rep, err := a.writeBatchReport(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Overall.Items != 4 || rep.Overall.Failed != 1 || rep.Overall.Scored != 3 || rep.Samples != 2 {
		t.Errorf("overall = %+v, samples %d", rep.Overall, rep.Samples)
	}
	want := api.GroupAggregate{Items: 2, Samples: 2, Scored: 2, MeanSubstringMatch: 0.25, BestSubstringMatch: 0.5,
		MeanF1: (0.5 + 0.5) / 2, BestF1: (1 + 0.5) / 2}
	if rep.Groups == nil || *rep.Groups != want {
		t.Errorf("groups = %+v, want %+v", rep.Groups, want)
	}
	var lines []api.GroupResult
	for _, line := range bytes.Split(bytes.TrimSpace(getObject(t, store, rep.GroupsURI)), []byte{'\n'}) {
		var g api.GroupResult
		if err := json.Unmarshal(line, &g); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, g)
	}
	if len(lines) != 2 || lines[0].ID != "a" || lines[0].MeanF1 != 0.5 || lines[0].BestF1 != 1 || lines[0].Usage.Calls != 6 ||
		lines[1].Failed != 1 || lines[1].Scored != 1 || lines[1].MeanF1 != 0.5 {
		t.Errorf("groups.jsonl = %+v", lines)
	}
	var order []int
	for _, line := range bytes.Split(bytes.TrimSpace(getObject(t, store, rep.ResultsURI)), []byte{'\n'}) {
		var r api.BatchItemResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		order = append(order, r.Seq*10+r.Sample)
	}
	if want := []int{0, 1, 10, 11}; !slices.Equal(order, want) {
		t.Errorf("results.jsonl seq*10+sample = %v, want %v", order, want)
	}
	rows, err := csv.NewReader(bytes.NewReader(getObject(t, store, rep.CSVURI))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if rows[0][1] != "sample" || rows[2][1] != "1" {
		t.Errorf("CSV header %v, row 2 %v: want a sample column", rows[0][:3], rows[2][:3])
	}

	// A missing sample fails the report, naming it.
	in.Parts = []string{prefix + "work/r/parts/p.jsonl"}
	in.Samples = 3
	if _, err := a.writeBatchReport(context.Background(), in); err == nil || !strings.Contains(err.Error(), "sample 2 of item 0") {
		t.Errorf("a missing sample: err = %v", err)
	}
}

// TestCacheAnswer: a batch's answer goes into the cache as a copy of its
// child's result.json, once (the first entry stays); a location outside
// the cache, or a result outside the worker's runs/ area, is refused.
func TestCacheAnswer(t *testing.T) {
	ctx := context.Background()
	store := activitiestest.NewStore()
	a := &Activities{Bucket: "memagent", Store: store}
	put := func(uri, body string) {
		t.Helper()
		loc, _ := s3store.ParseURI(uri)
		if err := store.Put(ctx, loc, []byte(body), "application/json"); err != nil {
			t.Fatal(err)
		}
	}
	put("s3://memagent/runs/b/0/first/result.json", `{"answer":"first"}`)
	put("s3://memagent/runs/c/0/first/result.json", `{"answer":"second"}`)
	put("s3://memagent/team/result.json", `{"answer":"forged"}`)
	entry := "s3://memagent/answers/k1/"
	if err := a.cacheAnswer(ctx, actwire.AnswerEntry{Prefix: entry, ResultURI: "s3://memagent/runs/b/0/first/result.json"}); err != nil {
		t.Fatal(err)
	}
	if err := a.cacheAnswer(ctx, actwire.AnswerEntry{Prefix: entry, ResultURI: "s3://memagent/runs/c/0/first/result.json"}); err != nil {
		t.Fatal(err)
	}
	if got := string(store.Object(s3store.Location{Bucket: "memagent", Key: "answers/k1/result.json"})); got != `{"answer":"first"}` {
		t.Errorf("cache entry %q, want the first batch's answer", got)
	}
	for _, e := range []actwire.AnswerEntry{
		{Prefix: "s3://memagent/team/", ResultURI: "s3://memagent/runs/b/0/first/result.json"},
		{Prefix: "s3://memagent/answers/k2/x/", ResultURI: "s3://memagent/runs/b/0/first/result.json"},
		{Prefix: "s3://memagent/answers/k2/", ResultURI: "s3://memagent/team/result.json"},
	} {
		assertType(t, a.cacheAnswer(ctx, e), api.ErrBadInput)
	}
	if store.Object(s3store.Location{Bucket: "memagent", Key: "answers/k2/result.json"}) != nil {
		t.Error("a refused entry was written")
	}
	// A result that is gone leaves no entry and no error: the item's
	// outcome stands.
	if err := a.cacheAnswer(ctx, actwire.AnswerEntry{Prefix: "s3://memagent/answers/k3/", ResultURI: "s3://memagent/runs/gone/result.json"}); err != nil {
		t.Errorf("a result that is gone: %v", err)
	}
}
