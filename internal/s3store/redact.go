package s3store

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/memagent/memagent/internal/secret"
)

// Format prints the configuration with every verb (%v, %+v, %#v, %s, ...),
// the secret access key redacted and the endpoint without user info.
func (c Config) Format(f fmt.State, verb rune) {
	type config Config
	r := config(c)
	r.SecretAccessKey, r.Endpoint = secret.String(c.SecretAccessKey), secret.URL(c.Endpoint)
	secret.Format(f, verb, r, "s3store.config", "s3store.Config")
}

// LogValue is the configuration as %+v prints it, the secret redacted.
func (c Config) LogValue() slog.Value { return slog.StringValue(fmt.Sprintf("%+v", c)) }

// MarshalJSON writes the configuration as %+v prints it, the secret
// redacted.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%+v", c)) }
