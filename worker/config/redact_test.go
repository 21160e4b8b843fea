package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/memagent/memagent/plugin"
	"go.temporal.io/sdk/contrib/envconfig"
)

// printings renders v every way a program prints a value: each fmt verb,
// a pointer to it, and slog's text and JSON handlers.
func printings(v, ptr any) map[string]string {
	out := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		out[verb] = fmt.Sprintf(verb, v)
		out["pointer "+verb] = fmt.Sprintf(verb, ptr)
	}
	out["Sprint"] = fmt.Sprint(v)
	j, err := json.Marshal(v)
	out["JSON"] = string(j) + fmt.Sprint(err)
	out["Sprintln"] = fmt.Sprintln(v)
	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"slog JSON": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		slog.New(h(&b)).Info("config", "cfg", v, "ptr", ptr)
		out[name] = b.String()
	}
	return out
}

func TestConfigPrintsNoSecret(t *testing.T) {
	c := Default()
	c.TemporalAPIKey = "temporal-key-SECRET1"
	c.S3SecretAccessKey = "s3-SECRET2"
	c.ModelAPIKey = "sk-SECRET3"
	c.CodecServer.Token = "codec-token-SECRET4"
	c.ModelURLs = []string{"http://user:url-SECRET5@vllm:8000/v1", "http://tok-SECRET6@vllm2:8000/v1"}
	c.CodecKeys = []plugin.CodecKey{{ID: "k1", Key: []byte(strings.Repeat("A", 32))}}
	c.TemporalProfile.V.APIKey = "profile-key-SECRET7"
	c.TemporalProfile.V.TLS = &envconfig.ClientConfigTLS{ClientKeyData: []byte("-----BEGIN KEY-----SECRET8")}
	c.TemporalProfile.V.GRPCMeta = map[string]string{"authorization": "Bearer SECRET9"}
	for how, s := range printings(c, &c) {
		for _, secret := range []string{"SECRET1", "SECRET2", "SECRET3", "SECRET4", "SECRET5", "SECRET6", "SECRET7", "SECRET8", "SECRET9", strings.Repeat("A", 20), "QUFBQUFB", "65 65 65 65"} {
			if strings.Contains(s, secret) {
				t.Errorf("%s prints %s: %s", how, secret, s)
			}
		}
		if !strings.Contains(s, "vllm2") {
			t.Errorf("%s hides what is not secret: %s", how, s)
		}
	}
}
