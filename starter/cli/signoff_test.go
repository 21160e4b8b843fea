package cli

import "testing"

// TestSubjectArg: a sign-off command takes the subject's id or its
// sign-off's, in either form, and names the subject.
func TestSubjectArg(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"memagent-review-0123456789abcdef", "memagent-review-0123456789abcdef"},
		{"memagent-review-0123456789abcdef.signoff", "memagent-review-0123456789abcdef"},
		{"memagent-review-0123456789abcdef/signoff", "memagent-review-0123456789abcdef"},
		{"batch-nightly-2026-11-29T01:00:00Z.signoff", "batch-nightly-2026-11-29T01:00:00Z"},
		{"rev.signoffs", "rev.signoffs"},
		{".signoff", ".signoff"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			got, err := subjectArg([]string{tc.arg}, "signoff")
			if err != nil || got != tc.want {
				t.Errorf("subjectArg(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
			}
		})
	}
	if _, err := subjectArg(nil, "signoff"); err == nil {
		t.Error("no argument: no error")
	}
}
