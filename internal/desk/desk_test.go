package desk

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/internal/reviewer"
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

// noClient, noStore and noChecks stand in for what a desk is given; the
// tests below call none of them.
type (
	noClient struct{ client.Client }
	noStore  struct{ Store }
	noChecks struct{ Checks }
)

// TestProxyIdentity is the review's attack on the desk: a local process
// sent X-Forwarded-User: bob over loopback and got bob's page and CSRF
// token. A header source with no proxy named is refused at start, and
// believes no one if built by hand; with the proxy's address or its
// secret configured, only the proxy is bob.
func TestProxyIdentity(t *testing.T) {
	const secret = "a-proxy-secret-of-24-byte"
	whoami := func(d *Desk, remote string, headers ...string) (int, string) {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8090/api/whoami", nil)
		r.RemoteAddr = remote
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Add(headers[i], headers[i+1])
		}
		w := httptest.NewRecorder()
		d.authed(func(w http.ResponseWriter, r *http.Request, name, sid string) {
			fmt.Fprintf(w, "%s %s", name, d.csrf(name, sid))
		})(w, r)
		return w.Code, w.Body.String()
	}
	bob := []string{"X-Forwarded-User", "bob"}

	bare := &reviewer.Source{Header: "X-Forwarded-User"}
	if _, err := New(Config{Temporal: noClient{}, Store: noStore{}, Checks: noChecks{}, Reviewers: bare}); !errors.Is(err, reviewer.ErrUntrustedHeader) {
		t.Errorf("a desk on a header source with no proxy: %v, want ErrUntrustedHeader", err)
	}
	if code, body := whoami(&Desk{cfg: Config{Reviewers: bare}}, "127.0.0.1:40000", bob...); code != http.StatusUnauthorized || strings.Contains(body, "bob ") {
		t.Errorf("loopback, no proxy configured: %d %q, want 401", code, body)
	}

	byAddr, err := reviewer.Parse("header:X-Forwarded-User", &reviewer.Proxy{Trusted: []string{"10.0.0.7"}})
	if err != nil {
		t.Fatal(err)
	}
	d := &Desk{cfg: Config{Reviewers: byAddr}, secret: []byte("0123456789abcdef0123456789abcdef")}
	if code, body := whoami(d, "127.0.0.1:40000", bob...); code != http.StatusUnauthorized {
		t.Errorf("loopback, the proxy at 10.0.0.7: %d %q, want 401", code, body)
	}
	if code, body := whoami(d, "10.0.0.7:40000", bob...); code != http.StatusOK || body != "bob "+d.csrf("bob", "") {
		t.Errorf("from the proxy at 10.0.0.7: %d %q, want bob", code, body)
	}

	bySecret, err := reviewer.Parse("header:X-Forwarded-User", &reviewer.Proxy{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	d = &Desk{cfg: Config{Reviewers: bySecret}, secret: []byte("0123456789abcdef0123456789abcdef")}
	if code, body := whoami(d, "127.0.0.1:40000", bob...); code != http.StatusUnauthorized {
		t.Errorf("loopback without the secret: %d %q, want 401", code, body)
	}
	if code, body := whoami(d, "127.0.0.1:40000", append([]string{reviewer.DefaultSecretHeader, "a-proxy-secret-of-24-bytf"}, bob...)...); code != http.StatusUnauthorized {
		t.Errorf("loopback with a wrong secret: %d %q, want 401", code, body)
	}
	if code, body := whoami(d, "127.0.0.1:40000", append([]string{reviewer.DefaultSecretHeader, secret}, bob...)...); code != http.StatusOK || body != "bob "+d.csrf("bob", "") {
		t.Errorf("with the proxy's secret: %d %q, want bob", code, body)
	}
}
