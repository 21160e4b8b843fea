package report

import (
	"fmt"
	"strconv"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// ChangeKey is what items of two reports match by: the manifest item's id
// and the sample.
func ChangeKey(r api.BatchItemResult) string {
	return strconv.Itoa(r.Sample) + "/" + r.ID
}

// CompareItem says how an item compares with the previous report's item of
// the same id and sample; old is nil when the previous report lacks it,
// cur is nil when this report does (a removed item). Answers compare after
// the scoring normalisation (memagent.Normalize), so that "Paris." and
// "paris" are the same answer; an answer_found that flips is a change too.
// An item failed on either side is ChangeFailed: there are not two answers
// to compare.
func CompareItem(old, cur *api.BatchItemResult) api.ItemChange {
	var c api.ItemChange
	src := cur
	if src == nil {
		src = old
	}
	if src == nil {
		return c
	}
	c.ID, c.Sample, c.Document, c.Documents, c.Question = src.ID, src.Sample, src.Document, src.Documents, src.Question
	if cur != nil {
		seq := cur.Seq
		c.Seq, c.NewStatus, c.NewAnswer, c.NewAnswerFound = &seq, cur.Status, cur.Answer, cur.AnswerFound
	}
	if old != nil {
		seq := old.Seq
		c.PreviousSeq, c.OldStatus, c.OldAnswer, c.OldAnswerFound = &seq, old.Status, old.Answer, old.AnswerFound
	}
	switch {
	case old == nil:
		c.Status = api.ChangeNew
	case cur == nil:
		c.Status = api.ChangeRemoved
	case old.Status == api.ItemFailed || cur.Status == api.ItemFailed:
		c.Status = api.ChangeFailed
	case old.AnswerFound != cur.AnswerFound:
		c.Status, c.FoundFlipped = api.ChangeChanged, true
	case memagent.Normalize(old.Answer) != memagent.Normalize(cur.Answer):
		c.Status = api.ChangeChanged
	default:
		c.Status = api.ChangeUnchanged
	}
	return c
}

// CountChange adds one item's comparison to the summary's counts.
func CountChange(s *api.ChangeSummary, c api.ItemChange) {
	switch c.Status {
	case api.ChangeNew:
		s.New++
	case api.ChangeChanged:
		s.Changed++
		if c.FoundFlipped {
			s.FoundFlipped++
		}
	case api.ChangeUnchanged:
		s.Unchanged++
	case api.ChangeRemoved:
		s.Removed++
	case api.ChangeFailed:
		s.Failed++
	}
}

// maxChangeRows bounds the rows of each table of the page's "What changed"
// section; changes.json has every item.
const maxChangeRows = 1000

// BatchChanges is the "What changed" section of the batch report's page.
type BatchChanges struct {
	Title string
	// Note says what the counts are and where the rest is.
	Note   string
	Tables []BatchTable
}

// ChangesSection collects the "What changed since <date>" section of the
// page: the counts, then the changed items with their old and new answers
// side by side, the new, removed and failed ones (each table at most
// maxChangeRows rows). Feed it with Add in report order.
type ChangesSection struct {
	changed, added, removed, failed BatchTable
}

// NewChangesSection returns an empty section.
func NewChangesSection() *ChangesSection {
	return &ChangesSection{
		changed: BatchTable{Header: []string{"id", "document", "question", "previous answer", "answer", "answer found"}},
		added:   BatchTable{Header: []string{"id", "document", "question", "answer"}},
		removed: BatchTable{Header: []string{"id", "document", "question", "previous answer"}},
		failed:  BatchTable{Header: []string{"id", "document", "question", "previous", "now"}},
	}
}

// Add adds one item's comparison.
func (s *ChangesSection) Add(c api.ItemChange) {
	id := c.ID
	c.Document = api.DocumentSubject(c.Document, c.Documents)
	if c.Sample > 0 {
		id = fmt.Sprintf("%s #%d", c.ID, c.Sample)
	}
	row := func(t *BatchTable, cells ...string) {
		if len(t.Rows) < maxChangeRows {
			t.Rows = append(t.Rows, cells)
		}
	}
	switch c.Status {
	case api.ChangeChanged:
		found := "same"
		if c.FoundFlipped {
			found = fmt.Sprintf("%t → %t", c.OldAnswerFound, c.NewAnswerFound)
		}
		row(&s.changed, id, c.Document, c.Question, c.OldAnswer, c.NewAnswer, found)
	case api.ChangeNew:
		row(&s.added, id, c.Document, c.Question, c.NewAnswer)
	case api.ChangeRemoved:
		row(&s.removed, id, c.Document, c.Question, c.OldAnswer)
	case api.ChangeFailed:
		row(&s.failed, id, c.Document, c.Question, orStatus(c.OldStatus, c.OldAnswer), orStatus(c.NewStatus, c.NewAnswer))
	}
}

func orStatus(status, answer string) string {
	if status == api.ItemFailed {
		return "failed"
	}
	return answer
}

// Section is the page's section for the summary sum.
func (s *ChangesSection) Section(sum api.ChangeSummary) *BatchChanges {
	b := &BatchChanges{Title: "What changed"}
	if sum.PreviousReport == "" {
		b.Note = fmt.Sprintf("No previous report to compare with: all %d items are new.", sum.New)
		return b
	}
	b.Title = "What changed since " + sum.Since.UTC().Format(time.RFC3339)
	b.Note = fmt.Sprintf("Compared with %s, item by item (manifest id and sample), answers after the scoring normalisation: %d new, %d changed (%d with answer found flipped), %d unchanged, %d removed, %d failed in one of the two. %s lists every item.",
		sum.PreviousReport, sum.New, sum.Changed, sum.FoundFlipped, sum.Unchanged, sum.Removed, sum.Failed, api.ReportChangesName)
	for _, t := range []struct {
		t     BatchTable
		title string
		n     int
	}{{s.changed, "Changed", sum.Changed}, {s.added, "New", sum.New}, {s.removed, "Removed", sum.Removed}, {s.failed, "Failed in either report", sum.Failed}} {
		if t.n == 0 {
			continue
		}
		t.t.Title = fmt.Sprintf("%s (%d)", t.title, t.n)
		if t.n > len(t.t.Rows) {
			t.t.Note = fmt.Sprintf("The first %d; %s has them all.", len(t.t.Rows), api.ReportChangesName)
		}
		b.Tables = append(b.Tables, t.t)
	}
	return b
}
