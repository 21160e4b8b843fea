package reviewer

import (
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

func TestHeader(t *testing.T) {
	s, err := Parse("header:x-forwarded-user", nil)
	if err != nil {
		t.Fatal(err)
	}
	req := func(remote string, users ...string) (string, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		for _, u := range users {
			r.Header.Add("X-Forwarded-User", u)
		}
		return s.FromHeader(r)
	}
	if got, err := req("127.0.0.1:5000", "alice"); err != nil || got != "alice" {
		t.Errorf("from the proxy: %q, %v; want alice", got, err)
	}
	for name, remote := range map[string]string{"another host": "192.0.2.7:5000"} {
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
