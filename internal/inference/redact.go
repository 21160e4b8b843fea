package inference

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/memagent/memagent/internal/secret"
)

// Format prints the configuration with the API key redacted and the base
// URL without user info, with every verb.
func (c Config) Format(f fmt.State, verb rune) {
	type config Config
	r := config(c)
	r.APIKey, r.BaseURL = secret.String(c.APIKey), secret.URL(c.BaseURL)
	secret.Format(f, verb, r, "inference.config", "inference.Config")
}

// LogValue is the configuration as %+v prints it, secrets redacted.
func (c Config) LogValue() slog.Value { return slog.StringValue(fmt.Sprintf("%+v", c)) }

// MarshalJSON writes the configuration as %+v prints it, so that a JSON
// log of a value holding one does not hold its secrets.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%+v", c)) }

// Format prints the endpoint with the API key redacted and the base URL
// without user info, with every verb.
func (e EndpointConfig) Format(f fmt.State, verb rune) {
	type endpointConfig EndpointConfig
	r := endpointConfig(e)
	r.APIKey, r.BaseURL = secret.String(e.APIKey), secret.URL(e.BaseURL)
	secret.Format(f, verb, r, "inference.endpointConfig", "inference.EndpointConfig")
}

// LogValue is the endpoint as %+v prints it, secrets redacted.
func (e EndpointConfig) LogValue() slog.Value { return slog.StringValue(fmt.Sprintf("%+v", e)) }

// MarshalJSON writes the endpoint as %+v prints it, secrets redacted.
func (e EndpointConfig) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%+v", e)) }

// Format prints what the client talks to, never its key: its fields are
// unexported, so fmt would otherwise print them all, the key among them.
func (c *Client) Format(f fmt.State, _ rune) {
	if c == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	fmt.Fprintf(f, "inference.Client{API:%s BaseURL:%s Model:%q APIKey:%s}", c.dialect, secret.URL(c.baseURL), c.model, secret.String(c.apiKey))
}

// LogValue is the client as Format prints it.
func (c *Client) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(c)) }
