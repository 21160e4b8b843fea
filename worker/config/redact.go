package config

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/plugin"
)

// printedConfig is what a Config prints as: the plugin's options, which
// redact their own secrets, and the host's settings, whose secrets are
// types that redact themselves. Without it, Config would print as its
// embedded Options do, without the host's settings.
type printedConfig struct {
	Options plugin.Options
	Host    Host
}

// Format prints c, with any verb and flag, with its secrets redacted.
func (c Config) Format(f fmt.State, verb rune) {
	secret.Format(f, verb, printedConfig{Options: c.Options, Host: c.Host}, "config.printedConfig", "config.Config")
}

// String is c with its secrets redacted.
func (c Config) String() string { return fmt.Sprintf("%+v", c) }

// GoString is c as Go syntax, with its secrets redacted.
func (c Config) GoString() string { return fmt.Sprintf("%#v", c) }

// LogValue logs c with its secrets redacted.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON is c with its secrets redacted, as a JSON string: the
// plugin's Options hold their secrets as plain strings, which
// encoding/json would otherwise print.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }
