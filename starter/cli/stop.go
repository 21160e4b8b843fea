package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
)

// closeWait is how long cancel waits for the run to close before it says
// the cancellation is pending.
const closeWait = 20 * time.Second

// bindCancel asks a run, review or batch to stop: the workflow cancels its
// activities and children and closes as canceled, keeping what it did. A
// run no worker is polling for cannot act on the request: cancel says so,
// and how to end it at once (terminate).
func bindCancel(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	wait := cmd.Flags().Duration("wait", closeWait, "how long to wait for the run to close after the request (0: do not wait)")
	return func(args []string) error {
		if cfgErr != nil {
			return cfgErr
		}
		id, err := oneWorkflowID("cancel", args)
		if err != nil {
			return err
		}
		s, kind, err := stopSession(ctx, cfg, id, stderr)
		if err != nil {
			return err
		}
		defer s.close()
		if err := s.temporal.CancelWorkflow(ctx, id, ""); err != nil {
			return fmt.Errorf("cancel %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "cancel requested for %s %s\n", kind, id)
		status, err := waitClosed(ctx, s, id, *wait)
		if err != nil {
			return err
		}
		if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			fmt.Fprintf(stdout, "%s is %s\n", id, statusWord(status))
			return nil
		}
		d := newDiagnoser(s.temporal, s.cfg.TemporalNamespace, id)
		d.noPollerSince = time.Now().Add(-noPollerGrace)
		why := d.trouble(ctx)
		if strings.Contains(why, "no worker is polling") {
			fmt.Fprintf(stdout, "%s is still open: %s.\nA worker must take the run to cancel it; to end it now without one: starter terminate %s --reason \"...\"\n", id, why, id)
			return nil
		}
		fmt.Fprintf(stdout, "%s is still open after %s: it closes once its in-flight activities have stopped (follow it with starter watch %s)\n", id, *wait, id)
		return nil
	}
}

// bindTerminate ends a run, review or batch at once, recording the reason
// in its history: no worker is needed, and nothing runs after it (a batch's
// children are terminated with it, their parent close policy). What the run
// wrote to S3 stays.
func bindTerminate(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	reason := cmd.Flags().String("reason", "", "why the run is terminated, kept in its history (required)")
	return func(args []string) error {
		if cfgErr != nil {
			return cfgErr
		}
		id, err := oneWorkflowID("terminate", args)
		if err != nil {
			return err
		}
		if strings.TrimSpace(*reason) == "" {
			return badRequest(errors.New("terminate needs --reason: say why, it is kept in the run's history"))
		}
		s, kind, err := stopSession(ctx, cfg, id, stderr)
		if err != nil {
			return err
		}
		defer s.close()
		if err := s.temporal.TerminateWorkflow(ctx, id, "", *reason); err != nil {
			return fmt.Errorf("terminate %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "%s %s terminated: %s\n", kind, id, *reason)
		if kind == api.BatchQAName {
			// A batch's children outlive the run that started them (they
			// run on across its continue-as-new): end them with it.
			n, err := terminateChildren(ctx, s, id, *reason)
			if err != nil {
				return fmt.Errorf("terminate the children of %s: %w", id, err)
			}
			fmt.Fprintf(stdout, "%d running children of %s terminated\n", n, id)
		}
		return nil
	}
}

// stopSession connects and checks that id is an open memagent run.
func stopSession(ctx context.Context, cfg clientconf.Config, id string, stderr io.Writer) (*session, string, error) {
	cfg.Normalize()
	s := &session{cfg: cfg, logger: cliLogger(stderr)}
	if err := s.connect(ctx); err != nil {
		return nil, "", err
	}
	kind, err := runKind(ctx, s.temporal, id)
	if err != nil {
		s.close()
		return nil, "", badRequest(err)
	}
	resp, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		s.close()
		return nil, "", fmt.Errorf("describe %s: %w", id, err)
	}
	if st := resp.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		s.close()
		return nil, "", badRequest(fmt.Errorf("%s is already closed (%s)", id, statusWord(st)))
	}
	return s, kind, nil
}

// waitClosed polls the run's status for up to d, returning it once closed
// or when d is over.
func waitClosed(ctx context.Context, s *session, id string, d time.Duration) (enumspb.WorkflowExecutionStatus, error) {
	deadline := time.Now().Add(d)
	for {
		resp, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return 0, fmt.Errorf("describe %s: %w", id, err)
		}
		st := resp.GetWorkflowExecutionInfo().GetStatus()
		if st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || !time.Now().Before(deadline) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// statusWord is a closed status as operators say it: "canceled",
// "terminated", "completed", ...
func statusWord(st enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// terminateChildren terminates the open workflows whose parent is the
// batch id (any of its runs), and returns how many it terminated.
func terminateChildren(ctx context.Context, s *session, id, reason string) (int, error) {
	query := fmt.Sprintf("ParentWorkflowId = %q AND ExecutionStatus = 'Running'", id)
	n := 0
	var token []byte
	for {
		resp, err := s.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: s.cfg.TemporalNamespace, Query: query, NextPageToken: token})
		if err != nil {
			return n, err
		}
		for _, e := range resp.GetExecutions() {
			err := s.temporal.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), "", "with batch "+id+": "+reason)
			var gone *serviceerror.NotFound
			if err != nil && !errors.As(err, &gone) {
				return n, err
			}
			n++
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return n, nil
		}
	}
}
