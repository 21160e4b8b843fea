package desk

import (
	"reflect"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/signoff"
)

// emailRow is a review row grounded on the part of a mailbox cited as
// label.
func emailRow(cell, doc, label string) signoff.Row {
	return signoff.Row{Cell: cell, Question: "q " + cell, Document: "s3://docs/review.mbox",
		Grounding: &api.Grounding{Status: api.GroundingVerbatim, Document: doc,
			Pages: &api.PageRef{Unit: api.UnitMessage, First: 3, Last: 3, Label: label}}}
}

// TestFamilies: a review's cells group by the message their answers are
// grounded on (its text or an attachment's page), per corpus document; a
// cell grounded on a PDF's page or not found is in no family; a member
// decided on its own at the level is kept by a family decision, one
// decided by an earlier family decision is decided again.
func TestFamilies(t *testing.T) {
	rows := []signoff.Row{
		emailRow("q1", "", `msg 12 "Re: Lease"`),
		emailRow("q2", "", `msg 12 "Re: Lease" › lease.pdf p. 4`),
		emailRow("q3", "", `msg 3 "Scan"`),
		emailRow("q4", "", `msg 12 "Re: Lease" › terms.docx § Clause 3: Payment`),
		{Cell: "q5", Grounding: &api.Grounding{Status: api.GroundingVerbatim, Pages: &api.PageRef{Unit: api.UnitPage, First: 4, Last: 4}}},
		{Cell: "q6", Grounding: &api.Grounding{Status: api.GroundingNotFound}},
		emailRow("q7", "s3://docs/archive.mbox", `msg 12 "Re: Lease"`),
	}
	own := &api.Decision{Level: 1, Decision: api.DecisionRejected, Reviewer: "ann", Reason: "wrong clause"}
	fam := &api.Decision{Level: 1, Decision: api.DecisionAccepted, Reviewer: "bob", Comment: familyComment(familyKey{Message: `msg 12 "Re: Lease"`}, "")}
	g := &api.SignOffGrid{Cells: []api.SignOffCell{
		{ID: "q1", Version: 2, Status: api.DecisionAccepted, Level1: fam},
		{ID: "q2", Version: 1, Status: api.DecisionRejected, Level1: own},
		{ID: "q3"}, {ID: "q4"}, {ID: "q5"}, {ID: "q6"}, {ID: "q7"},
	}}
	got := families(g, rows, 1)
	type member struct {
		cell, part    string
		byFamily, own bool
	}
	want := []struct {
		key     familyKey
		members []member
	}{
		{familyKey{"s3://docs/review.mbox", `msg 12 "Re: Lease"`}, []member{{"q1", "", true, false}, {"q2", "lease.pdf p. 4", false, true}, {"q4", "terms.docx § Clause 3: Payment", false, false}}},
		{familyKey{"s3://docs/review.mbox", `msg 3 "Scan"`}, []member{{"q3", "", false, false}}},
		{familyKey{"s3://docs/archive.mbox", `msg 12 "Re: Lease"`}, []member{{"q7", "", false, false}}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d families %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].familyKey != w.key {
			t.Errorf("family %d: %+v, want %+v", i, got[i].familyKey, w.key)
		}
		var ms []member
		for _, m := range got[i].Members {
			ms = append(ms, member{m.Cell, m.Part, m.ByFamily, m.Own})
		}
		if !reflect.DeepEqual(ms, w.members) {
			t.Errorf("family %s: members %+v, want %+v", w.key.Message, ms, w.members)
		}
	}
	decide, kept := familyPlan(got[0])
	var ids []string
	for _, m := range decide {
		ids = append(ids, m.Cell)
	}
	if !reflect.DeepEqual(ids, []string{"q1", "q4"}) || len(kept) != 1 || kept[0].Cell != "q2" {
		t.Errorf("a family decision decides %v and keeps %+v; want q1 and q4 decided, q2 (decided on its own) kept", ids, kept)
	}
	// At level 2 no member has a decision of its own yet.
	if decide, kept := familyPlan(families(g, rows, 2)[0]); len(decide) != 3 || len(kept) != 0 {
		t.Errorf("level 2: %d decided, %d kept; want all 3 decided", len(decide), len(kept))
	}
	if c := familyComment(familyKey{"s3://docs/archive.mbox", `msg 12 "Re: Lease"`}, " all privileged "); c != `[family] msg 12 "Re: Lease" of archive.mbox: all privileged` {
		t.Errorf("comment %q", c)
	}
}
