package report

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// readManifest reads every item and every error of a manifest.
func readManifest(t *testing.T, text, format string) ([]ManifestItem, []string, error) {
	t.Helper()
	mr, err := NewManifestReader(strings.NewReader(text), format)
	if err != nil {
		return nil, nil, err
	}
	var items []ManifestItem
	var errs []string
	for {
		it, err := mr.Next()
		var me *ManifestError
		switch {
		case err == io.EOF:
			return items, errs, nil
		case errors.As(err, &me):
			errs = append(errs, me.Error())
		case err != nil:
			return items, errs, err
		default:
			items = append(items, it)
		}
	}
}

func TestManifestJSONL(t *testing.T) {
	text := `{"id": "a", "document": "s3://b/doc1.txt", "question": "Who?", "answers": ["x", "y"], "labels": {"length": 8000, "task": "niah", "hard": true}}

{"document": "s3://b/doc2.txt", "question": "What?", "answers": "z"}
{"id": 7, "document": " s3://b/doc3.txt ", "question": "When?"}
`
	items, errs, err := readManifest(t, text, "")
	if err != nil || len(errs) > 0 {
		t.Fatalf("err %v, item errors %v", err, errs)
	}
	want := []ManifestItem{
		{Seq: 0, Line: 1, ID: "a", Document: "s3://b/doc1.txt", Question: "Who?", Answers: []string{"x", "y"},
			Labels: map[string]string{"length": "8000", "task": "niah", "hard": "true"}},
		{Seq: 1, Line: 3, ID: "3", Document: "s3://b/doc2.txt", Question: "What?", Answers: []string{"z"}},
		{Seq: 2, Line: 4, ID: "7", Document: "s3://b/doc3.txt", Question: "When?"},
	}
	if !reflect.DeepEqual(items, want) {
		t.Errorf("items\n got %+v\nwant %+v", items, want)
	}
}

func TestManifestMemAgent(t *testing.T) {
	text := ` [
 {"_id": "q1", "id": "ignored", "context": "Doc one text.", "input": "Who?", "answers": ["x"], "length": 8000, "task": "hqa", "tokens": 7912, "extra": {"nested": 1}, "list": [1, 2], "none": null},
 {"index": 4, "context": "Doc two.", "input": "What?", "answers": [42]},
 {"context": "Doc one text.", "input": "Again?"}
]
`
	items, errs, err := readManifest(t, text, "")
	if err != nil || len(errs) > 0 {
		t.Fatalf("err %v, item errors %v", err, errs)
	}
	want := []ManifestItem{
		{Seq: 0, Line: 1, ID: "q1", Question: "Who?", Answers: []string{"x"}, Context: "Doc one text.",
			Labels: map[string]string{"length": "8000", "task": "hqa", "tokens": "7912"}},
		{Seq: 1, Line: 2, ID: "4", Question: "What?", Answers: []string{"42"}, Context: "Doc two."},
		{Seq: 2, Line: 3, ID: "3", Question: "Again?", Context: "Doc one text."},
	}
	if !reflect.DeepEqual(items, want) {
		t.Errorf("items\n got %+v\nwant %+v", items, want)
	}
}

