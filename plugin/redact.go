package plugin

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/memagent/memagent/internal/secret"
)

// plainOptions is Options without its methods, for printing a redacted
// copy.
type plainOptions Options

// redacted is a copy of o with every secret masked: the S3 secret key, the
// model's API key, the codec keys and token, the AWS configuration (whose
// credentials provider holds keys), and the user info of the S3 endpoint
// and of the model's URLs.
func (o Options) redacted() plainOptions {
	p := plainOptions(o)
	p.S3SecretAccessKey = secret.String(o.S3SecretAccessKey)
	p.ModelAPIKey = secret.String(o.ModelAPIKey)
	p.CodecServer.Token = secret.String(o.CodecServer.Token)
	p.S3Endpoint = secret.URL(o.S3Endpoint)
	p.AWSConfig = nil
	p.ModelURLs = nil
	for _, u := range o.ModelURLs {
		p.ModelURLs = append(p.ModelURLs, secret.URL(u))
	}
	return p
}

// Format prints o, with any verb and flag, with its secrets redacted.
func (o Options) Format(f fmt.State, verb rune) {
	secret.Format(f, verb, o.redacted(), "plugin.plainOptions", "plugin.Options")
}

// String is o with its secrets redacted.
func (o Options) String() string { return fmt.Sprintf("%+v", o) }

// GoString is o as Go syntax, with its secrets redacted.
func (o Options) GoString() string { return fmt.Sprintf("%#v", o) }

// LogValue logs o with its secrets redacted.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// Format prints the key's id, never its bytes, with any verb.
func (k CodecKey) Format(f fmt.State, verb rune) {
	type codecKey struct{ ID, Key string }
	secret.Format(f, verb, codecKey{ID: k.ID, Key: secret.String(string(k.Key))}, "plugin.codecKey", "plugin.CodecKey")
}

// LogValue logs the key's id.
func (k CodecKey) LogValue() slog.Value { return slog.StringValue("codec key " + k.ID) }

// MarshalJSON writes the key's id, never its bytes.
func (k CodecKey) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ID string `json:"id"`
	}{k.ID})
}

// plainCodecHandlerOptions is CodecHandlerOptions without its methods,
// for printing a redacted copy.
type plainCodecHandlerOptions CodecHandlerOptions

// redacted is a copy of o with its token masked.
func (o CodecHandlerOptions) redacted() plainCodecHandlerOptions {
	r := plainCodecHandlerOptions(o)
	r.Token = secret.String(o.Token)
	return r
}

// Format prints the options with the token redacted, with any verb.
func (o CodecHandlerOptions) Format(f fmt.State, verb rune) {
	secret.Format(f, verb, o.redacted(), "plugin.plainCodecHandlerOptions", "plugin.CodecHandlerOptions")
}

// LogValue logs the options with the token redacted.
func (o CodecHandlerOptions) LogValue() slog.Value { return slog.StringValue(fmt.Sprintf("%+v", o)) }

// MarshalJSON writes the options with the token redacted.
func (o CodecHandlerOptions) MarshalJSON() ([]byte, error) { return json.Marshal(o.redacted()) }
