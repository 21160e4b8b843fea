package config

import (
	"fmt"
	"log/slog"

	"github.com/memagent/memagent/internal/secret"
)

// plainConfig is Config without its methods, for printing a redacted copy.
type plainConfig Config

// redacted is a copy of c with every secret masked: the Temporal API key,
// the S3 secret key, the model's API key, the codec token (the codec keys
// redact themselves) and the user info of the model's and S3's URLs.
func (c Config) redacted() plainConfig {
	p := plainConfig(c)
	p.TemporalAPIKey = secret.String(c.TemporalAPIKey)
	p.TemporalProfile.APIKey = secret.String(c.TemporalProfile.APIKey)
	if t := c.TemporalProfile.TLS; t != nil && len(t.ClientKeyData) > 0 {
		tc := *t
		tc.ClientKeyData = []byte(secret.String(string(t.ClientKeyData)))
		p.TemporalProfile.TLS = &tc
	}
	if m := c.TemporalProfile.GRPCMeta; len(m) > 0 {
		// Metadata often carries tokens: keep the keys only.
		red := make(map[string]string, len(m))
		for k, v := range m {
			red[k] = secret.String(v)
		}
		p.TemporalProfile.GRPCMeta = red
	}
	p.S3SecretKey = secret.String(c.S3SecretKey)
	p.ModelAPIKey = secret.String(c.ModelAPIKey)
	p.CodecToken = secret.String(c.CodecToken)
	p.ModelBaseURL = secret.URLs(c.ModelBaseURL)
	p.S3Endpoint = secret.URL(c.S3Endpoint)
	return p
}

// Format prints c, with any verb and flag, with its secrets redacted.
func (c Config) Format(f fmt.State, verb rune) {
	secret.Format(f, verb, c.redacted(), "config.plainConfig", "config.Config")
}

// String is c with its secrets redacted.
func (c Config) String() string { return fmt.Sprintf("%+v", c) }

// GoString is c as Go syntax, with its secrets redacted.
func (c Config) GoString() string { return fmt.Sprintf("%#v", c) }

// LogValue logs c with its secrets redacted.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }
