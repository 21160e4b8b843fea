package api

import (
	"net/url"
	"strings"
	"testing"
)

// TestDerivedIDsSurviveAURLPath: every id memagent derives from another
// adds only characters that Temporal's HTTP API takes in a URL path as
// they are (url.PathEscape leaves them alone), and none of '/', '%', '?',
// '#', ':' or a space.
func TestDerivedIDsSurviveAURLPath(t *testing.T) {
	base := "memagent-batch-nightly-20261129T013149.000Z"
	for _, id := range []string{
		BatchItemWorkflowID(base, 0, 0), BatchItemWorkflowID(base, 41, 0), BatchItemWorkflowID(base, 7, 3),
		SignOffWorkflowID(base), SignOffWorkflowID("memagent-review-0123456789abcdef"),
	} {
		added := strings.TrimPrefix(strings.TrimPrefix(id, base), "memagent-review-0123456789abcdef")
		if url.PathEscape(id) != id || strings.ContainsAny(added, "/%?#: ") {
			t.Errorf("%q does not stand in a URL path as it is (escaped: %q)", id, url.PathEscape(id))
		}
	}
	for _, tc := range []struct {
		got, want string
	}{
		{BatchItemWorkflowID("b", 7, 0), "b.7"},
		{BatchItemWorkflowID("b", 7, 2), "b.7.s2"},
		{LegacyBatchItemWorkflowID("b", 7, 0), "b/7"},
		{LegacyBatchItemWorkflowID("b", 7, 2), "b/7.s2"},
		{SignOffWorkflowID("rev"), "rev.signoff"},
		{LegacySignOffWorkflowID("rev"), "rev/signoff"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestDerivedIDsDoNotCollide: the ids derived from one id (its items'
// samples and its sign-off), in both forms, are all different, and none
// is an id derived from nothing (a question's, a review's, a batch's, an
// estimate's, a Schedule's run's).
func TestDerivedIDsDoNotCollide(t *testing.T) {
	bases := []string{
		"memagent-batch-x-20261129T013149.000Z", "memagent-review-0123456789abcdef", "memagent-qa-0123456789abcdef",
		"batch-nightly-2026-11-29T01:00:00Z", "memagent-estimate-20261129T013149.000000",
	}
	seen := map[string]string{}
	for _, b := range bases {
		seen[b] = "a base"
	}
	add := func(id, what string) {
		if prev, ok := seen[id]; ok {
			t.Errorf("%q is %s and %s", id, what, prev)
		}
		seen[id] = what
	}
	for _, b := range bases {
		add(SignOffWorkflowID(b), "the sign-off of "+b)
		add(LegacySignOffWorkflowID(b), "the old sign-off of "+b)
		for seq := range 12 {
			for sample := range 12 {
				add(BatchItemWorkflowID(b, seq, sample), "a child of "+b)
				add(LegacyBatchItemWorkflowID(b, seq, sample), "an old child of "+b)
			}
		}
	}
	for id, what := range seen {
		if s, ok := SignOffSubjectOf(id); ok != strings.HasPrefix(what, "the ") || ok && !strings.HasSuffix(what, " of "+s) {
			t.Errorf("SignOffSubjectOf(%q) = %q, %v: it is %s", id, s, ok, what)
		}
	}
}

// TestSignOffIDs: a sign-off's id names its subject in either form; a
// subject that reads as a sign-off's id is refused.
func TestSignOffIDs(t *testing.T) {
	for _, tc := range []struct {
		id, subject string
		ok          bool
	}{
		{"rev.signoff", "rev", true},
		{"rev/signoff", "rev", true},
		{"a/b.signoff", "a/b", true},
		{"rev.signoff.signoff", "rev.signoff", true},
		{".signoff", "", false},
		{"/signoff", "", false},
		{"rev", "", false},
		{"rev.signoffs", "", false},
		{"rev-signoff", "", false},
	} {
		s, ok := SignOffSubjectOf(tc.id)
		if s != tc.subject || ok != tc.ok {
			t.Errorf("SignOffSubjectOf(%q) = %q, %v; want %q, %v", tc.id, s, ok, tc.subject, tc.ok)
		}
		if ok && !IsSignOffWorkflowIDOf(tc.id, s) {
			t.Errorf("IsSignOffWorkflowIDOf(%q, %q) = false", tc.id, s)
		}
	}
	if IsSignOffWorkflowIDOf("rev.signoff", "re") || IsSignOffWorkflowIDOf(".signoff", "") {
		t.Error("IsSignOffWorkflowIDOf takes another subject's id")
	}
	for _, subject := range []string{"rev.signoff", "rev/signoff"} {
		if err := (SignOffInput{Review: subject}).Validate(); err == nil || !strings.Contains(err.Error(), "is a sign-off's id") {
			t.Errorf("a sign-off of %q: %v, want a refusal", subject, err)
		}
	}
}
