package desk

import (
	"bytes"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
)

// TestValidationCells: the desk says why a reviewer cannot decide a cell
// (revealed in a blind validation, decided already, signed off) and
// shows each cell's document from its cited page, page 1 for one that
// cites none.
func TestValidationCells(t *testing.T) {
	vw := &api.ValidationView{Blind: true, Cells: []api.ValidationCell{
		{ID: "1", Document: "s3://b/docs/a.PDF", Stratum: api.StratumAnswered, Page: 3},
		{ID: "2", Document: "s3://b/docs/b.pdf", Stratum: api.StratumAnswered, Page: 2, Revealed: true, ModelAnswer: "x"},
		{ID: "3", Document: "s3://b/docs/c.txt", Stratum: api.StratumNotFound, Decision: &api.ValidationEntry{Reviewer: "carol"}},
		{ID: "4", Document: "s3://b/docs/d.pdf", Stratum: api.StratumNotFound, Decision: &api.ValidationEntry{Reviewer: "dave"}},
	}}
	got := cellsFor(vw, "carol")
	want := []validationCell{
		{ID: "1", DocumentName: "a.PDF", PDF: true, FirstPage: 3},
		{ID: "2", DocumentName: "b.pdf", PDF: true, FirstPage: 2, CannotDecide: "you revealed the model's answer"},
		{ID: "3", DocumentName: "c.txt", FirstPage: 1, CannotDecide: "you decided this cell"},
		{ID: "4", DocumentName: "d.pdf", PDF: true, FirstPage: 1},
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.DocumentName != w.DocumentName || g.PDF != w.PDF || g.FirstPage != w.FirstPage ||
			!strings.HasPrefix(g.CannotDecide, w.CannotDecide) || (w.CannotDecide == "") != (g.CannotDecide == "") {
			t.Errorf("cell %s: %+v, want %+v", w.ID, g, w)
		}
	}
	vw.Blind = false
	if c := cellsFor(vw, "carol")[1]; c.CannotDecide != "" {
		t.Errorf("not blind, a revealed cell: %q, want it decidable", c.CannotDecide)
	}
	vw.Finished = &api.ValidationEntry{Reviewer: "erin"}
	for _, c := range cellsFor(vw, "dave") {
		if !strings.Contains(c.CannotDecide, "signed off by erin") {
			t.Errorf("signed off, cell %s: %q", c.ID, c.CannotDecide)
		}
	}
	if validationID("b") != "b.validate" || validationID("b.validate") != "b.validate" {
		t.Error("validationID does not take a batch's id and a validation's alike")
	}
}

// TestValidationTemplates: the page and the index's list render, and the
// index lists a running validation with its progress.
func TestValidationTemplates(t *testing.T) {
	var page bytes.Buffer
	if err := templates.ExecuteTemplate(&page, "validation.html", map[string]any{"Reviewer": "carol", "CSRF": "tok", "ID": "b.validate"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`data-id="b.validate"`, `/static/validation.js`, `id="reveal"`, `content="tok"`} {
		if !strings.Contains(page.String(), s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	var list bytes.Buffer
	if err := templates.ExecuteTemplate(&list, "validations", map[string]any{"List": []runningValidation{{ID: "b.validate", Subject: "b", Progress: "3/40 decided"}}}); err != nil {
		t.Fatal(err)
	}
	if s := list.String(); !strings.Contains(s, `href="/validation?id=b.validate"`) || !strings.Contains(s, "3/40 decided") {
		t.Errorf("the list: %s", s)
	}
}
