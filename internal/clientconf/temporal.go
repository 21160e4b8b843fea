package clientconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/memagent/memagent/internal/secret"
)

// Temporal is how a program reaches Temporal: read as the Temporal SDK's
// contrib/envconfig and the temporal CLI read it, a profile of the TOML
// file (TEMPORAL_CONFIG_FILE, default ~/.config/temporalio/temporal.toml;
// TEMPORAL_PROFILE, default "default") overridden by TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS,
// TEMPORAL_TLS_CLIENT_CERT_PATH (or _DATA), TEMPORAL_TLS_CLIENT_KEY_PATH
// (or _DATA), TEMPORAL_TLS_SERVER_CA_CERT_PATH (or _DATA),
// TEMPORAL_TLS_SERVER_NAME, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION,
// TEMPORAL_CLIENT_AUTHORITY and TEMPORAL_GRPC_META_*. memagent's former
// names TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY and TEMPORAL_TLS_CA are refused
// with the name to use (CHANGELOG.md). The worker's configuration embeds
// it, so that both read the connection in one way.
type Temporal struct {
	TemporalAddress   string
	TemporalNamespace string
	// TemporalTLS turns on TLS to the frontend with the system's roots
	// (TEMPORAL_TLS); setting any of the TLS files or the server name, or an
	// API key, turns it on too.
	TemporalTLS bool
	// TemporalTLSCert and TemporalTLSKey are the paths of a PEM client
	// certificate and key for mTLS (TEMPORAL_TLS_CLIENT_CERT_PATH,
	// TEMPORAL_TLS_CLIENT_KEY_PATH).
	TemporalTLSCert, TemporalTLSKey string
	// TemporalTLSCA is the path of PEM roots to verify the frontend with
	// instead of the system's (TEMPORAL_TLS_SERVER_CA_CERT_PATH).
	TemporalTLSCA string
	// TemporalProfile is the envconfig profile the fields above were read
	// from: it also carries what they cannot say (inline PEM data, host
	// verification, the :authority, gRPC metadata), which
	// TemporalConnection and TemporalHeaders apply.
	TemporalProfile secret.Opaque[envconfig.ClientConfigProfile]
	// TemporalTLSServerName overrides the name verified in the frontend's
	// certificate (TEMPORAL_TLS_SERVER_NAME).
	TemporalTLSServerName string
	// TemporalAPIKey is sent as a bearer token on every Temporal call
	// (TEMPORAL_API_KEY), as Temporal Cloud's API keys are; never printed.
	TemporalAPIKey secret.Value
	// ClientIdentity is the identity a client dials Temporal with, which
	// Temporal records in the history of what it sends; empty means the
	// SDK's default (pid@host). The review desk and the starter's sign-off
	// commands set it, so that a decision's history names the program
	// (and the reviewer) it came through. No flag or environment variable.
	ClientIdentity string
	// TemporalCompression is the compression of the gRPC messages this
	// client sends Temporal (MEMAGENT_TEMPORAL_COMPRESSION): "gzip", the
	// SDK's default (also when empty), or "none". A worker next to its
	// frontend spends CPU on gzip for no gain: with "none" neither it nor
	// the frontend compresses (the frontend answers in the request's
	// encoding).
	TemporalCompression string
}

// TemporalCompressionEnv names the variable of TemporalCompression.
const TemporalCompressionEnv = "MEMAGENT_TEMPORAL_COMPRESSION"

// grpcCompression is TemporalCompression as the SDK takes it; ok is false
// for a value it is not.
func grpcCompression(v string) (c client.GrpcCompression, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "gzip":
		return &client.GrpcCompressionGzip{}, true
	case "none", "off", "identity":
		return &client.GrpcCompressionNone{}, true
	}
	return nil, false
}

// envLookup gives envconfig the variables get sees: set and empty is unset,
// as for every other setting here.
type envLookup func(names ...string) (string, bool)

func (e envLookup) LookupEnv(name string) (string, bool) { return e(name) }

