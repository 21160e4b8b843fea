package activities

import (
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/signoff"
)

// TestDrawValidationPage: a sampled cell carries the page the desk shows
// first, the answer's cited page of its own document; none for a cell
// found nowhere, cited by section, or cited in another corpus member.
func TestDrawValidationPage(t *testing.T) {
	cited := func(doc string, unit string, first int) *api.Grounding {
		return &api.Grounding{Status: api.GroundingVerbatim, Document: doc, Pages: &api.PageRef{Unit: unit, First: first, Last: first}}
	}
	rows := []signoff.Row{
		{Cell: "1", Question: "q?", Document: "s3://b/a.pdf", AnswerFound: true, ModelAnswer: "x", AnswerPages: "p. 3", Grounding: cited("", api.UnitPage, 3)},
		{Cell: "2", Question: "q?", Document: "s3://b/b.pdf", AnswerFound: true, ModelAnswer: "x", Grounding: cited("", api.UnitSection, 2)},
		{Cell: "3", Question: "q?", Document: "s3://b/c.pdf", AnswerFound: true, ModelAnswer: "x", Grounding: cited("s3://b/member.pdf", api.UnitPage, 5)},
		{Cell: "4", Question: "q?", Document: "s3://b/d.pdf"},
	}
	_, _, cells, err := drawValidation(rows, actwire.LoadValidationInput{Seed: "s", Confidence: 0.95, SampleSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"1": 3, "2": 0, "3": 0, "4": 0}
	if len(cells) != 2 {
		t.Fatalf("%d cells, want one a stratum", len(cells))
	}
	for _, c := range cells {
		if c.Page != want[c.ID] {
			t.Errorf("cell %s: page %d, want %d", c.ID, c.Page, want[c.ID])
		}
	}
	_, _, cells, err = drawValidation(rows, actwire.LoadValidationInput{Seed: "s", Confidence: 0.95, Margin: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if c.Page != want[c.ID] {
			t.Errorf("whole sample: cell %s: page %d, want %d", c.ID, c.Page, want[c.ID])
		}
	}
}
