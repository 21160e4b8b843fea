package inference

import (
	"context"
	"net/http"
	"sync"
)

// go-openai does not expose response headers on errors, so the client's
// transport records the status and Retry-After of each response into an
// exchange that Complete puts in the request's context.

type exchangeKey struct{}

// exchange holds what the transport saw of one logical request. With
// redirects it holds the last response.
type exchange struct {
	mu         sync.Mutex
	status     int
	retryAfter string
}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

func (ex *exchange) record(resp *http.Response) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.status = resp.StatusCode
	ex.retryAfter = retryAfterValue(resp.Header)
}

func (ex *exchange) statusCode() int {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.status
}

func (ex *exchange) retryAfterHeader() string {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.retryAfter
}

// recordingTransport passes requests to base unchanged and records each
// response into the request's exchange, if it has one.
type recordingTransport struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if resp != nil {
		if ex, ok := req.Context().Value(exchangeKey{}).(*exchange); ok {
			ex.record(resp)
		}
	}
	return resp, err
}
