package secret

import (
	"fmt"
	"net/url"
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
