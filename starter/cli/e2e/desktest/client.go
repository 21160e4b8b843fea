package desktest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Client is a reviewer signed in at the desk from Go: it keeps the
// session's cookie and sends what the desk's page sends with a POST (a
// JSON body, the page's CSRF token, the desk's own origin), for the
// tests that read the desk's API or check its refusals.
type Client struct {
	// Base is the desk's URL, as Start returns it.
	Base string
	csrf string
	c    *http.Client
}

// SignIn signs in at the desk at base with token and keeps the CSRF
// token of the page it is answered with.
func SignIn(t testing.TB, base, token string) *Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(base+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("signed in, the page has no CSRF token: %s", page)
	}
	return &Client{Base: base, csrf: string(m[1]), c: c}
}

// WithID is path with the query the desk names a sign-off or a
// validation by (?id=).
func WithID(path, id string) string {
	return path + "?id=" + url.QueryEscape(id)
}

// Get gets path (with its query) and returns the answer's status and
// body.
func (d *Client) Get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := d.c.Get(d.Base + path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

// GetJSON decodes the JSON the desk answers at path into v; any status
// but 200 fails the test.
func (d *Client) GetJSON(t testing.TB, path string, v any) {
	t.Helper()
	status, body := d.Get(t, path)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

// Post posts body to path as the desk's page does; headers are set over
// the page's own (an attack's forged Origin, an emptied X-CSRF-Token).
// It returns the answer's status and body.
func (d *Client) Post(t testing.TB, path, body string, headers map[string]string) (int, string) {
	t.Helper()
	u, _ := url.Parse(d.Base)
	req, err := http.NewRequest(http.MethodPost, d.Base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", d.csrf)
	req.Header.Set("Origin", "http://"+u.Host)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := d.c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(got)
}

// PostJSON posts body, marshalled, to path and decodes the answer into v
// (nil: dropped); any status but 200 fails the test.
func (d *Client) PostJSON(t testing.TB, path string, body, v any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	status, got := d.Post(t, path, string(data), nil)
	if status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, status, got)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(got), v); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, got)
		}
	}
}

// internalPrefix is what a refusal must not show a reviewer: a package's
// prefix or gRPC's wording.
var internalPrefix = regexp.MustCompile(`(^|: )(memagent|starter|desk|s3|json): |rpc error`)

// Expect posts body to path (headers as Post takes them) and checks that
// the desk refuses, or answers, with status and a message holding msg, in
// plain words: a refusal that shows an internal prefix fails the test.
func (d *Client) Expect(t testing.TB, what, path, body string, headers map[string]string, status int, msg string) {
	t.Helper()
	got, answer := d.Post(t, path, body, headers)
	var e struct{ Error string }
	if json.Unmarshal([]byte(answer), &e) == nil && e.Error != "" {
		answer = e.Error
	}
	if got != status || !strings.Contains(answer, msg) {
		t.Errorf("%s: %d %s, want %d and %q", what, got, answer, status, msg)
	}
	if m := internalPrefix.FindString(answer); m != "" {
		t.Errorf("%s: %s: an internal prefix %q, want plain words", what, answer, m)
	}
}
