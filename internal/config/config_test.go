package config

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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

func TestCodecAndSSE(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte("# current first\nk2:"+key+"\nk1:"+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		wantKeys int
		loadErr  string // from FromEnv
		validErr string // from Validate
	}{
		{"no keys", nil, 0, "", ""},
		{"inline keys", map[string]string{"MEMAGENT_CODEC_KEYS": "k1:" + key}, 1, "", ""},
		{"key file wins", map[string]string{"MEMAGENT_CODEC_KEYS_FILE": file, "MEMAGENT_CODEC_KEYS": "k9:" + key}, 2, "", ""},
		{"missing key file", map[string]string{"MEMAGENT_CODEC_KEYS_FILE": filepath.Join(dir, "nope")}, 0, "MEMAGENT_CODEC_KEYS_FILE", ""},
		{"not base64", map[string]string{"MEMAGENT_CODEC_KEYS": "k1:not*base64"}, 0, "not valid base64", ""},
		{"short key", map[string]string{"MEMAGENT_CODEC_KEYS": "k1:" + short}, 1, "", "want 32"},
		{"token-less codec server off loopback", map[string]string{"MEMAGENT_CODEC_KEYS": "k1:" + key, "MEMAGENT_HTTP_ADDR": ":9464"}, 1, "", "MEMAGENT_CODEC_TOKEN"},
		{"codec server off loopback with a token", map[string]string{"MEMAGENT_CODEC_KEYS": "k1:" + key, "MEMAGENT_HTTP_ADDR": ":9464", "MEMAGENT_CODEC_TOKEN": "t"}, 1, "", ""},
		{"SSE-S3", map[string]string{"MEMAGENT_S3_SSE": "AES256"}, 0, "", ""},
		{"SSE-KMS with a key", map[string]string{"MEMAGENT_S3_SSE": "aws:kms", "MEMAGENT_S3_KMS_KEY_ID": "alias/memagent"}, 0, "", ""},
		{"KMS key without aws:kms", map[string]string{"MEMAGENT_S3_KMS_KEY_ID": "alias/memagent"}, 0, "", "MEMAGENT_S3_SSE=aws:kms"},
		{"unknown SSE", map[string]string{"MEMAGENT_S3_SSE": "aes"}, 0, "", "use AES256, aws:kms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(env(tt.env))
			if tt.loadErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.loadErr) {
					t.Fatalf("FromEnv error = %v, want one containing %q", err, tt.loadErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			if len(c.CodecKeys) != tt.wantKeys {
				t.Errorf("%d codec keys, want %d", len(c.CodecKeys), tt.wantKeys)
			}
			err = c.Validate()
			if tt.validErr == "" && err != nil || tt.validErr != "" && (err == nil || !strings.Contains(err.Error(), tt.validErr)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tt.validErr)
			}
			for _, verb := range []string{"%v", "%+v", "%#v"} {
				if out := fmt.Sprintf(verb, c); strings.Contains(out, key) || strings.Contains(out, "7 7 7") || strings.Contains(out, "0x7, 0x7") {
					t.Errorf("%s of the config prints key material", verb)
				}
			}
		})
	}
	if c, _ := FromEnv(env(map[string]string{"MEMAGENT_CODEC_CORS_ORIGINS": "https://ui.example, http://127.0.0.1:8233"})); len(c.CodecOrigins) != 2 || c.CodecOrigins[0] != "https://ui.example" {
		t.Errorf("CodecOrigins = %q, want the two listed", c.CodecOrigins)
	}
	if c := Default(); len(c.CodecOrigins) != 1 || c.CodecOrigins[0] != DevUIURL {
		t.Errorf("default CodecOrigins = %q, want the dev UI", c.CodecOrigins)
	}
}