func TestManifestErrors(t *testing.T) {
	tests := []struct {
		name, format, text string
		// wantItems is how many good items are read; wantErrs the item
		// errors, in order; wantFatal a fatal error's substring.
		wantItems int
		wantErrs  []string
		wantFatal string
	}{
		{name: "missing question", text: `{"document": "s3://b/k"}` + "\n" + `{"document": "s3://b/k", "question": "ok"}`,
			wantItems: 1, wantErrs: []string{`line 1: missing question: set "question"`}},
		{name: "not s3", text: `{"document": "/tmp/doc.txt", "question": "q"}`,
			wantErrs: []string{`line 1: document "/tmp/doc.txt" is not an s3:// URI`}},
		{name: "no key", text: `{"document": "s3://bucket", "question": "q"}`,
			wantErrs: []string{`line 1: document "s3://bucket" names no object`}},
		{name: "missing document", text: `{"question": "q"}`,
			wantErrs: []string{`line 1: missing document`}},
		{name: "duplicate id", text: `{"id": "x", "document": "s3://b/k", "question": "q"}` + "\n\n" + `{"id": "x", "document": "s3://b/k", "question": "q2"}`,
			wantItems: 1, wantErrs: []string{`line 3: duplicate id "x" (first at line 1)`}},
		{name: "default id collides", text: `{"id": "2", "document": "s3://b/k", "question": "q"}` + "\n" + `{"document": "s3://b/k", "question": "q2"}`,
			wantItems: 1, wantErrs: []string{`line 2: duplicate id "2" (first at line 1)`}},
		{name: "bad json line", text: `{"document": "s3://b/k", "question": "q"` + "\n" + `{"document": "s3://b/k", "question": "q"}`,
			wantItems: 1, wantErrs: []string{`line 1: not a JSON object`}},
		{name: "answers not strings", text: `{"document": "s3://b/k", "question": "q", "answers": [{"a": 1}]}`,
			wantErrs: []string{`line 1: answers: want an array of strings`}},
		{name: "label object", text: `{"document": "s3://b/k", "question": "q", "labels": {"k": {"v": 1}}}`,
			wantErrs: []string{`line 1: label "k": want a string, number or boolean`}},
		{name: "long question", text: fmt.Sprintf(`{"document": "s3://b/k", "question": %q}`, strings.Repeat("q", MaxQuestionBytes+1)),
			wantErrs: []string{`line 1: question is 16385 bytes`}},
		{name: "jsonl given an array", format: FormatJSONL, text: `[{"context": "c", "input": "q"}]`,
			wantFatal: `pass format "memagent"`},
		{name: "memagent given lines", format: FormatMemAgent, text: `{"document": "s3://b/k", "question": "q"}`,
			wantFatal: "not a JSON array"},
		{name: "empty", text: " \n\n", wantFatal: "manifest is empty"},
		{name: "neither", text: "id,document,question\n", wantFatal: "want JSON Lines"},
		{name: "memagent missing input", text: `[{"context": "c"}, {"context": "c", "input": "q"}]`,
			wantItems: 1, wantErrs: []string{`item 1: missing question: set "input"`}},
		{name: "memagent missing context", text: `[{"input": "q"}]`,
			wantErrs: []string{`item 1: missing context`}},
		{name: "memagent context not string", text: `[{"context": 5, "input": "q"}, {"context": "c", "input": "q"}]`,
			wantItems: 1, wantErrs: []string{`item 1: context is not a string`}},
		{name: "memagent duplicate", text: `[{"_id": 1, "context": "c", "input": "q"}, {"_id": "1", "context": "c", "input": "q"}]`,
			wantItems: 1, wantErrs: []string{`item 2: duplicate id "1" (first at item 1)`}},
		{name: "memagent not an object", text: `[{"context": "c", "input": "q"}, [1, [2]], 3, {"context": "c", "input": "q"}]`,
			wantItems: 2, wantErrs: []string{`item 2: not a JSON object`, `item 3: not a JSON object`}},
		{name: "memagent truncated", text: `[{"context": "c", "input": "q"}, {"context": "c", "inp`,
			wantItems: 1, wantFatal: "item 2"},
		{name: "memagent trailing data", text: `[{"context": "c", "input": "q"}] {}`,
			wantItems: 1, wantFatal: "unexpected data after the array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, errs, err := readManifest(t, tt.text, tt.format)
			if tt.wantFatal != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantFatal) {
					t.Errorf("fatal error = %v, want one containing %q", err, tt.wantFatal)
				}
			} else if err != nil {
				t.Fatalf("fatal error %v", err)
			}
			if len(items) != tt.wantItems {
				t.Errorf("got %d items, want %d", len(items), tt.wantItems)
			}
			if len(errs) != len(tt.wantErrs) {
				t.Fatalf("item errors %q, want %q", errs, tt.wantErrs)
			}
			for i := range errs {
				if !strings.HasPrefix(errs[i], tt.wantErrs[i]) {
					t.Errorf("item error %d = %q, want prefix %q", i, errs[i], tt.wantErrs[i])
				}
			}
		})
	}
}

func TestManifestLongLine(t *testing.T) {
	text := `{"document": "s3://b/k", "question": "q"}` + "\n" + `{"document": "s3://b/k", "question": "` + strings.Repeat("x", MaxLineBytes) + `"}` + "\n"
	items, _, err := readManifest(t, text, "")
	if err == nil || !strings.Contains(err.Error(), "line 2 is longer than") {
		t.Errorf("err = %v, want line 2 too long", err)
	}
	if len(items) != 1 {
		t.Errorf("got %d items before the long line, want 1", len(items))
	}
}

