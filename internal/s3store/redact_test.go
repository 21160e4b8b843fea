package s3store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestConfigPrintsNoSecret(t *testing.T) {
	c := Config{Endpoint: "http://ak:pw-SECRET1@minio:9000", Region: "eu-west-1", AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "s3-secret-SECRET2"}
	for _, v := range []any{c, &c, struct{ Store Config }{c}} {
		var outs []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x"} {
			outs = append(outs, fmt.Sprintf(verb, v))
		}
		var text, js bytes.Buffer
		slog.New(slog.NewTextHandler(&text, nil)).Info("m", "v", v)
		slog.New(slog.NewJSONHandler(&js, nil)).Info("m", "v", v)
		data, _ := json.Marshal(v)
		outs = append(outs, text.String(), js.String(), string(data))
		for i, s := range outs {
			if strings.Contains(s, "SECRET") {
				t.Errorf("printing %d of %T prints a secret: %s", i, v, s)
			}
			if i < 3 && (!strings.Contains(s, "minio:9000") || !strings.Contains(s, "eu-west-1") || !strings.Contains(s, "[redacted]")) {
				t.Errorf("printing %d of %T lacks a field that is no secret: %s", i, v, s)
			}
		}
	}
}
