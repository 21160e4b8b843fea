package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/internal/contract"
)

// Diagnosis of a run that makes no progress: what `ask`, `watch` and
// `status` print beside the progress, so that nobody has to open
// `temporal workflow describe` to learn that the model server is down.

// noPollerGrace is how long a task queue may have no poller before the
// watcher says so: a worker restarting is not an outage.
const noPollerGrace = 15 * time.Second

// diagnoseEvery bounds how often a watcher asks the server (describe, and
// the task queue's pollers) on top of the progress query.
const diagnoseEvery = 4 * time.Second

// diagnoser remembers, for one run, when it last asked and since when the
// task queue has had no poller.
type diagnoser struct {
	c         client.Client
	namespace string
	id        string
	now       func() time.Time

	asked         time.Time
	last          string
	noPollerSince time.Time
	// converting is the conversion's progress the last describe showed:
	// "OCR 12/40 pages", or "".
	converting string
}

func newDiagnoser(c client.Client, namespace, id string) *diagnoser {
	return &diagnoser{c: c, namespace: namespace, id: id, now: time.Now}
}

// trouble returns what stands in the run's way, or "" when nothing does;
// it asks the server at most every diagnoseEvery and otherwise repeats its
// last answer.
func (d *diagnoser) trouble(ctx context.Context) string {
	now := d.now()
	if !d.asked.IsZero() && now.Sub(d.asked) < diagnoseEvery {
		return d.last
	}
	d.asked = now
	resp, err := d.c.DescribeWorkflowExecution(ctx, d.id, "")
	if err != nil {
		return d.last
	}
	d.converting = conversionNote(resp.GetPendingActivities())
	if resp.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		d.last, d.converting = "", ""
		return ""
	}
	d.last = d.explain(ctx, resp, now)
	return d.last
}

func (d *diagnoser) explain(ctx context.Context, resp *workflowservice.DescribeWorkflowExecutionResponse, now time.Time) string {
	var notes []string
	if wt := resp.GetPendingWorkflowTask(); wt != nil && wt.GetAttempt() > 1 {
		notes = append(notes, d.workflowTaskTrouble(ctx, resp.GetWorkflowExecutionInfo().GetExecution(), wt.GetAttempt()))
	}
	for _, pa := range resp.GetPendingActivities() {
		if pa.GetAttempt() <= 1 && pa.GetLastFailure() == nil {
			continue
		}
		note := fmt.Sprintf("%s attempt %d", pa.GetActivityType().GetName(), pa.GetAttempt())
		if f := pa.GetLastFailure(); f != nil {
			note += ": " + describeFailure(f)
		}
		if next := pa.GetNextAttemptScheduleTime(); next != nil && next.AsTime().After(now) {
			note += fmt.Sprintf("; next attempt in %s", next.AsTime().Sub(now).Round(time.Second))
		}
		notes = append(notes, note)
	}
	if tq := resp.GetExecutionConfig().GetTaskQueue().GetName(); tq != "" {
		if d.noPollers(ctx, tq) {
			if d.noPollerSince.IsZero() {
				d.noPollerSince = now
			}
			if now.Sub(d.noPollerSince) >= noPollerGrace {
				notes = append(notes, fmt.Sprintf("no worker is polling task queue %s in namespace %s: start one (go run ./worker) with MEMAGENT_TASK_QUEUE=%s", tq, d.namespace, tq))
			}
		} else {
			d.noPollerSince = time.Time{}
			if note := versioningTrouble(ctx, d.c, resp); note != "" {
				notes = append(notes, note)
			}
		}
	}
	return strings.Join(notes, "; ")
}

// noPollers reports whether neither workflow nor activity tasks of tq
// have a poller; an error says nothing.
func (d *diagnoser) noPollers(ctx context.Context, tq string) bool {
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := d.c.DescribeTaskQueue(ctx, tq, typ)
		if err != nil || len(resp.GetPollers()) > 0 {
			return false
		}
	}
	return true
}

// workflowTaskTrouble names the cause of the last failed workflow task of
// the run exec, as its history has it.
func (d *diagnoser) workflowTaskTrouble(ctx context.Context, exec *commonpb.WorkflowExecution, attempt int32) string {
	note := fmt.Sprintf("workflow task failing (attempt %d)", attempt)
	resp, err := d.c.WorkflowService().GetWorkflowExecutionHistoryReverse(ctx, &workflowservice.GetWorkflowExecutionHistoryReverseRequest{
		Namespace: d.namespace, Execution: exec, MaximumPageSize: 20,
	})
	if err != nil {
		return note
	}
	for _, ev := range resp.GetHistory().GetEvents() {
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
			cause := strings.TrimPrefix(a.GetCause().String(), "WORKFLOW_TASK_FAILED_CAUSE_")
			note += ": " + strings.ToLower(cause)
			if f := a.GetFailure(); f != nil {
				note += ": " + describeFailure(f)
			}
			if a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_BAD_SEARCH_ATTRIBUTES {
				note += " (run `starter setup` on this namespace)"
			}
			return note
		}
	}
	return note
}

// describeFailure renders a failure as "type: message", the message on one
// line and short.
func describeFailure(f *failurepb.Failure) string {
	msg := strings.Join(strings.Fields(f.GetMessage()), " ")
	if len(msg) > 240 {
		msg = contract.ClipUTF8(msg, 240) + "…"
	}
	if t := f.GetApplicationFailureInfo().GetType(); t != "" {
		return t + ": " + msg
	}
	if f.GetTimeoutFailureInfo() != nil {
		return "timeout (" + strings.ToLower(strings.TrimPrefix(f.GetTimeoutFailureInfo().GetTimeoutType().String(), "TIMEOUT_TYPE_")) + ")"
	}
	return msg
}

// conversionNote is how far a pending conversion is, from its heartbeat
// (ConvertDocument's, or AssembleCorpus's for a corpus, or
// PrepareReading's, which runs either as its first step): "OCR 12/40
// pages" while scanned pages are read, "" otherwise.
func conversionNote(pending []*workflowpb.PendingActivityInfo) string {
	for _, pa := range pending {
		switch pa.GetActivityType().GetName() {
		case "memagent.ConvertDocument", "memagent.AssembleCorpus", "memagent.PrepareReading":
		default:
			continue
		}
		ps := pa.GetHeartbeatDetails().GetPayloads()
		if len(ps) == 0 {
			continue
		}
		var p struct {
			OCRDone  int `json:"ocr_done"`
			OCRPages int `json:"ocr_pages"`
		}
		if json.Unmarshal(ps[0].GetData(), &p) != nil || p.OCRPages == 0 {
			continue
		}
		return fmt.Sprintf("OCR %d/%d pages", p.OCRDone, p.OCRPages)
	}
	return ""
}
