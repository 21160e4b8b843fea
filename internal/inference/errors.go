package inference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/memagent/memagent/internal/contract"
)

// ErrorKind says what went wrong with a request, in terms a caller can act
// on. See [Error.Retryable] for which kinds may succeed on another attempt.
type ErrorKind string

// The kinds of failure. Each error is classified once, here, from the HTTP
// status code (and for a 400, the server's message), or from the transport
// error when there was no response.
const (
	// KindBadRequest: the server rejected the request (400, 422 and other
	// 4xx not listed below), or the Request itself is invalid.
	KindBadRequest ErrorKind = "bad_request"
	// KindPromptTooLong: the prompt plus max_tokens does not fit the model's
	// context (a 400 or 422 saying so, or a 413).
	KindPromptTooLong ErrorKind = "prompt_too_long"
	// KindAuth: 401 or 403; the API key is missing or wrong. Also a 429
	// saying the account's quota is used up (OpenAI's insufficient_quota),
	// which only a person can fix.
	KindAuth ErrorKind = "auth"
	// KindModelNotFound: 404, or a 400 saying the model does not exist.
	KindModelNotFound ErrorKind = "model_not_found"
	// KindRateLimited: 429.
	KindRateLimited ErrorKind = "rate_limited"
	// KindServer: 5xx, or a successful status with a body that is not a
	// completion.
	KindServer ErrorKind = "server"
	// KindTimeout: 408, the request timeout, or the caller's deadline.
	KindTimeout ErrorKind = "timeout"
	// KindConnection: no HTTP response (refused, reset, EOF, DNS failure).
	KindConnection ErrorKind = "connection"
	// KindCanceled: the caller's context was canceled before a response
	// arrived. It says nothing about the request, so it counts as
	// retryable: a worker shutting down must not turn a chunk into a
	// permanent failure.
	KindCanceled ErrorKind = "canceled"
)

// maxMessage caps Error.Message in bytes.
const maxMessage = 512

// maxRetryAfter caps Error.RetryAfter so a hostile or broken header cannot
// park a caller for years.
const maxRetryAfter = 24 * time.Hour

// Error is every error that Complete and Models return.
type Error struct {
	// Kind classifies the failure.
	Kind ErrorKind
	// StatusCode is the HTTP status, or zero when no response arrived.
	StatusCode int
	// RetryAfter is the server's Retry-After header (seconds or an HTTP
	// date) as a duration, or zero when absent.
	RetryAfter time.Duration
	// Message is the server's error message, or a description of the
	// transport failure. It is at most 512 bytes and never contains the API
	// key or text quoted from the prompt.
	Message string
	// Err is the transport or context error behind a KindTimeout,
	// KindConnection or KindCanceled failure, so that errors.Is works with
	// context.DeadlineExceeded and the like. It is nil for errors the
	// server reported in an HTTP response: those bodies may quote the
	// prompt and are not kept.
	Err error
}

// Error returns "model server: <kind> (HTTP <status>): <message>".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("model server: ")
	b.WriteString(string(e.Kind))
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether another attempt of the same request may
// succeed: true for rate limiting, server errors, timeouts, connection
// failures and cancellation; false for bad requests, prompts that are too
// long, auth failures and unknown models, which need a change by a person.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindRateLimited, KindServer, KindTimeout, KindConnection, KindCanceled:
		return true
	}
	return false
}

// classify turns an error from go-openai or net/http into an *Error.
func (c *Client) classify(ctx context.Context, err error, ex *exchange, prompt string) *Error {
	// A RequestError may wrap an APIError without a status, so look for
	// the RequestError first.
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0 {
		return c.statusError(reqErr.HTTPStatusCode, messageFromBody(reqErr.Body), ex.retryAfterHeader(), prompt)
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode > 0 {
		return c.statusError(apiErr.HTTPStatusCode, apiErr.Message, ex.retryAfterHeader(), prompt)
	}
	if isClientSideError(err) {
		return &Error{Kind: KindBadRequest, Message: c.sanitize("the request was refused before it was sent: "+err.Error(), prompt)}
	}
	kind := transportKind(ctx, err)
	e := &Error{Kind: kind, Message: c.sanitize(err.Error(), prompt), Err: err}
	if kind == KindServer {
		e.StatusCode = ex.statusCode()
		e.Err = nil
	}
	return e
}

func transportKind(ctx context.Context, err error) ErrorKind {
	// The caller's context decides first: go-openai and net/http do not
	// always wrap the context error.
	switch {
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return KindCanceled
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return KindTimeout
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
		return KindServer
	}
	// Refused, reset, broken pipe, EOF, DNS and TLS failures: nothing
	// usable came back.
	return KindConnection
}

// statusError classifies an HTTP error response.
func (c *Client) statusError(status int, msg, retryAfter, prompt string) *Error {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		msg = http.StatusText(status)
	}
	kind := kindForStatus(status, msg)
	msg = c.sanitize(msg, prompt)
	switch {
	case status == http.StatusNotFound && c.dialect == APIAzure:
		msg = capMessage(msg + " (check that MEMAGENT_MODEL names a deployment of the resource at AZURE_OPENAI_ENDPOINT, and OPENAI_API_VERSION)")
	case status == http.StatusNotFound && !strings.Contains(strings.ToLower(msg), "model"):
		msg = capMessage(msg + " (check that the base URL includes the API path, e.g. http://host:8000/v1)")
	}
	return &Error{
		Kind:       kind,
		StatusCode: status,
		RetryAfter: parseRetryAfter(retryAfter, time.Now()),
		Message:    msg,
	}
}