// Environ lists the TEMPORAL_GRPC_META_* variables, from this process's
// environment (a map in tests has none).
func (e envLookup) Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TEMPORAL_GRPC_META_") {
			if v, ok := e(name); ok {
				out = append(out, name+"="+v)
			}
		}
	}
	return out
}

// formerTLS are memagent's former names of envconfig's TLS variables,
// refused at start: a setting silently ignored would turn TLS off.
var formerTLS = []struct{ old, now string }{
	{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CLIENT_CERT_PATH"},
	{"TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CLIENT_KEY_PATH"},
	{"TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"},
}

// LoadTemporal reads the Temporal connection the way envconfig does (the
// profile of the config file, then the environment, get being
// settings.FirstSet of the lookup), after refusing memagent's former
// names. Fields the profile leaves empty keep their values.
func (t *Temporal) LoadTemporal(get func(names ...string) (string, bool)) error {
	for _, d := range formerTLS {
		if _, ok := get(d.old); ok {
			return fmt.Errorf("%s is no longer read: name it %s, as the Temporal SDKs and CLI do", d.old, d.now)
		}
	}
	lookup := envLookup(get)
	p, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{EnvLookup: lookup})
	if err != nil {
		return fmt.Errorf("Temporal connection settings (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE, TEMPORAL_*): %w", err)
	}
	if v, ok := get("TEMPORAL_TLS"); ok {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("TEMPORAL_TLS %q: use true or false", v)
		}
	}
	if v, ok := get(TemporalCompressionEnv); ok {
		if _, ok := grpcCompression(v); !ok {
			return fmt.Errorf("%s %q: use gzip (the default) or none", TemporalCompressionEnv, v)
		}
		t.TemporalCompression = v
	}
	t.TemporalProfile.V = p
	if p.Address != "" {
		t.TemporalAddress = p.Address
	}
	if p.Namespace != "" {
		t.TemporalNamespace = p.Namespace
	}
	t.TemporalAPIKey = secret.Value(p.APIKey)
	if pt := p.TLS; pt != nil {
		t.TemporalTLS = !pt.Disabled
		t.TemporalTLSCert, t.TemporalTLSKey, t.TemporalTLSCA = pt.ClientCertPath, pt.ClientKeyPath, pt.ServerCACertPath
		t.TemporalTLSServerName = pt.ServerName
	}
	return nil
}

// validateTemporal checks the settings that have to be set and the
// connection's TLS files.
func (t Temporal) validateTemporal() []error {
	var errs []error
	if t.TemporalAddress == "" {
		errs = append(errs, errors.New("temporal address is empty: set TEMPORAL_ADDRESS or --temporal-address"))
	}
	if t.TemporalNamespace == "" {
		errs = append(errs, errors.New("namespace is empty: set TEMPORAL_NAMESPACE or --namespace"))
	}
	return errs
}

// TemporalConnection returns the connection options and credentials of
// the Temporal client: TLS when TemporalTLS, a TLS file, the server name or
// an API key is set (an API key alone uses the system's roots), the client
// certificate for mTLS, and the API key as bearer credentials. Both are
// zero for a plaintext connection without credentials. Errors name the
// variable to fix, never a file's content or the key.
func (t Temporal) TemporalConnection() (client.ConnectionOptions, client.Credentials, error) {
	var (
		conn  client.ConnectionOptions
		creds client.Credentials
		pt    envconfig.ClientConfigTLS
	)
	if t.TemporalProfile.V.TLS != nil {
		pt = *t.TemporalProfile.V.TLS
	}
	conn.Authority = t.TemporalProfile.V.Authority
	if t.TemporalCompression != "" {
		comp, ok := grpcCompression(t.TemporalCompression)
		if !ok {
			return conn, nil, fmt.Errorf("%s %q: use gzip (the default) or none", TemporalCompressionEnv, t.TemporalCompression)
		}
		conn.GrpcCompression = comp
	}
	certData, keyData := len(pt.ClientCertData) > 0, len(pt.ClientKeyData) > 0
	if (t.TemporalTLSCert == "" && !certData) != (t.TemporalTLSKey == "" && !keyData) {
		return conn, nil, errors.New("Temporal mTLS needs both a client certificate and its key: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or their _DATA forms) together")
	}
	if t.temporalWantsTLS(pt) {
		tc, err := t.temporalTLS(pt)
		if err != nil {
			return conn, nil, err
		}
		conn.TLS = tc
	}
	if t.TemporalAPIKey != "" {
		creds = client.NewAPIKeyStaticCredentials(string(t.TemporalAPIKey))
	}
	return conn, creds, nil
}

