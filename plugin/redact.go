package plugin

import (
	"fmt"
	"log/slog"

	"github.com/memagent/memagent/internal/config"
)

// plainOptions is Options without its methods, for printing a redacted
// copy.
type plainOptions Options

// redacted is a copy of o with every secret masked: the S3 secret key, the
// model's API key, the codec keys and token, the AWS configuration (whose
// credentials provider holds keys), and the passwords of the model's URLs.
func (o Options) redacted() plainOptions {
	p := plainOptions(o)
	if o.S3SecretAccessKey != "" {
		p.S3SecretAccessKey = config.Redacted
	}
	if o.ModelAPIKey != "" {
		p.ModelAPIKey = config.Redacted
	}
	if o.CodecServer.Token != "" {
		p.CodecServer.Token = config.Redacted
	}
	p.CodecKeys = nil
	for _, k := range o.CodecKeys {
		p.CodecKeys = append(p.CodecKeys, CodecKey{ID: k.ID + " " + config.Redacted})
	}
	p.AWSConfig = nil
	p.ModelURLs = nil
	for _, u := range o.ModelURLs {
		p.ModelURLs = append(p.ModelURLs, config.RedactURLs(u))
	}
	return p
}

// Format prints o, with any verb and flag, with its secrets redacted.
func (o Options) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), o.redacted())
}

// String is o with its secrets redacted.
func (o Options) String() string { return fmt.Sprintf("%+v", o.redacted()) }

// GoString is o as Go syntax, with its secrets redacted.
func (o Options) GoString() string { return fmt.Sprintf("%#v", o.redacted()) }

// LogValue logs o with its secrets redacted.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }
