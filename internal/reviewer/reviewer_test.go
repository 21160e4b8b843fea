package reviewer

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reviewers")
	data := "# reviewers\nalice " + HashToken("tok-a") + "\nbob " + HashToken("tok-b") + "\n"
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Parse("tokens:"+file, nil)
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{"tok-a": "alice", "tok-b": "bob"} {
		if got, err := s.FromToken(token); err != nil || got != want {
			t.Errorf("FromToken(%q) = %q, %v; want %q", token, got, err, want)
		}
	}
	for _, bad := range []string{"", "tok-c", HashToken("tok-a")} {
		if got, err := s.FromToken(bad); err == nil {
			t.Errorf("FromToken(%q) = %q, want an error", bad, got)
		}
	}
	if err := os.WriteFile(file, []byte("alice tok-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokens(file); err == nil || !strings.Contains(err.Error(), "never the token") {
		t.Errorf("a file holding a token: %v, want a refusal", err)
	}
}

// request is a request from remote with the given headers (a name
// repeated for each of its values).
func request(remote string, headers ...string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

func TestHeader(t *testing.T) {
	s, err := Parse("header:x-forwarded-user", &Proxy{Trusted: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(remote string, users ...string) (string, error) {
		var h []string
		for _, u := range users {
			h = append(h, "X-Forwarded-User", u)
		}
		return s.FromHeader(request(remote, h...))
	}
	if got, err := req("127.0.0.1:5000", "alice"); err != nil || got != "alice" {
		t.Errorf("from the proxy: %q, %v; want alice", got, err)
	}
	for name, remote := range map[string]string{"another host": "192.0.2.7:5000", "another loopback address": "127.0.0.2:5000", "IPv6 loopback": "[::1]:5000"} {
		if got, err := req(remote, "alice"); err == nil {
			t.Errorf("%s: %q, want a refusal", name, got)
		}
	}
	if got, err := req("127.0.0.1:5000"); err == nil {
		t.Errorf("no header: %q, want a refusal", got)
	}
	if got, err := req("127.0.0.1:5000", "alice", "bob"); err == nil {
		t.Errorf("two headers: %q, want a refusal", got)
	}
	if _, err := Parse("", nil); err != ErrNoSource {
		t.Errorf("no source: %v", err)
	}
}

// TestHeaderNeedsProxy is the review's attack: any local process sent
// X-Forwarded-User: bob to a desk whose header source trusted loopback by
// default, and was bob. A header source now needs the operator to name
// its proxy, by address or by secret; without either it is refused at
// start, and a source built without one believes no one.
func TestHeaderNeedsProxy(t *testing.T) {
	for name, p := range map[string]*Proxy{"nothing": nil, "empty": {}, "a secret header without a secret": {SecretHeader: "X-Proxy-Secret"}} {
		if _, err := Parse("header:X-Forwarded-User", p); !errors.Is(err, ErrUntrustedHeader) {
			t.Errorf("%s: %v, want ErrUntrustedHeader", name, err)
		}
	}
	bare := &Source{Header: "X-Forwarded-User"}
	if got, err := bare.FromHeader(request("127.0.0.1:5000", "X-Forwarded-User", "bob")); err == nil || got == "bob" {
		t.Errorf("a loopback request to a source with no proxy: %q, %v; want a refusal", got, err)
	}
	if err := bare.Check(); !errors.Is(err, ErrUntrustedHeader) {
		t.Errorf("Check of a source with no proxy: %v", err)
	}

	byAddr, err := Parse("header:X-Forwarded-User", &Proxy{Trusted: []string{"10.1.2.0/24"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := byAddr.FromHeader(request("127.0.0.1:5000", "X-Forwarded-User", "bob")); err == nil {
		t.Errorf("loopback, trusting only 10.1.2.0/24: %q, want a refusal", got)
	}
	if got, err := byAddr.FromHeader(request("10.1.2.9:5000", "X-Forwarded-User", "bob")); err != nil || got != "bob" {
		t.Errorf("from the trusted proxy: %q, %v; want bob", got, err)
	}
	if _, err := Parse("header:X-Forwarded-User", &Proxy{Trusted: []string{"proxy.example"}}); err == nil {
		t.Error("a host name as a trusted proxy: want a refusal")
	}
}

// TestHeaderSecret: with a proxy secret, the header is believed only from
// a request that carries the secret, exactly, once; with addresses too,
// only from a request that passes both.
func TestHeaderSecret(t *testing.T) {
	const secret = "s3cr3t-0123456789abcdef"
	s, err := Parse("header:X-Forwarded-User", &Proxy{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		headers []string
		want    string
	}{
		{"the secret", []string{"X-Memagent-Proxy-Secret", secret, "X-Forwarded-User", "bob"}, "bob"},
		{"no secret", []string{"X-Forwarded-User", "bob"}, ""},
		{"a wrong secret", []string{"X-Memagent-Proxy-Secret", "s3cr3t-0123456789abcdeF", "X-Forwarded-User", "bob"}, ""},
		{"a prefix of the secret", []string{"X-Memagent-Proxy-Secret", secret[:16], "X-Forwarded-User", "bob"}, ""},
		{"the secret and more", []string{"X-Memagent-Proxy-Secret", secret + "x", "X-Forwarded-User", "bob"}, ""},
		{"two secrets", []string{"X-Memagent-Proxy-Secret", "guess", "X-Memagent-Proxy-Secret", secret, "X-Forwarded-User", "bob"}, ""},
		{"the secret, no user", []string{"X-Memagent-Proxy-Secret", secret}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.FromHeader(request("127.0.0.1:5000", tt.headers...))
			if got != tt.want || (tt.want == "") != (err != nil) {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	both, err := Parse("header:X-Forwarded-User", &Proxy{Trusted: []string{"10.0.0.5"}, SecretHeader: "x-proxy-auth", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := both.FromHeader(request("10.0.0.5:1", "X-Proxy-Auth", secret, "X-Forwarded-User", "bob")); err != nil || got != "bob" {
		t.Errorf("both, from the proxy with the secret: %q, %v", got, err)
	}
	if got, err := both.FromHeader(request("127.0.0.1:1", "X-Proxy-Auth", secret, "X-Forwarded-User", "bob")); err == nil {
		t.Errorf("both, the secret from another address: %q, want a refusal", got)
	}
	if got, err := both.FromHeader(request("10.0.0.5:1", "X-Forwarded-User", "bob")); err == nil {
		t.Errorf("both, the address without the secret: %q, want a refusal", got)
	}
	for name, p := range map[string]*Proxy{
		"a short secret":          {Secret: "short"},
		"the user's header again": {Secret: secret, SecretHeader: "x-forwarded-user"},
	} {
		if _, err := Parse("header:X-Forwarded-User", p); err == nil {
			t.Errorf("%s: want a refusal", name)
		}
	}
}
