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
	"github.com/memagent/memagent/internal/notify"
)

// notifyTimeout bounds one POST to a notify_url when Activities.Notifier
// is not set; the workflow's start-to-close bounds it too.
const notifyTimeout = 30 * time.Second

// notifyChanges POSTs a batch's change notification to its notify_url as
// JSON, once per attempt. A 2xx is delivered. Whatever else happens, the
// caller learns only that it was not delivered and whether Temporal
// retries it: never the status code, the body, the network error or how
// long the host took (an attempt that does not deliver ends no sooner
// than NotifyAttemptTime after it began), so that notify_url is nobody's
// port scanner. A 3xx or a 4xx other than 408 and 429, and an address the
// policy refuses (NotifyPolicy, checked on each address dialled), are
// memagent.NotifyRejected (non-retryable); anything else is retried. The
// worker's log says what the host answered. The URL may carry a token in
// its userinfo, path or query: it is never logged nor put in an error,
// only its scheme and host. The Idempotency-Key header (the batch's
// workflow and run id) lets a receiver drop the repeat of a POST whose
// answer was lost.
func (a *Activities) notifyChanges(ctx context.Context, in actwire.NotifyInput) error {
	began := time.Now()
	if err := api.CheckNotifyURL(in.URL); err != nil {
		return badInput(err)
	}
	host := api.NotifyHost(in.URL)
	u, err := url.Parse(in.URL)
	if err != nil {
		return badInput(fmt.Errorf("notify %s: the URL does not parse", host))
	}
	if !a.NotifyPolicy.AllowHost(u.Hostname()) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("notify %s: not delivered: the worker notifies only the hosts its operator allows (MEMAGENT_NOTIFY_HOSTS)", host), api.ErrNotifyRejected, nil)
	}
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
		client = notify.NewClient(a.NotifyPolicy, notifyTimeout)
	}
	attempt := int32(1)
	if activity.IsActivity(ctx) {
		attempt = activity.GetInfo(ctx).Attempt
	}
	log := a.logger().With("notify_host", host, "attempt", attempt)
	resp, err := client.Do(req)
	if err != nil {
		// A *url.Error quotes the whole URL: keep only what it wraps.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if notify.Refused(err) {
			log.WarnContext(ctx, "notify_url refused: its address is loopback, link-local or private and not in MEMAGENT_NOTIFY_ALLOW_NETS")
			return a.undelivered(ctx, began, host, false)
		}
		log.WarnContext(ctx, "notify_url not reached", "err", err)
		return a.undelivered(ctx, began, host, true)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		log.InfoContext(ctx, "batch changes notified", "status", code)
		return nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		log.WarnContext(ctx, "notify_url answered with an error; retrying", "status", code)
		return a.undelivered(ctx, began, host, true)
	default:
		log.WarnContext(ctx, "notify_url answered with a status a retry would not change", "status", code)
		return a.undelivered(ctx, began, host, false)
	}
}

// undelivered is the error of an attempt that did not deliver, returned
// no sooner than NotifyAttemptTime after the attempt began: whatever the
// host did, every such attempt looks the same to the caller.
func (a *Activities) undelivered(ctx context.Context, began time.Time, host string, retry bool) error {
	floor := a.NotifyAttemptTime
	if floor == 0 {
		floor = notifyTimeout
	}
	if wait := time.Until(began.Add(floor)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	if retry {
		return fmt.Errorf("notify %s: not delivered; retrying", host)
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("notify %s: not delivered: check notify_url (the worker's log says why)", host), api.ErrNotifyRejected, nil)
}
