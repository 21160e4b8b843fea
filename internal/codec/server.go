package codec

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"go.temporal.io/sdk/converter"
)

// ServerOptions configure the codec server endpoint.
type ServerOptions struct {
	// Token, when set, must arrive as "Authorization: Bearer <token>" (the
	// Temporal UI forwards the user's token); requests without it get 401.
	Token string
	// AllowOrigins are the browser origins allowed to call the endpoint,
	// e.g. the Temporal UI's "http://127.0.0.1:8233"; "*" allows any.
	AllowOrigins []string
}

// NewServer returns the codec server: POST {prefix}/encode and
// {prefix}/decode with JSON payloads, the shape the Temporal UI and CLI
// expect, with CORS for the UI's origin and an authorization check.
func NewServer(c converter.PayloadCodec, opts ServerOptions) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && allowed(origin, opts.AllowOrigins) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Add("Vary", "Origin")
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
		inner.ServeHTTP(w, r)
	})
}

func allowed(origin string, list []string) bool {
	for _, o := range list {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}
