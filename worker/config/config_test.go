package config

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/buildinfo"
	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/plugin"
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
			if c.TemporalAddress != DevTemporalAddress || c.S3Endpoint != devaddr.S3Endpoint || strings.Join(c.ModelURLs, ",") != devaddr.ModelBaseURL {
				t.Errorf("got %s %s %s, want the dev stack addresses", c.TemporalAddress, c.S3Endpoint, c.ModelURLs)
			}
			if c.S3AccessKeyID != devaddr.S3AccessKey {
				t.Errorf("S3AccessKeyID = %q, want the dev key", c.S3AccessKeyID)
			}
		}},
		{"environment overrides", map[string]string{
			"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_NAMESPACE": "qa", "AWS_ENDPOINT_URL_S3": "https://s3.example",
			"OPENAI_BASE_URL": "http://vllm:8000/v1", "OPENAI_API_KEY": "k", "MEMAGENT_MODEL": "m", "MEMAGENT_MODEL_TIMEOUT": "90s",
		}, func(t *testing.T, c Config) {
			if c.TemporalAddress != "temporal:7233" || c.TemporalNamespace != "qa" || c.S3Endpoint != "https://s3.example" ||
				strings.Join(c.ModelURLs, ",") != "http://vllm:8000/v1" || c.ModelAPIKey != "k" || c.Model != "m" || c.ModelTimeout != 90*time.Second {
				t.Errorf("got %+v", c)
			}
			if c.S3AccessKeyID != "" {
				t.Errorf("S3AccessKeyID = %q, want empty (default credential chain) for a non-dev endpoint", c.S3AccessKeyID)
			}
		}},
		{"aws credentials are not shadowed by dev ones", map[string]string{"AWS_ACCESS_KEY_ID": "x"}, func(t *testing.T, c Config) {
			if c.S3AccessKeyID != "" {
				t.Errorf("S3AccessKeyID = %q, want empty", c.S3AccessKeyID)
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
		{"KMS key without aws:kms", map[string]string{"MEMAGENT_S3_KMS_KEY_ID": "alias/memagent"}, 0, "", "set MEMAGENT_S3_SSE to aws:kms"},
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
	if c, _ := FromEnv(env(map[string]string{"MEMAGENT_CODEC_CORS_ORIGINS": "https://ui.example, http://127.0.0.1:8233"})); len(c.CodecServer.AllowOrigins) != 2 || c.CodecServer.AllowOrigins[0] != "https://ui.example" {
		t.Errorf("CodecOrigins = %q, want the two listed", c.CodecServer.AllowOrigins)
	}
	if c := Default(); len(c.CodecServer.AllowOrigins) != 1 || c.CodecServer.AllowOrigins[0] != DevUIURL {
		t.Errorf("default CodecOrigins = %q, want the dev UI", c.CodecServer.AllowOrigins)
	}
}

func TestStopTimeout(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    time.Duration
		loadErr bool
	}{
		{"default", nil, plugin.DefaultStopTimeout, false},
		{"set", map[string]string{"MEMAGENT_STOP_TIMEOUT": "2m"}, 2 * time.Minute, false},
		{"not a duration", map[string]string{"MEMAGENT_STOP_TIMEOUT": "120"}, 0, true},
		{"zero", map[string]string{"MEMAGENT_STOP_TIMEOUT": "0s"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(env(tt.env))
			if tt.loadErr {
				if err == nil || !strings.Contains(err.Error(), "MEMAGENT_STOP_TIMEOUT") {
					t.Fatalf("FromEnv error = %v, want one naming MEMAGENT_STOP_TIMEOUT", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.WorkerStopTimeout(); got != tt.want {
				t.Errorf("WorkerStopTimeout() = %v, want %v", got, tt.want)
			}
		})
	}
	if got := (Config{}).WorkerStopTimeout(); got != plugin.DefaultStopTimeout {
		t.Errorf("zero Config's WorkerStopTimeout() = %v, want the default %v", got, plugin.DefaultStopTimeout)
	}
	c := Default()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.DurationVar(&c.StopTimeout, "stop-timeout", c.StopTimeout, "")
	if err := fs.Parse([]string{"--stop-timeout", "-1s"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--stop-timeout") {
		t.Errorf("Validate() with a negative stop timeout = %v, want an error naming --stop-timeout", err)
	}
}

// writeCert writes a self-signed certificate and its key as PEM files.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "memagent-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestTemporalConnection(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	const apiKey = "tmprl-secret-api-key"
	tests := []struct {
		name      string
		env       map[string]string
		wantTLS   bool
		wantCerts int
		wantRoots bool
		wantCreds bool
		wantErr   string
	}{
		{"plaintext by default", nil, false, 0, false, false, ""},
		{"TLS with system roots", map[string]string{"TEMPORAL_TLS": "true"}, true, 0, false, false, ""},
		{"mTLS with a CA", map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": cert, "TEMPORAL_TLS_CLIENT_KEY_PATH": key, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": cert, "TEMPORAL_TLS_SERVER_NAME": "temporal.internal"}, true, 1, true, false, ""},
		{"API key turns TLS on", map[string]string{"TEMPORAL_API_KEY": apiKey}, true, 0, false, true, ""},
		{"certificate without key", map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": cert}, false, 0, false, false, "TEMPORAL_TLS_CLIENT_KEY_PATH (or their _DATA forms) together"},
		{"missing CA file", map[string]string{"TEMPORAL_TLS_SERVER_CA_CERT_PATH": filepath.Join(dir, "nope.pem")}, false, 0, false, false, "TEMPORAL_TLS_SERVER_CA_CERT_PATH"},
		{"CA file without PEM", map[string]string{"TEMPORAL_TLS_SERVER_CA_CERT_PATH": notPEM}, false, 0, false, false, "no PEM certificate"},
		{"key that is not a key", map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": cert, "TEMPORAL_TLS_CLIENT_KEY_PATH": notPEM}, false, 0, false, false, "TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			conn, creds, err := c.TemporalConnection()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("TemporalConnection() error = %v, want one containing %q", err, tt.wantErr)
				}
				if verr := c.Validate(); verr == nil || !strings.Contains(verr.Error(), tt.wantErr) {
					t.Errorf("Validate() = %v, want the same error", verr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (conn.TLS != nil) != tt.wantTLS {
				t.Fatalf("TLS on = %v, want %v", conn.TLS != nil, tt.wantTLS)
			}
			if conn.TLS != nil {
				if len(conn.TLS.Certificates) != tt.wantCerts || (conn.TLS.RootCAs != nil) != tt.wantRoots {
					t.Errorf("TLS: %d client certificates, custom roots %v; want %d, %v", len(conn.TLS.Certificates), conn.TLS.RootCAs != nil, tt.wantCerts, tt.wantRoots)
				}
				if conn.TLS.ServerName != tt.env["TEMPORAL_TLS_SERVER_NAME"] {
					t.Errorf("ServerName = %q, want %q", conn.TLS.ServerName, tt.env["TEMPORAL_TLS_SERVER_NAME"])
				}
			}
			if (creds != nil) != tt.wantCreds {
				t.Errorf("credentials set = %v, want %v", creds != nil, tt.wantCreds)
			}
		})
	}
	if _, err := FromEnv(env(map[string]string{"TEMPORAL_TLS": "yes please"})); err == nil || !strings.Contains(err.Error(), "TEMPORAL_TLS") {
		t.Errorf("FromEnv(TEMPORAL_TLS=yes please) = %v, want an error naming TEMPORAL_TLS", err)
	}
}

func TestChunkCacheMB(t *testing.T) {
	for _, tt := range []struct {
		v       string
		want    int
		loadErr bool
	}{{"", 0, false}, {"256", 256, false}, {"-1", -1, false}, {"-2", 0, true}, {"lots", 0, true}} {
		e := map[string]string{}
		if tt.v != "" {
			e["MEMAGENT_CHUNK_CACHE_MB"] = tt.v
		}
		c, err := FromEnv(env(e))
		if tt.loadErr {
			if err == nil || !strings.Contains(err.Error(), "MEMAGENT_CHUNK_CACHE_MB") {
				t.Errorf("%q: FromEnv error = %v, want one naming MEMAGENT_CHUNK_CACHE_MB", tt.v, err)
			}
			continue
		}
		if err != nil || c.ChunkCacheMB != tt.want {
			t.Errorf("%q: ChunkCacheMB = %d, %v; want %d", tt.v, c.ChunkCacheMB, err, tt.want)
		}
	}
}

// Azure OpenAI is configured with its own variables: the endpoint and key
// from AZURE_OPENAI_*, the version from OPENAI_API_VERSION, the deployment
// as MEMAGENT_MODEL and the context length as MEMAGENT_MODEL_CONTEXT.
func TestAzureFromEnv(t *testing.T) {
	azure := map[string]string{
		"MEMAGENT_MODEL_API": "azure", "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com",
		"AZURE_OPENAI_API_KEY": "azure-key", "OPENAI_API_VERSION": "2025-04-01-preview",
		"MEMAGENT_MODEL": "qa-prod", "MEMAGENT_MODEL_CONTEXT": "128000", "MEMAGENT_MODEL_FAMILY": "o3-mini",
		// Not Azure's: ignored.
		"OPENAI_API_KEY": "openai-key", "OPENAI_BASE_URL": "http://vllm:8000/v1",
	}
	c, err := FromEnv(env(azure))
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelAPI != "azure" || strings.Join(c.ModelURLs, ",") != "https://res.openai.azure.com" || c.ModelAPIKey != "azure-key" ||
		c.ModelAPIVersion != "2025-04-01-preview" || c.Model != "qa-prod" || c.ModelContext != 128000 ||
		c.ModelFamily != "o3-mini" || !c.ModelConfigured {
		t.Errorf("got API %q, URL %q, key %q, version %q, model %q, context %d, family %q, configured %v",
			c.ModelAPI, c.ModelURLs, c.ModelAPIKey, c.ModelAPIVersion, c.Model, c.ModelContext, c.ModelFamily, c.ModelConfigured)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}

	for _, tc := range []struct {
		name    string
		drop    []string
		set     map[string]string
		wantErr string
	}{
		{"no endpoint", []string{"AZURE_OPENAI_ENDPOINT"}, nil, "AZURE_OPENAI_ENDPOINT"},
		{"endpoint naming a deployment", nil, map[string]string{"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com/openai/deployments/gpt-4o"}, "MEMAGENT_MODEL"},
		{"no deployment", []string{"MEMAGENT_MODEL"}, nil, "MEMAGENT_MODEL"},
		{"no key", []string{"AZURE_OPENAI_API_KEY"}, nil, "AZURE_OPENAI_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range azure {
				e[k] = v
			}
			for _, k := range tc.drop {
				delete(e, k)
			}
			for k, v := range tc.set {
				e[k] = v
			}
			c, err := FromEnv(env(e))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate: %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}

	for _, e := range []map[string]string{{"MEMAGENT_MODEL_API": "bedrock"}, {"MEMAGENT_MODEL_CONTEXT": "lots"}, {"MEMAGENT_MODEL_CONTEXT": "-1"}} {
		if _, err := FromEnv(env(e)); err == nil {
			t.Errorf("FromEnv(%v): got nil error", e)
		}
	}
}

// The dev stack starts the simulator only when the environment names no
// model server.
func TestModelConfigured(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OPENAI_BASE_URL": ""}, false},
		{map[string]string{"OPENAI_API_KEY": "k", "MEMAGENT_MODEL": "m"}, false},
		{map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"}, true},
		{map[string]string{"MEMAGENT_MODEL_API": "azure"}, true},
	} {
		c, err := FromEnv(env(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		if c.ModelConfigured != tc.want {
			t.Errorf("FromEnv(%v).ModelConfigured = %v, want %v", tc.env, c.ModelConfigured, tc.want)
		}
	}
}

func TestModelFlags(t *testing.T) {
	c := Default()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--model-api", "azure", "--model-url", "https://res.openai.azure.com/", "--model", "dep", "--model-context", "8192"}); err != nil {
		t.Fatal(err)
	}
	c.ModelAPIKey = "k"
	if c.ModelAPI != "azure" || c.ModelContext != 8192 {
		t.Errorf("got API %q, context %d", c.ModelAPI, c.ModelContext)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	c.ModelURLs = []string{devaddr.ModelBaseURL}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "AZURE_OPENAI_ENDPOINT") {
		t.Errorf("Validate with the dev model URL: %v, want an error naming AZURE_OPENAI_ENDPOINT", err)
	}
	c.ModelAPI = "vertex"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "MEMAGENT_MODEL_API") {
		t.Errorf("Validate with an unknown API: %v, want an error naming MEMAGENT_MODEL_API", err)
	}
}

// TestTemporalSettingsFollowEnvconfig: the Temporal connection is read as
// the SDK's envconfig and the temporal CLI read it (a TOML profile, then
// the environment, with envconfig's names), and memagent's former TLS names
// are refused with the name to use.
func TestTemporalSettingsFollowEnvconfig(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	file := filepath.Join(dir, "temporal.toml")
	toml := "[profile.default]\naddress = \"default.example:7233\"\n\n" +
		"[profile.prod]\naddress = \"prod.example:7233\"\nnamespace = \"prod-ns\"\n" +
		"[profile.prod.tls]\nclient_cert_path = \"" + cert + "\"\nclient_key_path = \"" + key + "\"\nserver_name = \"prod.internal\"\n" +
		"[profile.prod.grpc_meta]\nx-team = \"legal\"\n"
	if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                       string
		env                        map[string]string
		addr, ns, certPath, server string
		tls                        bool
		meta                       string
	}{
		{"the file's default profile", map[string]string{"TEMPORAL_CONFIG_FILE": file}, "default.example:7233", "default", "", "", false, ""},
		{"a named profile", map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "prod"}, "prod.example:7233", "prod-ns", cert, "prod.internal", true, "legal"},
		{"the environment over the profile", map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "prod", "TEMPORAL_ADDRESS": "env.example:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			"env.example:7233", "env-ns", cert, "prod.internal", true, "legal"},
		{"envconfig's names", map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": cert, "TEMPORAL_TLS_CLIENT_KEY_PATH": key, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": cert},
			DevTemporalAddress, "default", cert, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.TemporalAddress != tc.addr || c.TemporalNamespace != tc.ns || c.TemporalTLSCert != tc.certPath || c.TemporalTLSServerName != tc.server {
				t.Errorf("address %q namespace %q cert %q server name %q; want %q %q %q %q", c.TemporalAddress, c.TemporalNamespace,
					c.TemporalTLSCert, c.TemporalTLSServerName, tc.addr, tc.ns, tc.certPath, tc.server)
			}
			conn, _, err := c.TemporalConnection()
			if err != nil {
				t.Fatal(err)
			}
			if (conn.TLS != nil) != tc.tls {
				t.Errorf("TLS on = %v, want %v", conn.TLS != nil, tc.tls)
			}
			var meta string
			if h := c.TemporalHeaders(); h != nil {
				m, _ := h.GetHeaders(context.Background())
				meta = m["x_team"] + m["x-team"]
			}
			if meta != tc.meta {
				t.Errorf("gRPC metadata x-team = %q, want %q", meta, tc.meta)
			}
		})
	}
	if _, err := FromEnv(env(map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "nope"})); err == nil || !strings.Contains(err.Error(), "TEMPORAL_PROFILE") {
		t.Errorf("an unknown profile: %v, want an error naming TEMPORAL_PROFILE", err)
	}
}