func kindForStatus(status int, msg string) ErrorKind {
	lower := strings.ToLower(msg)
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return KindPromptTooLong
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		if saysTooLong(lower) {
			return KindPromptTooLong
		}
		if status == http.StatusBadRequest && saysNoModel(lower) {
			return KindModelNotFound
		}
		return KindBadRequest
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusNotFound:
		return KindModelNotFound
	case status == http.StatusRequestTimeout:
		return KindTimeout
	case status == http.StatusTooManyRequests && saysNoQuota(lower):
		// OpenAI's insufficient_quota: no retry helps until someone
		// pays or raises the limit.
		return KindAuth
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status >= 500:
		return KindServer
	case status >= 400:
		return KindBadRequest
	}
	return KindServer
}

func saysTooLong(lower string) bool {
	for _, s := range []string{"maximum context length", "context length", "too long", "prompt is too long", "context window"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

func saysNoQuota(lower string) bool {
	return strings.Contains(lower, "exceeded your current quota") || strings.Contains(lower, "insufficient_quota")
}

func saysNoModel(lower string) bool {
	return strings.Contains(lower, "model") &&
		(strings.Contains(lower, "does not exist") || strings.Contains(lower, "not found"))
}

// messageFromBody finds the human-readable message in an error body: the
// nested OpenAI shape {"error":{"message":...}}, the flat shape of vLLM and
// SGLang {"object":"error","message":...}, {"error":"..."}, FastAPI's
// {"detail":...}, or else the body itself.
func messageFromBody(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		if len(v.Error) > 0 {
			var nested struct {
				Message json.RawMessage `json:"message"`
			}
			if json.Unmarshal(v.Error, &nested) == nil {
				if s := jsonText(nested.Message); s != "" {
					return s
				}
			}
			var s string
			if json.Unmarshal(v.Error, &s) == nil && s != "" {
				return s
			}
		}
		if s := jsonText(v.Message); s != "" {
			return s
		}
		if s := jsonText(v.Detail); s != "" {
			return s
		}
	}
	return strings.TrimSpace(string(body))
}

// jsonText renders a JSON value as message text: a string as itself, a list
// of strings joined, anything else as compact JSON.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, ", ")
	}
	return string(raw)
}

// promptWindow is the length of the prompt excerpts looked for in a server
// message, and promptStep the stride between them: any quotation of the
// prompt at least promptWindow+promptStep bytes long is caught.
const (
	promptWindow = 32
	promptStep   = 8
)

// sanitize makes a message safe to log and to show: it removes the API key,
// cuts the message where it starts quoting the prompt (vLLM's validation
// errors echo the request), and caps its length.
func (c *Client) sanitize(msg, prompt string) string {
	if len(msg) > 8*maxMessage {
		msg = contract.ClipUTF8(msg, 8*maxMessage)
	}
	if c.apiKey != "" {
		msg = strings.ReplaceAll(msg, c.apiKey, "[api key]")
	}
	if prompt != "" {
		if i := quotesPrompt(msg, prompt); i >= 0 {
			msg = strings.TrimSpace(contract.ClipUTF8(msg, i)) + " [prompt text withheld]"
		}
	}
	return capMessage(msg)
}

// quotesPrompt returns where msg starts quoting prompt, or -1.
func quotesPrompt(msg, prompt string) int {
	if len(prompt) < promptWindow {
		// Too short to be told apart from ordinary words of a message.
		if len(prompt) < promptStep {
			return -1
		}
		return strings.Index(msg, prompt)
	}
	for i := 0; i+promptWindow <= len(msg); i += promptStep {
		if strings.Contains(prompt, msg[i:i+promptWindow]) {
			// The quotation may have begun up to one stride earlier.
			return max(0, i-promptStep)
		}
	}
	return -1
}

func capMessage(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	const ellipsis = "..."
	return contract.ClipUTF8(msg, maxMessage-len(ellipsis)) + ellipsis
}

// parseRetryAfter reads a Retry-After value, either delay-seconds or an
// HTTP date, relative to now. Anything else, or a date in the past, is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || math.IsNaN(secs) {
			return 0
		}
		if secs >= maxRetryAfter.Seconds() {
			return maxRetryAfter
		}
		return time.Duration(secs * float64(time.Second))
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return min(max(t.Sub(now), 0), maxRetryAfter)
}
