package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// Redacted stands in for a secret wherever a configuration is printed.
const Redacted = "[redacted]"

// mask is Redacted for a set secret, "" for an unset one.
func mask(secret string) string {
	if secret == "" {
		return ""
	}
	return Redacted
}

// RedactURLs redacts the user info (a password) of each comma-separated
// URL in s.
func RedactURLs(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
			if _, has := u.User.Password(); !has {
				u.User = url.User(Redacted)
				parts[i] = u.String()
			}
		}
	}
	return strings.Join(parts, ",")
}

// plainConfig is Config without its methods, for printing a redacted copy.
type plainConfig Config

// redacted is a copy of c with every secret masked: the Temporal API key,
// the S3 secret key, the model's API key, the codec token (the codec keys
// redact themselves) and the passwords of the model's URLs.
func (c Config) redacted() plainConfig {
	p := plainConfig(c)
	p.TemporalAPIKey = mask(c.TemporalAPIKey)
	p.S3SecretKey = mask(c.S3SecretKey)
	p.ModelAPIKey = mask(c.ModelAPIKey)
	p.CodecToken = mask(c.CodecToken)
	p.ModelBaseURL = RedactURLs(c.ModelBaseURL)
	return p
}

// Format prints c, with any verb and flag, with its secrets redacted.
func (c Config) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), c.redacted())
}

// String is c with its secrets redacted.
func (c Config) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString is c as Go syntax, with its secrets redacted.
func (c Config) GoString() string { return fmt.Sprintf("%#v", c.redacted()) }

// LogValue logs c with its secrets redacted.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }
