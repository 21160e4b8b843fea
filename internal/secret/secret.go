package secret

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
)

// Marker stands for a secret that is set.
const Marker = "[redacted]"

// String is Marker for a set secret, and "" for an unset one, so that a
// printed configuration still tells the two apart.
func String(s string) string {
	if s == "" {
		return ""
	}
	return Marker
}

// URL is s fit for logs, errors and metric labels: any user info (user
// name and password alike, since a token is often sent as the user name)
// and every query value are replaced by "xxxxx". A string that does not
// parse loses what lies between "://" and the last "@".
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i, j := strings.Index(s, "://"), strings.LastIndex(s, "@"); i >= 0 && j > i {
			return s[:i+3] + "xxxxx" + s[j:]
		}
		return s
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// URLs is URL for each entry of a comma-separated list.
func URLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if t := strings.TrimSpace(p); t != "" {
			parts[i] = URL(t)
		}
	}
	return strings.Join(parts, ",")
}

// Format prints v with f's verb and flags. v is a redacted copy of a value
// of the type named name (package.Type), of a type without methods named
// copyName, so that fmt prints its fields; %#v names the original type.
// A type holding secrets calls it from its own Format method:
//
//	func (c Config) Format(f fmt.State, verb rune) {
//		type config Config
//		r := config(c)
//		r.Key = secret.String(c.Key)
//		secret.Format(f, verb, r, "pkg.config", "pkg.Config")
//	}
func Format(f fmt.State, verb rune, v any, copyName, name string) {
	s := fmt.Sprintf(fmt.FormatString(f, verb), v)
	if verb == 'v' && f.Flag('#') {
		s = strings.Replace(s, copyName+"{", name+"{", 1)
	}
	fmt.Fprint(f, s)
}

// Value is a key, token or password. It prints as Marker when set and as
// "" when unset, whatever prints it: every fmt verb and flag (%#v too),
// slog's handlers and encoding/json. string(v) is the secret itself, for
// the one call that sends it.
//
// A struct whose secrets are Values (and whose URLs are Endpoints) needs
// no printing methods of its own: fmt, slog and encoding/json print each
// field through the field's methods.
type Value string

// String is Marker, or "" for an unset Value.
func (v Value) String() string { return String(string(v)) }

// GoString is String quoted, as %#v prints a string.
func (v Value) GoString() string { return strconv.Quote(v.String()) }

// Format prints String with f's verb and flags.
func (v Value) Format(f fmt.State, verb rune) { format(f, verb, v.String()) }

// LogValue is String.
func (v Value) LogValue() slog.Value { return slog.StringValue(v.String()) }

// MarshalJSON writes String.
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.String()) }

// Endpoint is a URL, or a comma-separated list of URLs, that may carry
// credentials in its user info or query. It prints as URLs prints it,
// whatever prints it (every fmt verb, slog, encoding/json); string(e) is
// the URL itself, for the client that dials it.
type Endpoint string

// String is the endpoint as URLs prints it.
func (e Endpoint) String() string { return URLs(string(e)) }

// GoString is String quoted.
func (e Endpoint) GoString() string { return strconv.Quote(e.String()) }

// Format prints String with f's verb and flags.
func (e Endpoint) Format(f fmt.State, verb rune) { format(f, verb, e.String()) }

// LogValue is String.
func (e Endpoint) LogValue() slog.Value { return slog.StringValue(e.String()) }

// MarshalJSON writes String.
func (e Endpoint) MarshalJSON() ([]byte, error) { return json.Marshal(e.String()) }

// format prints the redacted s with f's verb and flags; %#v as Go syntax.
func format(f fmt.State, verb rune, s string) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, strconv.Quote(s))
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), s)
}

// Opaque holds a value of a type this project does not own that carries
// secrets among other things (a Temporal client profile: its API key, TLS
// key and gRPC metadata), for a struct that must print. It prints as
// Marker whatever prints it; V is the value.
type Opaque[T any] struct{ V T }

// String is Marker.
func (Opaque[T]) String() string { return Marker }

// GoString is Marker quoted.
func (o Opaque[T]) GoString() string { return strconv.Quote(Marker) }

// Format prints Marker with f's verb and flags.
func (Opaque[T]) Format(f fmt.State, verb rune) { format(f, verb, Marker) }

// LogValue is Marker.
func (Opaque[T]) LogValue() slog.Value { return slog.StringValue(Marker) }

// MarshalJSON writes Marker.
func (Opaque[T]) MarshalJSON() ([]byte, error) { return json.Marshal(Marker) }