// TestDeployment: Worker Versioning is off unless a deployment name is
// set, and what Temporal would refuse (or a build id alone, or a versioned
// worker without a build id) fails Validate naming the variables. The
// binary's version as the build id is buildinfo's TestDeployment.
func TestDeployment(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		wantBuild string
		wantErr   string
	}{
		{"off", nil, "", ""},
		{"set", map[string]string{"TEMPORAL_DEPLOYMENT_NAME": "memagent", "TEMPORAL_WORKER_BUILD_ID": "1.4.0"}, "1.4.0", ""},
		{"no version at all", map[string]string{"TEMPORAL_DEPLOYMENT_NAME": "memagent"}, "", "carries no version"},
		{"build id alone", map[string]string{"TEMPORAL_WORKER_BUILD_ID": "1.4.0"}, "1.4.0", "no deployment name"},
		{"dot in the name", map[string]string{"TEMPORAL_DEPLOYMENT_NAME": "memagent.prod", "TEMPORAL_WORKER_BUILD_ID": "1"}, "1", "'.' and ':'"},
		{"reserved build id", map[string]string{"TEMPORAL_DEPLOYMENT_NAME": "memagent", "TEMPORAL_WORKER_BUILD_ID": "__x"}, "__x", "reserves"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := buildinfo.BinaryVersion(); v != "" {
				t.Fatalf("the test binary carries version %q of its own: the cases without one cannot run", v)
			}
			c, err := FromEnv(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.WorkerBuildID(); got != tt.wantBuild {
				t.Errorf("WorkerBuildID() = %q, want %q", got, tt.wantBuild)
			}
			err = c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "TEMPORAL_DEPLOYMENT_NAME")):
				t.Errorf("Validate() = %v, want an error saying %q and naming TEMPORAL_DEPLOYMENT_NAME", err, tt.wantErr)
			}
		})
	}
}

