package codec

import (
	"encoding/json"
	"fmt"
	"log/slog"

	redact "github.com/memagent/memagent/internal/secret"
)

// Format prints the key's id and never its bytes, with every verb (%v,
// %+v, %#v, %s, %d, %x, ...).
func (k Key) Format(f fmt.State, verb rune) {
	type key struct {
		ID  string
		Raw string
	}
	r := key{ID: k.ID}
	if len(k.Raw) > 0 {
		r.Raw = redact.Marker
	}
	redact.Format(f, verb, r, "codec.key", "codec.Key")
}

// LogValue is the key's id.
func (k Key) LogValue() slog.Value { return slog.StringValue("codec key " + k.ID) }

// MarshalJSON writes the key's id only.
func (k Key) MarshalJSON() ([]byte, error) { return json.Marshal("codec key " + k.ID) }

// Format prints the options with the token redacted, with every verb.
func (o ServerOptions) Format(f fmt.State, verb rune) {
	type serverOptions ServerOptions
	r := serverOptions(o)
	r.Token = redact.String(o.Token)
	redact.Format(f, verb, r, "codec.serverOptions", "codec.ServerOptions")
}

// LogValue is the options as %+v prints them, the token redacted.
func (o ServerOptions) LogValue() slog.Value { return slog.StringValue(fmt.Sprintf("%+v", o)) }

// MarshalJSON writes the options as %+v prints them, the token redacted.
func (o ServerOptions) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%+v", o)) }
