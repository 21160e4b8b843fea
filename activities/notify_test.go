package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/notify"
)

func TestNotifyChanges(t *testing.T) {
	const secret = "s3cr3t-token"
	// Every status that does not deliver ends alike: whether a retry
	// would help is the host's to know, not the caller's.
	tests := []struct {
		name    string
		status  int
		wantErr bool
	}{
		{"ok", http.StatusOK, false},
		{"accepted", http.StatusAccepted, false},
		{"server error", http.StatusBadGateway, true},
		{"request timeout", http.StatusRequestTimeout, true},
		{"rate limited", http.StatusTooManyRequests, true},
		{"not found", http.StatusNotFound, true},
		{"unauthorized", http.StatusUnauthorized, true},
		{"redirect", http.StatusFound, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got api.ChangeNotification
			var key string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.URL.Query().Get("token") != secret {
					t.Errorf("request %s %s %q", r.Method, r.Header.Get("Content-Type"), r.URL.RawQuery)
				}
				key = r.Header.Get("Idempotency-Key")
				_ = json.NewDecoder(r.Body).Decode(&got)
				if tt.status == http.StatusFound {
					w.Header().Set("Location", "http://elsewhere.invalid/")
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			var logs bytes.Buffer
			a := &Activities{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
				NotifyPolicy: loopbackAllowed(t), NotifyAttemptTime: 500 * time.Millisecond}
			url := strings.Replace(srv.URL, "http://", "http://user:"+secret+"@", 1) + "/hook/" + secret + "?token=" + secret
			n := api.ChangeNotification{Name: "nightly", WorkflowID: "w", RunID: "r", Items: 20, Changes: &api.ChangeSummary{Changed: 5, Unchanged: 15}}
			err := a.notifyChanges(context.Background(), actwire.NotifyInput{URL: url, Notification: n})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got.Changes == nil || got.Changes.Changed != 5 || got.Name != "nightly" || key != "w/r" {
				t.Errorf("server got %+v, key %q", got, key)
			}
			if err != nil {
				var appErr *temporal.ApplicationError
				nonRetryable := errors.As(err, &appErr) && appErr.NonRetryable()
				if !nonRetryable || appErr.Type() != api.ErrNotifyRejected {
					t.Errorf("err = %v: want %s, non-retryable (one attempt by default)", err, api.ErrNotifyRejected)
				}
				if !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "not delivered") {
					t.Errorf("err = %v: want the scheme and host %s, not delivered", err, srv.URL)
				}
				if code, text := strconv.Itoa(tt.status), strings.ReplaceAll(errText(err), srv.URL, "HOST"); strings.Contains(text, code) || strings.Contains(text, "answered") {
					t.Errorf("err = %v: tells the caller what the host answered", err)
				}
			}
			for what, s := range map[string]string{"error": errText(err), "logs": logs.String()} {
				if strings.Contains(s, secret) {
					t.Errorf("%s leak the URL's secret: %s", what, s)
				}
			}
		})
	}
}

// TestNotifyIdempotencyKey: the input's key, when set (a gated report's
// marking), is the POST's Idempotency-Key; the batch's own is
// "<workflow id>/<run id>".
func TestNotifyIdempotencyKey(t *testing.T) {
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
	}))
	defer srv.Close()
	a := &Activities{Logger: slog.New(slog.DiscardHandler), NotifyPolicy: loopbackAllowed(t), NotifyAttemptTime: 5 * time.Second}
	n := api.ChangeNotification{Name: "nightly", WorkflowID: "w", RunID: "r", Validation: &api.ReportValidation{State: api.ReportFinal}}
	for _, in := range []actwire.NotifyInput{{URL: srv.URL, Notification: n}, {URL: srv.URL, Notification: n, IdempotencyKey: actwire.GateNotifyKey(n)}} {
		if err := a.notifyChanges(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"w/r", "w/r/validation"}; !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
}