// countingReader reports how many bytes were read, and the largest single
// read, so a test can tell streaming from loading everything.
type countingReader struct {
	r    io.Reader
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// batchGenMemAgent streams a MemAgent manifest of n items, each with a
// context of size bytes, without building it in memory.
func batchGenMemAgent(n, size int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		ctx := strings.Repeat("w", size)
		fmt.Fprint(pw, "[")
		for i := range n {
			if i > 0 {
				fmt.Fprint(pw, ",")
			}
			fmt.Fprintf(pw, `{"_id": "id%d", "input": "question %d", "context": "%s %d", "answers": ["a%d"], "length": %d}`, i, i, ctx, i, i, size)
		}
		fmt.Fprint(pw, "]")
		pw.Close()
	}()
	return pr
}

func TestManifestMemAgentStreams(t *testing.T) {
	// 64 items of 1 MiB contexts: the reader must hand them out one by
	// one while the source is still being produced.
	const n, size = 64, 1 << 20
	src := &countingReader{r: batchGenMemAgent(n, size)}
	mr, err := NewManifestReader(src, FormatMemAgent)
	if err != nil {
		t.Fatal(err)
	}
	it, err := mr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if it.ID != "id0" || len(it.Context) != size+2 {
		t.Fatalf("first item id %q context %d bytes", it.ID, len(it.Context))
	}
	if src.read > 4*size {
		t.Errorf("read %d bytes to return the first item of a %d-byte manifest: not streaming", src.read, n*size)
	}
	count := 1
	for {
		_, err := mr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		count++
	}
	if count != n {
		t.Errorf("read %d items, want %d", count, n)
	}
}

func TestManifestDocuments(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    []string // the item's documents, when it is good
		wantErr string   // a piece of the item's error, when it is bad
	}{
		{name: "corpus", line: `{"documents": ["s3://b/a.txt", " s3://b/b.pdf "], "question": "Q?"}`,
			want: []string{"s3://b/a.txt", "s3://b/b.pdf"}},
		{name: "one document in a list", line: `{"documents": ["s3://b/a.txt"], "question": "Q?"}`,
			want: []string{"s3://b/a.txt"}},
		{name: "empty list beside a document", line: `{"document": "s3://b/a.txt", "documents": [], "question": "Q?"}`},
		{name: "both", line: `{"document": "s3://b/a.txt", "documents": ["s3://b/b.txt"], "question": "Q?"}`,
			wantErr: "line 1: document and documents are both set"},
		{name: "neither", line: `{"question": "Q?"}`,
			wantErr: `line 1: missing document: set "document" to an s3://bucket/key URI, or "documents"`},
		{name: "empty list", line: `{"documents": [], "question": "Q?"}`,
			wantErr: "line 1: missing document"},
		{name: "not an array", line: `{"documents": "s3://b/a.txt", "question": "Q?"}`,
			wantErr: "line 1: documents: want an array of s3:// URIs"},
		{name: "not strings", line: `{"documents": [1, 2], "question": "Q?"}`,
			wantErr: "line 1: documents: want an array of s3:// URIs"},
		{name: "bad uri", line: `{"documents": ["s3://b/a.txt", "b.txt"], "question": "Q?"}`,
			wantErr: `line 1: documents[1] "b.txt" is not an s3:// URI`},
		{name: "no key", line: `{"documents": ["s3://b/a.txt", "s3://b"], "question": "Q?"}`,
			wantErr: `line 1: documents[1] "s3://b" names no object`},
		{name: "misspelt", line: `{"document": "s3://b/a.txt", "documnets": ["s3://b/b.txt"], "question": "Q?"}`,
			wantErr: `line 1: documnets: unknown field; a line has {"id", "document", "documents",`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, errs, err := readManifest(t, tt.line+"\n", FormatJSONL)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" {
				if len(errs) != 1 || !strings.Contains(errs[0], tt.wantErr) {
					t.Fatalf("errors %q, want one containing %q", errs, tt.wantErr)
				}
				return
			}
			if len(errs) > 0 || len(items) != 1 {
				t.Fatalf("items %+v, errors %q: want one item", items, errs)
			}
			if !reflect.DeepEqual(items[0].Documents, tt.want) {
				t.Errorf("documents %q, want %q", items[0].Documents, tt.want)
			}
		})
	}
}

// TestManifestDocumentsResultsReadBack: a corpus item's results.jsonl line
// (document empty, documents and answer_sources set) reads back as a
// manifest line.
func TestManifestDocumentsResultsReadBack(t *testing.T) {
	line := `{"seq":0,"id":"c","document":"","documents":["s3://b/a.txt","s3://b/b.txt"],"question":"Q?","status":"answered","answer":"x","answer_sources":[{"document":"s3://b/b.txt","name":"b.txt"}],"usage":{"calls":2}}`
	items, errs, err := readManifest(t, line+"\n", "")
	if err != nil || len(errs) > 0 {
		t.Fatalf("err %v, item errors %v", err, errs)
	}
	if want := []string{"s3://b/a.txt", "s3://b/b.txt"}; len(items) != 1 || !reflect.DeepEqual(items[0].Documents, want) || items[0].Document != "" {
		t.Errorf("items %+v, want one with documents %q", items, want)
	}
}

// TestManifestMemAgentMessages pins the exact item and fatal messages of the
// MemAgent array reader, field by field.
func TestManifestMemAgentMessages(t *testing.T) {
	tests := []struct {
		name, text string
		wantItems  int
		wantErrs   []string
		wantFatal  string
	}{
		{name: "input not a string", text: `[{"context": "c", "input": 5}]`,
			wantErrs: []string{"item 1: input is not a string"}},
		{name: "last problem wins", text: `[{"context": "c", "input": 5, "answers": {"a": 1}}, {"context": "c", "input": "q"}]`,
			wantItems: 1, wantErrs: []string{"item 1: answers: want an array of strings"}},
		{name: "id an object", text: `[{"context": "c", "input": "q", "id": {}}]`,
			wantErrs: []string{"item 1: id: want a string, number or boolean"}},
		{name: "index after id is ignored", text: `[{"context": "c", "input": "q", "id": "a", "index": {}}]`,
			wantItems: 1},
		{name: "id after _id is ignored", text: `[{"context": "c", "input": "q", "_id": "a", "id": []}]`,
			wantItems: 1},
		{name: "null context", text: `[{"context": null, "input": "q"}]`,
			wantErrs: []string{`item 1: missing context: set "context" to the document text`}},
		{name: "not an array at all", text: `[`, wantFatal: "manifest: after item 0: the manifest ends in the middle of an item"},
		{name: "bad value", text: `[{"context": "c", "input": tru}]`, wantFatal: "manifest: item 1: invalid JSON at byte 25: invalid character '}' in literal true (expecting 'e')"},
		{name: "bad context", text: `[{"context": "c`, wantFatal: "manifest: item 1: the manifest ends in the middle of an item"},
		{name: "bad key", text: `[{"context": "c", 5: 1}]`, wantFatal: "manifest: item 1: invalid JSON at byte 18: invalid character '5' looking for beginning of object key string"},
		{name: "unclosed object", text: `[{"context": "c", "input": "q"`, wantFatal: "manifest: item 1: the manifest ends in the middle of an item"},
		{name: "unclosed nested array", text: `[[1, [2`, wantFatal: "manifest: item 1: the manifest ends in the middle of an item"},
		{name: "unclosed array", text: `[{"context": "c", "input": "q"}`, wantItems: 1, wantFatal: "manifest: after item 1: the manifest ends in the middle of an item"},
		{name: "bad item start", text: `[}`, wantFatal: "manifest: after item 0: invalid JSON at byte 1: invalid character '}' looking for beginning of value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, errs, err := readManifest(t, tt.text, FormatMemAgent)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantFatal {
				t.Errorf("fatal error = %q, want %q", got, tt.wantFatal)
			}
			if len(items) != tt.wantItems {
				t.Errorf("got %d items, want %d", len(items), tt.wantItems)
			}
			if !reflect.DeepEqual(errs, tt.wantErrs) {
				t.Errorf("item errors %q, want %q", errs, tt.wantErrs)
			}
		})
	}
}
