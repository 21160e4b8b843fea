package inference

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
	// member, when set, is a JSON member the transport adds to the
	// request's body (`"priority":-1`): go-openai's chat request has no
	// field for a server's own extensions. Set before the request is sent.
	member string
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

// recordingTransport passes requests to base, with the exchange's member
// added to the body when it has one, and records each response into the
// request's exchange, if it has one.
type recordingTransport struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex != nil && ex.member != "" && req.Body != nil && req.Body != http.NoBody {
		r, err := withMember(req, ex.member)
		if err != nil {
			return nil, err
		}
		req = r
	}
	resp, err := t.base.RoundTrip(req)
	if resp != nil && ex != nil {
		ex.record(resp)
	}
	return resp, err
}

// withMember is a copy of req whose JSON body has member added. A
// RoundTripper must not modify the request it is given, so the copy gets a
// body of its own.
func withMember(req *http.Request, member string) (*http.Request, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	body = addBodyField(body, member)
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r, nil
}
