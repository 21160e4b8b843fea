package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestMarkBatchState: the state sentence of a gated report's page is
// replaced, escaped, and nothing else of the page changes; a page with no
// state is refused.
func TestMarkBatchState(t *testing.T) {
	var page bytes.Buffer
	if err := WriteBatchHTML(&page, BatchPage{Title: "t", State: "Provisional: wait", Facts: [][2]string{{"Batch", "b"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := MarkBatchState(page.Bytes(), "Validation failed: <b> & co")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(page.String(), "Provisional: wait", "Validation failed: &lt;b&gt; &amp; co", 1)
	if string(got) != want {
		t.Errorf("marked page:\n%s\nwant:\n%s", got, want)
	}
	page.Reset()
	if err := WriteBatchHTML(&page, BatchPage{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "memagent-report-state") {
		t.Error("a page with no gate shows a state")
	}
	if _, err := MarkBatchState(page.Bytes(), "Final"); err == nil {
		t.Error("a page with no state was marked")
	}
}