// TestFormerTLSNamesRefused: memagent's former names of the TLS variables
// are refused at start with the name to use, alone or beside the new one
// (ignoring one would turn TLS off without a word).
func TestFormerTLSNamesRefused(t *testing.T) {
	for old, now := range map[string]string{
		"TEMPORAL_TLS_CERT": "TEMPORAL_TLS_CLIENT_CERT_PATH",
		"TEMPORAL_TLS_KEY":  "TEMPORAL_TLS_CLIENT_KEY_PATH",
		"TEMPORAL_TLS_CA":   "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
	} {
		for _, e := range []map[string]string{{old: "/c.pem"}, {old: "/c.pem", now: "/c.pem"}} {
			_, err := FromEnv(env(e))
			if err == nil || !strings.Contains(err.Error(), old+" is no longer read: name it "+now) {
				t.Errorf("FromEnv(%v) = %v, want the refusal naming %s", e, err, now)
			}
		}
	}
}

func TestTemporalCompression(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    string // the type of ConnectionOptions.GrpcCompression; "<nil>" is the SDK's default, gzip
		wantErr string
	}{
		{"default: the SDK's gzip", nil, "<nil>", ""},
		{"gzip", map[string]string{"MEMAGENT_TEMPORAL_COMPRESSION": "gzip"}, "*internal.GrpcCompressionGzip", ""},
		{"none", map[string]string{"MEMAGENT_TEMPORAL_COMPRESSION": "none"}, "*internal.GrpcCompressionNone", ""},
		{"case and spaces", map[string]string{"MEMAGENT_TEMPORAL_COMPRESSION": " None "}, "*internal.GrpcCompressionNone", ""},
		{"unknown", map[string]string{"MEMAGENT_TEMPORAL_COMPRESSION": "zstd"}, "", `MEMAGENT_TEMPORAL_COMPRESSION "zstd": use gzip (the default) or none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("FromEnv() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			conn, _, err := c.TemporalConnection()
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%T", conn.GrpcCompression); got != tc.want {
				t.Errorf("GrpcCompression = %s, want %s", got, tc.want)
			}
		})
	}
}
