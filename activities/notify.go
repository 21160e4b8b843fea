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

// Defaults of Activities.NotifyAttemptTime and NotifyAttempts.
const (
	notifyTimeout  = 30 * time.Second
	notifyAttempts = 1
)

// notifyChanges POSTs a batch's change notification to its notify_url as
// JSON, once per attempt (the batch's, and a validation's once it marks
// the batch's gated report). A 2xx is delivered. Whatever else happens (a
// closed port, an open one that speaks no HTTP or never answers, any
// status other than 2xx, an address the policy refuses), the attempt
// ends the same way: NotifyAttemptTime after it began (the POST's budget,
// and the time an undelivered attempt is padded to), with the same error,
// "notify <scheme://host>: not delivered", memagent.NotifyRejected,
// retryable on every attempt before the NotifyAttempts-th (by default
// there is one attempt) and non-retryable on that one.
// The caller (the workflow's history and result, the batch's report and
// search attributes) therefore learns whether it was delivered and
// nothing else: never the status code, the body, the network error, how
// long the host took or whether a retry might help, so that notify_url is
// nobody's port scanner. Only a host off MEMAGENT_NOTIFY_HOSTS, which the
// caller's own URL names, is refused at once. The worker's log says what
// the host answered. The URL may carry a token in its userinfo, path or
// query: it is never logged nor put in an error, only its scheme and
// host. The Idempotency-Key header (the batch's workflow and run id, or
// the input's key: a gated report's marking has its own) lets a receiver
// drop the repeat of a POST whose answer was lost.
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
	key := in.IdempotencyKey
	if key == "" {
		key = in.Notification.WorkflowID + "/" + in.Notification.RunID
	}
	req.Header.Set("Idempotency-Key", key)
	budget := a.notifyBudget()
	client := a.Notifier
	if client == nil {
		client = notify.NewClient(a.NotifyPolicy, budget)
		defer client.CloseIdleConnections()
	}
	attempt := int32(1)
	if activity.IsActivity(ctx) {
		attempt = activity.GetInfo(ctx).Attempt
	}
	log := a.logger().With("notify_host", host, "attempt", attempt)
	// The budget bounds the whole exchange, whatever client is used: a
	// host that accepts and never answers ends the attempt when a closed
	// port's attempt ends.
	rctx, cancel := context.WithDeadline(ctx, began.Add(budget))
	defer cancel()
	resp, err := client.Do(req.WithContext(rctx))
	if err != nil {
		// A *url.Error quotes the whole URL: keep only what it wraps.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if notify.Refused(err) {
			log.WarnContext(ctx, "notify_url refused: its address is loopback, link-local or private and not in MEMAGENT_NOTIFY_ALLOW_NETS")
		} else {
			log.WarnContext(ctx, "notify_url not reached", "err", err)
		}
		return a.undelivered(ctx, began, host, attempt)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if code := resp.StatusCode; code < 200 || code >= 300 {
		log.WarnContext(ctx, "notify_url answered with a status other than 2xx", "status", code)
		return a.undelivered(ctx, began, host, attempt)
	}
	log.InfoContext(ctx, "batch changes notified", "status", resp.StatusCode)
	return nil
}

// notifyBudget is NotifyAttemptTime or its default.
func (a *Activities) notifyBudget() time.Duration {
	if a.NotifyAttemptTime > 0 {
		return a.NotifyAttemptTime
	}
	return notifyTimeout
}

// undelivered is the error of an attempt that did not deliver, returned
// NotifyAttemptTime after the attempt began: whatever the host did, every
// such attempt looks the same to the caller, and only the attempt's
// number (not the host) decides whether Temporal tries again.
func (a *Activities) undelivered(ctx context.Context, began time.Time, host string, attempt int32) error {
	if wait := time.Until(began.Add(a.notifyBudget())); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	msg := fmt.Sprintf("notify %s: not delivered (the worker's log says why)", host)
	attempts := a.NotifyAttempts
	if attempts <= 0 {
		attempts = notifyAttempts
	}
	if int(attempt) < attempts {
		return temporal.NewApplicationError(msg, api.ErrNotifyRejected)
	}
	return temporal.NewNonRetryableApplicationError(msg, api.ErrNotifyRejected, nil)
}
