package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
)

func TestCompareItem(t *testing.T) {
	item := func(seq int, status, answer string, found bool) *api.BatchItemResult {
		return &api.BatchItemResult{Seq: seq, ID: "q1", Document: "s3://b/d.txt", Question: "Who?", Status: status, Answer: answer, AnswerFound: found}
	}
	tests := []struct {
		name        string
		old, cur    *api.BatchItemResult
		wantStatus  string
		wantFlipped bool
	}{
		{"same answer", item(0, api.ItemAnswered, "Paris", true), item(0, api.ItemAnswered, "Paris", true), api.ChangeUnchanged, false},
		{"same after normalisation", item(0, api.ItemAnswered, "The  Paris.", true), item(3, api.ItemReused, "paris", true), api.ChangeUnchanged, false},
		{"different answer", item(0, api.ItemAnswered, "Paris", true), item(0, api.ItemAnswered, "Lyon", true), api.ChangeChanged, false},
		{"answer found flips", item(0, api.ItemAnswered, "", false), item(0, api.ItemAnswered, "", true), api.ChangeChanged, true},
		{"found flips with the answer", item(0, api.ItemAnswered, "Paris", true), item(0, api.ItemAnswered, "unknown", false), api.ChangeChanged, true},
		{"new", nil, item(0, api.ItemAnswered, "Paris", true), api.ChangeNew, false},
		{"removed", item(4, api.ItemAnswered, "Paris", true), nil, api.ChangeRemoved, false},
		{"failed now", item(0, api.ItemAnswered, "Paris", true), item(0, api.ItemFailed, "", false), api.ChangeFailed, false},
		{"failed before", item(0, api.ItemFailed, "", false), item(0, api.ItemAnswered, "Paris", true), api.ChangeFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := CompareItem(tt.old, tt.cur)
			if c.Status != tt.wantStatus || c.FoundFlipped != tt.wantFlipped {
				t.Errorf("status %q flipped %v, want %q %v", c.Status, c.FoundFlipped, tt.wantStatus, tt.wantFlipped)
			}
			if c.ID != "q1" || c.Document != "s3://b/d.txt" || c.Question != "Who?" {
				t.Errorf("item = %q %q %q, want the item's id, document and question", c.ID, c.Document, c.Question)
			}
			if (tt.cur != nil) != (c.Seq != nil) || (tt.old != nil) != (c.PreviousSeq != nil) {
				t.Errorf("seq %v previous seq %v: want each set when its report has the item", c.Seq, c.PreviousSeq)
			}
			if tt.old != nil && (c.OldAnswer != tt.old.Answer || *c.PreviousSeq != tt.old.Seq) {
				t.Errorf("old answer %q at %d, want %q at %d", c.OldAnswer, *c.PreviousSeq, tt.old.Answer, tt.old.Seq)
			}
			if tt.cur != nil && (c.NewAnswer != tt.cur.Answer || *c.Seq != tt.cur.Seq) {
				t.Errorf("new answer %q at %d, want %q at %d", c.NewAnswer, *c.Seq, tt.cur.Answer, tt.cur.Seq)
			}
		})
	}
}

func TestChangeKey(t *testing.T) {
	a := api.BatchItemResult{ID: "q/1", Sample: 0}
	b := api.BatchItemResult{ID: "1", Sample: 0}
	c := api.BatchItemResult{ID: "q/1", Sample: 1}
	if ChangeKey(a) == ChangeKey(b) || ChangeKey(a) == ChangeKey(c) {
		t.Errorf("keys %q %q %q must differ", ChangeKey(a), ChangeKey(b), ChangeKey(c))
	}
	if ChangeKey(a) != ChangeKey(api.BatchItemResult{ID: "q/1", Seq: 9}) {
		t.Error("the key depends on seq: items moved in the manifest would not match")
	}
}

func TestCountChange(t *testing.T) {
	var s api.ChangeSummary
	for _, c := range []api.ItemChange{
		{Status: api.ChangeNew}, {Status: api.ChangeChanged, FoundFlipped: true}, {Status: api.ChangeChanged},
		{Status: api.ChangeUnchanged}, {Status: api.ChangeUnchanged}, {Status: api.ChangeUnchanged},
		{Status: api.ChangeRemoved}, {Status: api.ChangeFailed},
	} {
		CountChange(&s, c)
	}
	want := api.ChangeSummary{New: 1, Changed: 2, FoundFlipped: 1, Unchanged: 3, Removed: 1, Failed: 1}
	if s != want {
		t.Errorf("summary = %+v, want %+v", s, want)
	}
	if s.Differences() != 4 {
		t.Errorf("differences = %d, want 4 (new + changed + removed)", s.Differences())
	}
}

// TestChangesSectionEscapes: the section shows the old and new answers side
// by side, escaped like every other text of the page.
func TestChangesSectionEscapes(t *testing.T) {
	sec := NewChangesSection()
	var sum api.ChangeSummary
	for _, c := range []api.ItemChange{
		CompareItem(&api.BatchItemResult{ID: "a", Status: api.ItemAnswered, Answer: "old " + batchHostile, AnswerFound: true},
			&api.BatchItemResult{ID: "a", Question: "Q " + batchHostile, Status: api.ItemAnswered, Answer: "new answer", AnswerFound: true}),
		CompareItem(nil, &api.BatchItemResult{ID: "b", Status: api.ItemAnswered, Answer: "fresh"}),
		CompareItem(&api.BatchItemResult{ID: "c", Status: api.ItemAnswered, Answer: "gone"}, nil),
		CompareItem(&api.BatchItemResult{ID: "d", Status: api.ItemAnswered, Answer: "same"}, &api.BatchItemResult{ID: "d", Status: api.ItemAnswered, Answer: "Same."}),
	} {
		sec.Add(c)
		CountChange(&sum, c)
	}
	sum.PreviousReport = "s3://b/reports/n/2026-01-01T020000Z/report.json"
	sum.Since = time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	var page bytes.Buffer
	if err := WriteBatchHTML(&page, BatchPage{Title: "t", Changes: sec.Section(sum)}); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if strings.Contains(html, "<script>") {
		t.Error("an answer or question was not escaped")
	}
	for _, want := range []string{"What changed since 2026-01-01T02:00:00Z", "1 new, 1 changed", "1 unchanged, 1 removed",
		"Changed (1)", "New (1)", "Removed (1)", "old &lt;script&gt;", "<td>new answer</td>", "<td>gone</td>"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(html, "Same.") {
		t.Error("an unchanged item is listed on the page")
	}

	none := NewChangesSection().Section(api.ChangeSummary{New: 3})
	if none.Title != "What changed" || !strings.Contains(none.Note, "all 3 items are new") || len(none.Tables) != 0 {
		t.Errorf("without a previous report: %+v", none)
	}
}
