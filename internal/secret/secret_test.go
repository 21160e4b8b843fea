package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://gpu-1:8000/v1", "http://gpu-1:8000/v1"},
		{"http://user:pw@gpu-1:8000/v1", "http://xxxxx@gpu-1:8000/v1"},
		{"http://sk-token@gpu-1:8000/v1", "http://xxxxx@gpu-1:8000/v1"},
		{"https://h/v1?api-key=k&x=1", "https://h/v1?api-key=xxxxx&x=xxxxx"},
		{"http://user:pw@[::1", "http://xxxxx@[::1"},
		{"", ""},
	} {
		t.Run(tt.in, func(t *testing.T) {
			if got := URL(tt.in); got != tt.want {
				t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got, want := URLs("http://a:b@h1/v1, http://h2/v1"), "http://xxxxx@h1/v1,http://h2/v1"; got != want {
		t.Errorf("URLs = %q, want %q", got, want)
	}
}

func TestString(t *testing.T) {
	if String("") != "" || String("k") != Marker {
		t.Errorf("String: an unset secret prints empty and a set one as %s", Marker)
	}
}

// printings renders v every way a program prints a value: each fmt verb
// and flag, and slog's text and JSON handlers, and encoding/json.
func printings(t *testing.T, v any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%10.3s"} {
		out[verb] = fmt.Sprintf(verb, v)
	}
	out["Sprint"] = fmt.Sprint(v)
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("m", "v", v)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("m", "v", v)
	out["slog text"], out["slog JSON"] = text.String(), js.String()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out["json"] = string(data)
	return out
}

// TestTypesRedactThemselves prints a struct holding a Value and an
// Endpoint, which has no printing methods of its own, every way: the
// secrets never show, the host always does (but with %d and %x, which
// print no string as text).
func TestTypesRedactThemselves(t *testing.T) {
	type options struct {
		Key   Value
		URL   Endpoint
		Unset Value
		Name  string
	}
	o := options{Key: "sk-SECRET1", URL: "http://u:pw-SECRET2@gpu-1:8000/v1?k=SECRET3, http://gpu-2:8000/v1", Name: "plain"}
	for _, v := range []any{o, &o, []options{o}, map[string]options{"o": o}} {
		for how, s := range printings(t, v) {
			if strings.Contains(s, "SECRET") || strings.Contains(s, hex("SECRET")) {
				t.Errorf("%T with %s prints a secret: %s", v, how, s)
			}
			if how == "%d" || how == "%x" || how == "%X" || how == "%10.3s" {
				continue
			}
			if !strings.Contains(s, "gpu-2") || !strings.Contains(s, Marker) {
				t.Errorf("%T with %s hides what is no secret: %s", v, how, s)
			}
		}
	}
	if got, want := fmt.Sprintf("%#v", o), `secret.options{Key:"[redacted]", URL:"http://xxxxx@gpu-1:8000/v1?k=xxxxx,http://gpu-2:8000/v1", Unset:"", Name:"plain"}`; got != want {
		t.Errorf("%%#v = %s, want %s", got, want)
	}
	if string(o.Key) != "sk-SECRET1" || Value("").String() != "" {
		t.Error("string(v) is the secret, and an unset Value prints empty")
	}
}

func hex(s string) string { return fmt.Sprintf("%x", s) }