// TestNotifyChangesConnectionError: a refused connection ends as any
// undelivered attempt does, and its error (which net/http makes quote the
// URL) keeps the secret out.
func TestNotifyChangesConnectionError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	url := srv.URL + "/hook?token=s3cr3t"
	srv.Close()
	a := &Activities{NotifyPolicy: loopbackAllowed(t), NotifyAttemptTime: time.Millisecond}
	err := a.notifyChanges(context.Background(), actwire.NotifyInput{URL: url})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrNotifyRejected || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("err = %v, want %s without the token", err, api.ErrNotifyRejected)
	}
	for _, bad := range []string{"ftp://host/x", "/relative", "http://"} {
		err := a.notifyChanges(context.Background(), actwire.NotifyInput{URL: bad})
		if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput {
			t.Errorf("notify_url %q: err = %v, want %s", bad, err, api.ErrBadInput)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var b strings.Builder
	for e := err; e != nil; e = errors.Unwrap(e) {
		io.WriteString(&b, e.Error()+"\n")
	}
	return b.String()
}

func loopbackAllowed(t *testing.T) notify.Policy {
	t.Helper()
	nets, err := notify.ParseNets([]string{"127.0.0.0/8", "::1/128"})
	if err != nil {
		t.Fatal(err)
	}
	return notify.Policy{AllowNets: nets}
}

// TestNotifyIsNoPortScanner performs the attack: notify_url pointed at the
// worker's own loopback ports. By default the worker dials no loopback,
// link-local or private address (checked on the address dialled, so a
// name that resolves there is refused too), and what the caller learns of
// any attempt is "not delivered", after the same time whether the port is
// open, closed or answers.
func TestNotifyIsNoPortScanner(t *testing.T) {
	var reached atomic.Bool
	open := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Store(true)
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer open.Close()
	closedSrv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	closed := closedSrv.URL
	closedSrv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(open.URL, "http://"), ":")
	const floor = 150 * time.Millisecond
	a := &Activities{NotifyAttemptTime: floor}
	var msgs []string
	for _, u := range []string{open.URL, closed, "http://localhost:" + port, "http://[::ffff:127.0.0.1]:" + port, "http://169.254.169.254/latest"} {
		began := time.Now()
		err := a.notifyChanges(context.Background(), actwire.NotifyInput{URL: u + "/hook"})
		took := time.Since(began)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != api.ErrNotifyRejected || !strings.Contains(err.Error(), "not delivered") {
			t.Errorf("%s: err = %v, want %s, not delivered", u, err, api.ErrNotifyRejected)
		}
		if took < floor {
			t.Errorf("%s: failed after %v, before the attempt's floor of %v", u, took, floor)
		}
		msgs = append(msgs, strings.ReplaceAll(errText(err), api.NotifyHost(u), "HOST"))
	}
	if reached.Load() {
		t.Error("the worker reached a loopback server")
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("the caller can tell the ports apart: %q vs %q", m, msgs[0])
		}
	}
	// An operator's list of hosts refuses the others before any dial.
	a = &Activities{NotifyPolicy: notify.Policy{Hosts: []string{"hooks.example.com"}}, NotifyAttemptTime: time.Millisecond}
	err := a.notifyChanges(context.Background(), actwire.NotifyInput{URL: "https://evil.example.net/x"})
	if !strings.Contains(errText(err), "MEMAGENT_NOTIFY_HOSTS") {
		t.Errorf("a host off the list: err = %v, want it refused naming MEMAGENT_NOTIFY_HOSTS", err)
	}
}

// TestNotifyOutcomeIsUniform performs the port probe the review did: a
// notify_url at a closed port, at an open port that never answers, at one
// that speaks no HTTP, at a server that answers 500 and at one that
// answers 404. Each ends as every other does (the same error, type and
// retryability, on a middle attempt and on the last) and at the same time,
// the attempt's budget; only a server that answers 200 is delivered.
func TestNotifyOutcomeIsUniform(t *testing.T) {
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	closedSrv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	closed := closedSrv.URL
	closedSrv.Close()
	// An open port that accepts and then says nothing, or something that
	// is not HTTP, and keeps the connection open.
	listen := func(greeting string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var conns []net.Conn
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ln.Accept()
				if err != nil {
					for _, c := range conns {
						c.Close()
					}
					return
				}
				conns = append(conns, c)
				if greeting != "" {
					_, _ = c.Write([]byte(greeting))
				}
			}
		}()
		t.Cleanup(func() { ln.Close(); <-done })
		return "http://" + ln.Addr().String()
	}
	silent, notHTTP := listen(""), listen("SSH-2.0-OpenSSH_9.6\r\n")
	slowRelease := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-slowRelease:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(slowRelease) })
	ok := status(http.StatusOK)

	const budget = 300 * time.Millisecond
	const spread = 150 * time.Millisecond
	failing := []struct{ name, url string }{
		{"closed port", closed}, {"silent open port", silent}, {"not HTTP", notHTTP}, {"slow server", slow.URL},
		{"500", status(http.StatusInternalServerError)}, {"404", status(http.StatusNotFound)},
	}
	for _, attempts := range []int{2, 1} { // attempt 1 of 2 (retried), then the last one
		a := &Activities{NotifyPolicy: loopbackAllowed(t), NotifyAttemptTime: budget, NotifyAttempts: attempts}
		type seen struct {
			text         string
			typ          string
			nonRetryable bool
			took         time.Duration
		}
		var got []seen
		for _, f := range failing {
			began := time.Now()
			err := a.notifyChanges(context.Background(), actwire.NotifyInput{URL: f.url + "/hook"})
			took := time.Since(began)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) {
				t.Fatalf("%s: err = %v, want an application error", f.name, err)
			}
			got = append(got, seen{strings.ReplaceAll(errText(err), api.NotifyHost(f.url), "HOST"), appErr.Type(), appErr.NonRetryable(), took})
		}
		for i, g := range got {
			if g.text != got[0].text || g.typ != got[0].typ || g.nonRetryable != got[0].nonRetryable {
				t.Errorf("attempts %d: %s ends %+v, %s ends %+v: the caller can tell them apart", attempts, failing[i].name, g, failing[0].name, got[0])
			}
			if g.took < budget || g.took > budget+spread {
				t.Errorf("attempts %d: %s ended after %v, want within [%v, %v]", attempts, failing[i].name, g.took, budget, budget+spread)
			}
		}
		if want := attempts == 1; got[0].nonRetryable != want || got[0].typ != api.ErrNotifyRejected || !strings.Contains(got[0].text, "not delivered") {
			t.Errorf("attempts %d: %+v, want %s, not delivered, non-retryable %v", attempts, got[0], api.ErrNotifyRejected, want)
		}
		if err := a.notifyChanges(context.Background(), actwire.NotifyInput{URL: ok + "/hook"}); err != nil {
			t.Errorf("a server answering 200: %v, want delivered", err)
		}
	}
}