// temporalWantsTLS reports whether the connection uses TLS: when asked, or
// when a TLS file, the server name or an API key is set, unless
// TEMPORAL_TLS=false (or tls.disabled in the profile) keeps it off, as
// envconfig does; flags turn it back on.
func (t Temporal) temporalWantsTLS(pt envconfig.ClientConfigTLS) bool {
	if pt.Disabled && !t.TemporalTLS {
		return false
	}
	return t.TemporalTLS || t.TemporalTLSCert != "" || len(pt.ClientCertData) > 0 || t.TemporalTLSCA != "" || len(pt.ServerCACertData) > 0 ||
		t.TemporalTLSServerName != "" || t.TemporalAPIKey != ""
}

// temporalTLS is the TLS configuration of the connection: the client
// certificate for mTLS and the roots to verify the frontend with, from
// the profile's data or from files.
func (t Temporal) temporalTLS(pt envconfig.ClientConfigTLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.TemporalTLSServerName, InsecureSkipVerify: pt.DisableHostVerification}
	switch {
	case len(pt.ClientCertData) > 0:
		cert, err := tls.X509KeyPair(pt.ClientCertData, pt.ClientKeyData)
		if err != nil {
			return nil, fmt.Errorf("Temporal client certificate (TEMPORAL_TLS_CLIENT_CERT_DATA, TEMPORAL_TLS_CLIENT_KEY_DATA): %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	case t.TemporalTLSCert != "":
		cert, err := tls.LoadX509KeyPair(t.TemporalTLSCert, t.TemporalTLSKey)
		if err != nil {
			return nil, fmt.Errorf("Temporal client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH): %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	roots, err := t.temporalRoots(pt)
	if err != nil {
		return nil, err
	}
	tc.RootCAs = roots
	return tc, nil
}

// temporalRoots are the roots the profile's CA data or the CA file hold,
// or nil for the system's.
func (t Temporal) temporalRoots(pt envconfig.ClientConfigTLS) (*x509.CertPool, error) {
	pem, from := pt.ServerCACertData, "TEMPORAL_TLS_SERVER_CA_CERT_DATA"
	if len(pem) == 0 && t.TemporalTLSCA != "" {
		var err error
		if pem, err = os.ReadFile(t.TemporalTLSCA); err != nil {
			return nil, fmt.Errorf("Temporal CA (TEMPORAL_TLS_SERVER_CA_CERT_PATH): %w", err)
		}
		from = t.TemporalTLSCA
	}
	if len(pem) == 0 {
		return nil, nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("Temporal CA (TEMPORAL_TLS_SERVER_CA_CERT_PATH): %s holds no PEM certificate", from)
	}
	return roots, nil
}

// TemporalHeaders is the gRPC metadata the profile adds to every Temporal
// call (TEMPORAL_GRPC_META_*, grpc_meta in the config file), or nil.
func (t Temporal) TemporalHeaders() interface {
	GetHeaders(context.Context) (map[string]string, error)
} {
	if len(t.TemporalProfile.V.GRPCMeta) == 0 {
		return nil
	}
	return fixedHeaders(t.TemporalProfile.V.GRPCMeta)
}

type fixedHeaders map[string]string

func (h fixedHeaders) GetHeaders(context.Context) (map[string]string, error) { return h, nil }
