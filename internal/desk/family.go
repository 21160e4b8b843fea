package desk

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/signoff"
)

// Families of a review over email (issue 54). A review's cells are its
// questions; a cell whose answer was found in a mailbox is grounded on a
// part of one message's family, its citation the family's label
// (`msg 12 "Re: Lease" › lease.pdf p. 4`). The desk groups the cells by
// the message they cite (and, in a corpus, the document it is in): a
// family's members are the cells grounded on the message's text or on
// one of its attachments.
//
// A decision on a family is a decision on each of its members, sent to
// the sign-off as the cell's own Update (so the sign-off's audit trail
// keeps one entry a cell, with the reviewer, the level and the version
// decided on), its comment opened by familyMark and the family's label:
// that is how a member decided by its family is told from one decided on
// its own. A member decided on its own at the level is left as it is by
// a family decision; one decided by an earlier family decision takes the
// new one. A family is accepted or rejected, never edited: an edited
// answer is a question's own.

// familyMark opens the comment of a decision made on a family.
const familyMark = "[family] "

// familyKey names a family: the document its message is in and the
// message's label (`msg 12 "Re: Lease"`).
type familyKey struct {
	Document string `json:"document"`
	Message  string `json:"message"`
}

// familyOf is the family a row's grounding cites and the member it is
// grounded on ("" for the message's own text, "lease.pdf p. 4" for an
// attachment's page); false when the row is not grounded on email.
func familyOf(r signoff.Row) (familyKey, string, bool) {
	gr := r.Grounding
	if !gr.Found() || gr.Pages == nil || gr.Pages.Unit != api.UnitMessage || !strings.HasPrefix(gr.Pages.Label, "msg ") {
		return familyKey{}, "", false
	}
	msg, member, _ := strings.Cut(gr.Pages.Label, " › ")
	return familyKey{Document: r.EvidenceDocument(), Message: msg}, member, true
}

// familyMember is one cell of a family.
type familyMember struct {
	Cell     string `json:"cell"`
	Question string `json:"question"`
	// Part is what of the family the cell is grounded on: "" for the
	// message's text, else the attachment and its page.
	Part    string `json:"part,omitempty"`
	Version int    `json:"version"`
	Decided string `json:"decided"`
	// ByFamily says the level's decision came from a family decision;
	// Own that the member was decided on its own (a family decision
	// leaves it).
	ByFamily bool `json:"by_family,omitempty"`
	Own      bool `json:"own,omitempty"`
}

// familyView is one family and its members, in grid order.
type familyView struct {
	familyKey
	Members []familyMember `json:"members"`
}

// decisionAt is the cell's decision at level, nil when it has none.
func decisionAt(c *api.SignOffCell, level int) *api.Decision {
	if c == nil {
		return nil
	}
	if level == 2 {
		return c.Level2
	}
	return c.Level1
}

// byFamily says a decision came from a family decision.
func byFamily(d *api.Decision) bool {
	return d != nil && strings.HasPrefix(d.Comment, familyMark)
}

// families groups g's cells into the families they are grounded on, in
// the order of their first cells, at level (whose decisions tell members
// decided on their own).
func families(g *api.SignOffGrid, rows []signoff.Row, level int) []familyView {
	var out []familyView
	for _, rv := range rowViews(g, rows) {
		key, part, ok := familyOf(rv.Row)
		if !ok {
			continue
		}
		i := slices.IndexFunc(out, func(f familyView) bool { return f.familyKey == key })
		if i < 0 {
			out = append(out, familyView{familyKey: key})
			i = len(out) - 1
		}
		m := familyMember{Cell: rv.Cell, Question: rv.Question, Part: part, Decided: rv.Decided}
		if c := g.Cell(rv.Cell); c != nil {
			m.Version = c.Version
			d := decisionAt(c, level)
			m.ByFamily = byFamily(d)
			m.Own = d != nil && !m.ByFamily
		}
		out[i].Members = append(out[i].Members, m)
	}
	return out
}

