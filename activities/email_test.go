package activities

import "testing"

// TestEmailVariant: a mailbox converted under the default email limits is
// stored where it always was; under others, apart, so that a worker whose
// limits changed converts it again (a message skipped for a limit it no
// longer has is read).
func TestEmailVariant(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format string
		limits Limits
		want   string
	}{
		{"defaults", "mbox", Limits{}, ""},
		{"defaults spelled out", "email", Limits{EmailMaxMessages: 100_000, EmailMaxParts: 1000, EmailMaxHeaderBytes: 256 << 10}, ""},
		{"more parts", "mbox", Limits{EmailMaxParts: 20_000}, "email-100000-268435456-20000-16-67108864-262144/"},
		{"smaller header", "email", Limits{EmailMaxHeaderBytes: 64 << 10}, "email-100000-268435456-1000-16-67108864-65536/"},
		{"not email", "pdf", Limits{EmailMaxParts: 20_000}, ""},
	} {
		a := &Activities{Limits: tc.limits}
		if got := a.emailVariant(tc.format); got != tc.want {
			t.Errorf("%s: emailVariant(%s) = %q, want %q", tc.name, tc.format, got, tc.want)
		}
	}
}
