package config

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c Config)
	}{
		{"defaults reach the dev stack", nil, func(t *testing.T, c Config) {
			if c.TemporalAddress != DevTemporalAddress || c.S3Endpoint != DevS3Endpoint || c.ModelBaseURL != DevModelBaseURL {
				t.Errorf("got %s %s %s, want the dev stack addresses", c.TemporalAddress, c.S3Endpoint, c.ModelBaseURL)
			}
			if c.S3AccessKey != DevS3AccessKey {
				t.Errorf("S3AccessKey = %q, want the dev key", c.S3AccessKey)
			}
		}},
		{"environment overrides", map[string]string{
			"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_NAMESPACE": "qa", "AWS_ENDPOINT_URL_S3": "https://s3.example",
			"OPENAI_BASE_URL": "http://vllm:8000/v1", "OPENAI_API_KEY": "k", "MEMAGENT_MODEL": "m", "MEMAGENT_MODEL_TIMEOUT": "90s",
		}, func(t *testing.T, c Config) {
			if c.TemporalAddress != "temporal:7233" || c.TemporalNamespace != "qa" || c.S3Endpoint != "https://s3.example" ||
				c.ModelBaseURL != "http://vllm:8000/v1" || c.ModelAPIKey != "k" || c.Model != "m" || c.ModelTimeout != 90*time.Second {
				t.Errorf("got %+v", c)
			}
			if c.S3AccessKey != "" {
				t.Errorf("S3AccessKey = %q, want empty (default credential chain) for a non-dev endpoint", c.S3AccessKey)
			}
		}},
		{"aws credentials are not shadowed by dev ones", map[string]string{"AWS_ACCESS_KEY_ID": "x"}, func(t *testing.T, c Config) {
			if c.S3AccessKey != "" {
				t.Errorf("S3AccessKey = %q, want empty", c.S3AccessKey)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(env(tt.env))
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestFromEnvErrors(t *testing.T) {
	for _, e := range []map[string]string{{"MEMAGENT_MODEL_TIMEOUT": "soon"}, {"MEMAGENT_LOG_LEVEL": "loud"}} {
		if _, err := FromEnv(env(e)); err == nil {
			t.Errorf("FromEnv(%v): got nil error", e)
		}
	}
}

func TestFlagsAndValidate(t *testing.T) {
	c := Default()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--s3-endpoint", "aws", "--model-url", "localhost:8000", "--bucket", ""}); err != nil {
		t.Fatal(err)
	}
	c.Normalize()
	if c.S3Endpoint != "" {
		t.Errorf("S3Endpoint = %q, want empty for aws", c.S3Endpoint)
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate: got nil, want errors for model URL and bucket")
	}
	for _, want := range []string{"OPENAI_BASE_URL", "MEMAGENT_BUCKET"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not name %s", err, want)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v, want nil", err)
	}
}

func TestHTTPAddr(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{"default", nil, DefaultHTTPAddr, false},
		{"set", map[string]string{"MEMAGENT_HTTP_ADDR": ":9100"}, ":9100", false},
		{"empty disables", map[string]string{"MEMAGENT_HTTP_ADDR": ""}, "", false},
		{"not host:port", map[string]string{"MEMAGENT_HTTP_ADDR": "9100"}, "9100", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.HTTPAddr != tt.want {
				t.Errorf("HTTPAddr = %q, want %q", c.HTTPAddr, tt.want)
			}
			err = c.Validate()
			if (err != nil) != tt.wantErr || (err != nil && !strings.Contains(err.Error(), "MEMAGENT_HTTP_ADDR")) {
				t.Errorf("Validate() = %v, want error: %v (naming MEMAGENT_HTTP_ADDR)", err, tt.wantErr)
			}
		})
	}
}
