package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/actwire"
)

// TestExpandManifestGolden pins what expandManifest returns and writes
// (every page and context, in order, with content types) for manifests
// good and bad: samples shrinking the pages, MemAgent contexts, a
// dated prefix, each kind of manifest error and each bound on the input.
func TestExpandManifestGolden(t *testing.T) {
	lines := func(n int, line func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(line(i) + "\n")
		}
		return b.String()
	}
	good := lines(9, func(i int) string {
		return fmt.Sprintf(`{"id": "x%d", "document": "s3://docs/d%d.txt", "question": "q%d", "answers": ["a%d"], "labels": {"k": "v%d"}}`, i, i%2, i, i, i%3)
	})
	memagent, _ := json.Marshal([]map[string]any{
		{"_id": 1, "context": "First context.", "input": "q1", "answers": []string{"a"}, "length": 1000},
		{"_id": 2, "context": "First context.", "input": "q2", "answers": []string{"b"}, "length": 1000},
		{"_id": 3, "context": "Second context.", "input": "q3", "length": 2000},
	})
	someBad := lines(8, func(i int) string {
		if i%3 == 1 {
			return `{"document": "s3://docs/d.txt"}`
		}
		return fmt.Sprintf(`{"document": "s3://docs/d.txt", "question": "q%d"}`, i)
	})
	manyBad := lines(25, func(i int) string { return `{"document": "file.txt", "question": "q"}` })
	exactlyBad := lines(10, func(i int) string { return `{"document": "file.txt", "question": "q"}` })
	manifests := map[string]string{"good.jsonl": good, "eval.json": string(memagent), "some-bad.jsonl": someBad,
		"many-bad.jsonl": manyBad, "ten-bad.jsonl": exactlyBad, "empty.jsonl": "", "garbage.jsonl": "{not json\n"}
	var got strings.Builder
	for _, tc := range []struct {
		name string
		in   actwire.ExpandInput
	}{
		{"pages", actwire.ExpandInput{Manifest: "s3://in/good.jsonl", PageSize: 4}},
		{"samples", actwire.ExpandInput{Manifest: "s3://in/good.jsonl", PageSize: 4, Samples: 3}},
		{"default page size, report prefix", actwire.ExpandInput{Manifest: "s3://in/good.jsonl", ReportPrefix: "s3://memagent/reports/x"}},
		{"memagent, dated", actwire.ExpandInput{Manifest: "s3://in/eval.json", Dated: "2025-01-02T030405Z"}},
		{"some bad items", actwire.ExpandInput{Manifest: "s3://in/some-bad.jsonl"}},
		{"many bad items", actwire.ExpandInput{Manifest: "s3://in/many-bad.jsonl"}},
		{"ten bad items", actwire.ExpandInput{Manifest: "s3://in/ten-bad.jsonl"}},
		{"empty", actwire.ExpandInput{Manifest: "s3://in/empty.jsonl"}},
		{"garbage", actwire.ExpandInput{Manifest: "s3://in/garbage.jsonl"}},
		{"missing", actwire.ExpandInput{Manifest: "s3://in/missing.jsonl"}},
		{"bad uri", actwire.ExpandInput{Manifest: "in/m.jsonl"}},
		{"page size over", actwire.ExpandInput{Manifest: "s3://in/good.jsonl", PageSize: maxPageSize + 1}},
		{"page size negative", actwire.ExpandInput{Manifest: "s3://in/good.jsonl", PageSize: -1}},
		{"samples over", actwire.ExpandInput{Manifest: "s3://in/good.jsonl", Samples: 1000}},
		{"bad report prefix", actwire.ExpandInput{Manifest: "s3://in/good.jsonl", ReportPrefix: "memagent/x"}},
	} {
		a, mem := batchActivities(t)
		for name, data := range manifests {
			putObject(t, mem, "s3://in/"+name, []byte(data))
		}
		store := &recordingStore{Store: mem}
		a.Store = store
		tc.in.WorkflowID, tc.in.RunKey = "wf", "r1"
		out, err := a.expandManifest(context.Background(), tc.in)
		fmt.Fprintf(&got, "##### %s\n", tc.name)
		if err != nil {
			fmt.Fprintf(&got, "error: %v\n", err)
		} else {
			j, _ := json.Marshal(out)
			fmt.Fprintf(&got, "output: %s\n", j)
		}
		got.Write(store.transcript.Bytes())
	}
	checkGolden(t, "expand/manifests.golden", []byte(got.String()))
}