// familyDecideBody is POST /api/family's body: a decision on one family
// at one level. Versions are the members' versions the reviewer saw
// (cell → version): a member changed since is refused as stale.
type familyDecideBody struct {
	familyKey
	Level    int            `json:"level"`
	Decision string         `json:"decision"`
	Reason   string         `json:"reason"`
	Comment  string         `json:"comment"`
	Versions map[string]int `json:"versions"`
	Reviewer *string        `json:"reviewer,omitempty"`
}

// familyOutcome is what a family decision did to one member.
type familyOutcome struct {
	Cell string `json:"cell"`
	// Outcome is "decided", "kept" (decided on its own: left) or
	// "failed" (Error says why: stale, signed off, …).
	Outcome string           `json:"outcome"`
	Error   string           `json:"error,omitempty"`
	Result  *api.SignOffCell `json:"result,omitempty"`
}

// familyPlan is the members a family decision decides, in grid order:
// every member but those decided on their own at the level.
func familyPlan(f familyView) (decide, kept []familyMember) {
	for _, m := range f.Members {
		if m.Own {
			kept = append(kept, m)
			continue
		}
		decide = append(decide, m)
	}
	return decide, kept
}

// familyComment is the comment of a member's decision made on family f.
func familyComment(f familyKey, comment string) string {
	c := familyMark + f.Message
	if f.Document != "" {
		c += " of " + signoff.DocumentName(f.Document)
	}
	if comment = strings.TrimSpace(comment); comment != "" {
		c += ": " + comment
	}
	return c
}

func (d *Desk) apiFamilies(w http.ResponseWriter, r *http.Request, name, sid string) {
	g, rows, err := d.load(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		jsonError(w, http.StatusNotFound, err)
		return
	}
	writeJSON(w, struct {
		Level    int          `json:"level"`
		Families []familyView `json:"families"`
	}{level(g), families(g, rows, level(g))})
}

func (d *Desk) apiFamilyDecide(w http.ResponseWriter, r *http.Request, name, sid string) {
	var b familyDecideBody
	if !readChange(w, r, name, &b) {
		return
	}
	if b.Decision != api.DecisionAccepted && b.Decision != api.DecisionRejected {
		jsonError(w, http.StatusBadRequest, errors.New("a family is accepted or rejected; edit a member's answer on its own"))
		return
	}
	subject := r.URL.Query().Get("id")
	g, rows, err := d.load(r.Context(), subject)
	if err != nil {
		jsonError(w, http.StatusNotFound, err)
		return
	}
	i := slices.IndexFunc(families(g, rows, b.Level), func(f familyView) bool { return f.familyKey == b.familyKey })
	if i < 0 {
		jsonError(w, http.StatusNotFound, fmt.Errorf("no family %s in the sign-off of %s: reload the grid", b.Message, subject))
		return
	}
	f := families(g, rows, b.Level)[i]
	decide, kept := familyPlan(f)
	var out []familyOutcome
	for _, m := range kept {
		out = append(out, familyOutcome{Cell: m.Cell, Outcome: "kept"})
	}
	for _, m := range decide {
		version, ok := b.Versions[m.Cell]
		if !ok {
			version = m.Version
		}
		cell, err := d.mc.Decide(r.Context(), subject, api.DecideRequest{
			Cell: m.Cell, Level: b.Level, Decision: b.Decision, Reason: b.Reason, Comment: familyComment(f.familyKey, b.Comment),
			Version: version, Reviewer: name, ClientIdentity: d.cfg.ClientIdentity,
		})
		if err != nil {
			out = append(out, familyOutcome{Cell: m.Cell, Outcome: "failed", Error: plain(err)})
			continue
		}
		out = append(out, familyOutcome{Cell: m.Cell, Outcome: "decided", Result: cell})
	}
	d.cfg.Logger.Info("decided a family", "reviewer", name, "signoff", subject, "members", len(decide), "kept", len(kept), "level", b.Level, "decision", b.Decision)
	writeJSON(w, out)
}
