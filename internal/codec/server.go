package codec

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"

	"go.temporal.io/sdk/converter"

	redact "github.com/memagent/memagent/internal/secret"
)

// DefaultMaxBodyBytes bounds a request's body: the Temporal UI sends a
// page of payloads at a time, far below it.
const DefaultMaxBodyBytes = 4 << 20

// ServerOptions configure the codec server endpoint.
type ServerOptions struct {
	// Token, when set, must arrive as "Authorization: Bearer <token>" (the
	// Temporal UI forwards the user's token); requests without it get 401.
	Token redact.Value
	// AllowOrigins are the browser origins allowed to call the endpoint
	// with credentials, e.g. the Temporal UI's "http://127.0.0.1:8233",
	// matched exactly. "*" lets any origin call it, but without
	// credentials: a browser then sends no cookie or token of its user.
	AllowOrigins []string
	// AllowHosts are the Host names (with or without port) a request may
	// name besides loopback ones, when there is no Token. Without a token
	// a request for any other host is refused, so that a web page that
	// points a name of its own at 127.0.0.1 (DNS rebinding) cannot use
	// the endpoint.
	AllowHosts []string
	// AllowEncode turns on POST …/encode, which encrypts whatever it is
	// given with the worker's keys; off, only …/decode answers.
	AllowEncode bool
	// MaxBodyBytes bounds a request's body; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// NewServer returns the codec server: POST {prefix}/decode (and, with
// AllowEncode, {prefix}/encode) with JSON payloads, the shape the Temporal
// UI and CLI expect, with CORS for the UI's origin, a host check without a
// token, an authorization check with one, and bounded bodies.
func NewServer(c converter.PayloadCodec, opts ServerOptions) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(c)
	maxBody := opts.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			h := w.Header()
			h.Add("Vary", "Origin")
			switch {
			case exactOrigin(origin, opts.AllowOrigins):
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Credentials", "true")
			case anyOrigin(opts.AllowOrigins):
				h.Set("Access-Control-Allow-Origin", "*")
			}
			if h.Get("Access-Control-Allow-Origin") != "" {
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace")
				h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			}
		}
		if opts.Token == "" && !allowedHost(r.Host, opts.AllowHosts) {
			http.Error(w, fmt.Sprintf("host %q is not served: without a codec token only loopback names (or MEMAGENT_CODEC_HOSTS) are", r.Host), http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if opts.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(opts.Token)) != 1 {
				http.Error(w, "unauthorized: send Authorization: Bearer <codec token>", http.StatusUnauthorized)
				return
			}
		}
		if strings.HasSuffix(r.URL.Path, "/encode") && !opts.AllowEncode {
			http.Error(w, "encode is off on this codec server: the operator turns it on with MEMAGENT_CODEC_ENCODE=true", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				http.Error(w, "send the payloads as Content-Type: application/json", http.StatusUnsupportedMediaType)
				return
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			r.Body.Close()
			if err != nil {
				http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
				return
			}
			if int64(len(body)) > maxBody {
				http.Error(w, fmt.Sprintf("body over %d bytes", maxBody), http.StatusRequestEntityTooLarge)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		inner.ServeHTTP(w, r)
	})
}

func exactOrigin(origin string, list []string) bool {
	for _, o := range list {
		if o != "*" && strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

func anyOrigin(list []string) bool {
	for _, o := range list {
		if o == "*" {
			return true
		}
	}
	return false
}

// allowedHost reports a Host header naming a loopback address or name, or
// one of extra.
func allowedHost(hostport string, extra []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	for _, e := range extra {
		if strings.EqualFold(e, hostport) || strings.EqualFold(e, host) {
			return true
		}
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
