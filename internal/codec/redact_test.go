package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	redact "github.com/memagent/memagent/internal/secret"
)

func TestKeyAndTokenPrintRedacted(t *testing.T) {
	raw := bytes.Repeat([]byte{0xab}, 32)
	const token = "codec-token-SECRET1"
	secrets := []string{"SECRET", base64.StdEncoding.EncodeToString(raw), "abab", "171 171", "0xab"}
	for _, tc := range []struct {
		name    string
		v       any
		visible string
	}{
		{"Key", Key{ID: "k1", Raw: redact.Value(raw)}, "k1"},
		{"[]Key", []Key{{ID: "k1", Raw: redact.Value(raw)}}, "k1"},
		{"ServerOptions", ServerOptions{Token: token, AllowOrigins: []string{"http://127.0.0.1:8233"}}, "http://127.0.0.1:8233"},
		{"*ServerOptions", &ServerOptions{Token: token, AllowHosts: []string{"codec.internal"}}, "codec.internal"},
	} {
		var outs []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x"} {
			outs = append(outs, fmt.Sprintf(verb, tc.v))
		}
		var text, js bytes.Buffer
		slog.New(slog.NewTextHandler(&text, nil)).Info("m", "v", tc.v)
		slog.New(slog.NewJSONHandler(&js, nil)).Info("m", "v", tc.v)
		data, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, text.String(), js.String(), string(data))
		for i, s := range outs {
			for _, sec := range secrets {
				if strings.Contains(s, sec) {
					t.Errorf("%s printing %d prints %q: %s", tc.name, i, sec, s)
				}
			}
			if i < 3 && !strings.Contains(s, tc.visible) {
				t.Errorf("%s printing %d lacks %q: %s", tc.name, i, tc.visible, s)
			}
		}
	}
}
