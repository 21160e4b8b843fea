package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// notifyTimeout bounds one POST to a notify_url when Activities.Notifier
// is not set; the workflow's start-to-close bounds it too.
const notifyTimeout = 30 * time.Second

// notifyClient is the default client of NotifyChanges: it follows no
// redirect (a 3xx is the receiver's misconfiguration, and a redirect
// could move the POST to another host) and records nothing of the URL.
func notifyClient() *http.Client {
	return &http.Client{
		Timeout:       notifyTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// notifyChanges POSTs a batch's change notification to its notify_url as
// JSON, once per attempt. A 2xx is success; a 3xx or a 4xx other than 408
// and 429 is memagent.NotifyRejected (non-retryable); anything else (5xx,
// 408, 429, a connection error, a timeout) is returned for Temporal to
// retry. The URL may carry a token in its userinfo, path or query: it is
// never logged nor put in an error, only its scheme and host. The
// Idempotency-Key header (the batch's workflow and run id) lets a receiver
// drop the repeat of a POST whose answer was lost.
func (a *Activities) notifyChanges(ctx context.Context, in actwire.NotifyInput) error {
	if err := api.CheckNotifyURL(in.URL); err != nil {
		return badInput(err)
	}
	host := api.NotifyHost(in.URL)
	body, err := json.Marshal(in.Notification)
	if err != nil {
		return badInput(fmt.Errorf("notification: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, bytes.NewReader(body))
	if err != nil {
		return badInput(fmt.Errorf("notify %s: the URL does not make a request", host))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "memagent-notify/1")
	req.Header.Set("Idempotency-Key", in.Notification.WorkflowID+"/"+in.Notification.RunID)
	client := a.Notifier
	if client == nil {
		client = notifyClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		// A *url.Error quotes the whole URL: keep only what it wraps.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("notify %s: %w", host, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	attempt := int32(1)
	if activity.IsActivity(ctx) {
		attempt = activity.GetInfo(ctx).Attempt
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		a.logger().InfoContext(ctx, "batch changes notified", "notify_host", host, "status", code, "attempt", attempt)
		return nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return fmt.Errorf("notify %s: answered %d", host, code)
	default:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("notify %s: answered %d, which a retry would not change: check notify_url", host, code), api.ErrNotifyRejected, nil)
	}
}
