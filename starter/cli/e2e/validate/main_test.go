// Package validate holds the end-to-end test of a validation (issue 51):
// a batch on the embedded stack, validated by blind decisions from the
// review desk in headless Chromium and from the starter.
package validate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestMain runs this package's end-to-end tests on a dev stack of its own
// (clitest), driving the CLI through its exported Run.
func TestMain(m *testing.M) {
	clitest.Main(m, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return cli.Run(ctx, args, stdout, stderr)
	}, cli.ExitCode)
}

// deskClient is a reviewer signed in at the desk from Go.
type deskClient struct {
	base, csrf string
	c          *http.Client
}

func newDeskClient(t *testing.T, base, token string) *deskClient {
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
	return &deskClient{base: base, csrf: string(m[1]), c: c}
}

// get decodes the JSON the desk answers at path into v.
func (d *deskClient) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := d.c.Get(d.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// expect posts body to path and checks the answer's status and message.
func (d *deskClient) expect(t *testing.T, what, path, body string, status int, msg string) {
	t.Helper()
	u, _ := url.Parse(d.base)
	req, _ := http.NewRequest(http.MethodPost, d.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", d.csrf)
	req.Header.Set("Origin", "http://"+u.Host)
	resp, err := d.c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Error string }
	if json.Unmarshal(got, &e) == nil && e.Error != "" {
		got = []byte(e.Error)
	}
	if resp.StatusCode != status || !strings.Contains(string(got), msg) {
		t.Errorf("%s: %d %s, want %d and %q", what, resp.StatusCode, got, status, msg)
	}
}
