package desk

import (
	"net/http/httptest"
	"testing"
)

// TestCrossSite: a request another site's page made is refused by its
// Fetch metadata, or by its Origin when the browser sends none; the desk's
// own page and non-browser clients pass.
func TestCrossSite(t *testing.T) {
	tests := []struct {
		name, site, origin string
		refused            bool
	}{
		{"same origin", "same-origin", "http://127.0.0.1:8090", false},
		{"typed by the user", "none", "", false},
		{"another site", "cross-site", "http://evil.example", true},
		{"a sibling subdomain", "same-site", "http://other.127.0.0.1:8090", true},
		{"no fetch metadata, foreign origin", "", "http://evil.example", true},
		{"no fetch metadata, own origin", "", "http://127.0.0.1:8090", false},
		{"curl", "", "", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8090/api/decide", nil)
		if tt.site != "" {
			r.Header.Set("Sec-Fetch-Site", tt.site)
		}
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if err := crossSite(r); (err != nil) != tt.refused {
			t.Errorf("%s: %v, refused want %v", tt.name, err, tt.refused)
		}
	}
}

// TestHostAllowed: the desk answers only the names it listens on, against
// DNS rebinding.
func TestHostAllowed(t *testing.T) {
	d := &Desk{cfg: Config{Hosts: []string{"127.0.0.1:8090", "127.0.0.1", "localhost"}}}
	for host, want := range map[string]bool{"127.0.0.1:8090": true, "localhost:8090": true, "attacker.example:8090": false, "attacker.example": false} {
		if got := d.hostAllowed(host); got != want {
			t.Errorf("host %q: %v, want %v", host, got, want)
		}
	}
}

// TestCSRFToken: the token is the session's and the reviewer's.
func TestCSRFToken(t *testing.T) {
	d := &Desk{secret: []byte("0123456789abcdef0123456789abcdef")}
	if d.csrf("alice", "s1") == d.csrf("bob", "s1") || d.csrf("alice", "s1") == d.csrf("alice", "s2") || d.csrf("alice", "s1") != d.csrf("alice", "s1") {
		t.Error("the CSRF token does not bind the reviewer and the session")
	}
}
