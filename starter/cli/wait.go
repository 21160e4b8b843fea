package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/contract"
)

// Exit codes of the starter, for scripts.
const (
	// ExitOK: the command did what it was asked (a run answered).
	ExitOK = 0
	// ExitFailed: the run failed, or the command could not do its work.
	ExitFailed = 1
	// ExitBadInput: the request is wrong (flags, the document, a run that
	// failed as memagent.BadInput, Forbidden, DocumentNotFound,
	// PromptTooLong or OverBudget): change it.
	ExitBadInput = 2
	// ExitStoppedWaiting: the starter stopped waiting (--timeout, Ctrl-C)
	// while the run goes on; `starter watch ID` follows it again.
	ExitStoppedWaiting = 3
	// ExitPaused: the run reached its budget and waits, paused, for
	// `starter budget ID` to raise it (or for a cancel).
	ExitPaused = 4
	// ExitCanceled: the run was canceled or terminated (by starter cancel
	// or terminate, the UI, another client) before it finished.
	ExitCanceled = 5
)

// callersToFix are the failure types of a run that the caller fixes by
// changing the request: they exit 2, like bad flags.
var callersToFix = map[string]bool{
	api.ErrBadInput: true, api.ErrForbidden: true, api.ErrDocumentNotFound: true,
	api.ErrPromptTooLong: true, api.ErrOverBudget: true,
}

// exitError carries an exit code with an error, and the workflow id of
// the run it is about when there is one (--json prints it).
type exitError struct {
	code int
	err  error
	id   string
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode is the process's exit code for the error run returned.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	}
	return ExitFailed
}

// badRequest marks err as the caller's to fix (exit code 2).
func badRequest(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: ExitBadInput, err: err}
}

// maxOutageBackoff bounds the wait between two tries to reach Temporal.
const maxOutageBackoff = 15 * time.Second

// waitResult waits for the result of run id (its latest run, across
// continue-as-new) into out, through Temporal outages of any length: it
// says once that the server is unreachable and that the run goes on, and
// tries again with backoff until the run ends or ctx does. A run's own
// outcome (failed, canceled, terminated, timed out) ends the wait at once.
// An error from a server that still answers (the wait's own deadline,
// reached on the server's side first) is no outage: the wait goes on
// quietly. When ctx ends first, the error says why the run did not finish
// when no worker takes its tasks (stalledNote).
func waitResult(ctx context.Context, c client.Client, id string, out any, say io.Writer) error {
	backoff := time.Second
	var down time.Time // since when Temporal has not answered
	saidErr := false   // whether an error of a server that answers was told
	for {
		err := c.GetWorkflow(ctx, id, "").Get(ctx, out)
		switch {
		case err == nil || runOutcome(err):
			if !down.IsZero() && say != nil {
				fmt.Fprintf(say, "starter: Temporal is reachable again after %s\n", time.Since(down).Round(time.Second))
			}
			return err
		case ctx.Err() != nil:
			return stoppedWaiting(id, ctx, c)
		}
		switch answers := serverAnswers(ctx, c); {
		case answers && (ctx.Err() != nil || endsWithin(ctx, err, time.Second)):
			// The wait's own deadline, which the server reached first.
			return stoppedWaiting(id, ctx, c)
		case answers:
			if !down.IsZero() && say != nil {
				fmt.Fprintf(say, "starter: Temporal is reachable again after %s\n", time.Since(down).Round(time.Second))
			}
			down = time.Time{}
			if !saidErr && say != nil {
				saidErr = true
				fmt.Fprintf(say, "starter: Temporal answers, but waiting for run %s failed (%s); this tries again (Ctrl-C stops waiting)\n", id, oneLine(err))
			}
		case down.IsZero():
			down = time.Now()
			if say != nil {
				fmt.Fprintf(say, "starter: Temporal is unreachable (%s); the run goes on, and this waits for it (Ctrl-C stops waiting)\n", oneLine(err))
			}
		}
		select {
		case <-ctx.Done():
			if down.IsZero() {
				return stoppedWaiting(id, ctx, c)
			}
			return stoppedWaiting(id, ctx, nil)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxOutageBackoff)
	}
}

// endsWithin reports whether err is a deadline's and ctx's own deadline is
// at most d away: the server ended the call at the starter's deadline a
// moment before ctx did.
func endsWithin(ctx context.Context, err error, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	if !ok || time.Until(deadline) > d {
		return false
	}
	var dl *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &dl) || status.Code(err) == codes.DeadlineExceeded
}

// runOutcome reports whether err is the run's own end rather than a
// failure to reach the server.
func runOutcome(err error) bool {
	var we *temporal.WorkflowExecutionError
	var nf *serviceerror.NotFound
	var appErr *temporal.ApplicationError
	var canceled *temporal.CanceledError
	var terminated *temporal.TerminatedError
	var timeout *temporal.TimeoutError
	return errors.As(err, &we) || errors.As(err, &nf) || errors.As(err, &appErr) || errors.As(err, &canceled) ||
		errors.As(err, &terminated) || errors.As(err, &timeout)
}

// stoppedWaiting is the error of a wait that ctx ended while run id goes
// on. With c, the server answering, it adds why the run did not finish
// when no worker takes its tasks.
func stoppedWaiting(id string, ctx context.Context, c client.Client) error {
	why := "stopped"
	if _, ok := ctx.Deadline(); ok && !errors.Is(ctx.Err(), context.Canceled) {
		// Its deadline, reached or about to be (the server's side ended
		// the wait first).
		why = "--timeout reached"
	}
	err := fmt.Errorf("%s: stopped waiting for run %s, which goes on: follow it with `starter watch %s`", why, id, id)
	if c != nil {
		if note := stalledNote(ctx, c, id); note != "" {
			err = fmt.Errorf("%w. %s", err, note)
		}
	}
	return &exitError{code: ExitStoppedWaiting, id: id, err: err}
}

func oneLine(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 200 {
		msg = contract.ClipUTF8(msg, 200) + "…"
	}
	return msg
}

// runFailed is runError with the exit code: 2 when the run failed on its
// input, 5 when it was canceled or terminated (a one-line message instead
// of the SDK's), 1 otherwise.
func runFailed(id string, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	var canceled *temporal.CanceledError
	var terminated *temporal.TerminatedError
	switch {
	case errors.As(err, &canceled):
		return &exitError{code: ExitCanceled, id: id, err: fmt.Errorf("run %s was canceled before it finished (starter cancel, the UI or another client); what it wrote stays: starter status %s shows how far it got", id, id)}
	case errors.As(err, &terminated):
		return &exitError{code: ExitCanceled, id: id, err: fmt.Errorf("run %s was terminated before it finished (starter terminate, the UI or another client); what it wrote stays: starter status %s --history shows the reason", id, id)}
	}
	code := ExitFailed
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && callersToFix[appErr.Type()] {
		code = ExitBadInput
	}
	return &exitError{code: code, id: id, err: runError(id, err)}
}

// workflowIDOf is the workflow id an error is about, "" when none.
func workflowIDOf(err error) string {
	var ee *exitError
	for errors.As(err, &ee) {
		if ee.id != "" {
			return ee.id
		}
		err = ee.err
	}
	return ""
}

// isFlagError reports an error of the flag package's parsing, whose
// errors have no type of their own.
func isFlagError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"flag provided but not defined", "invalid value ", "invalid boolean value", "bad flag syntax", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
