package api

import (
	"errors"
	"fmt"
	"strings"

	"github.com/memagent/memagent/internal/contract"
)

// ClaimScheduleReportsName is the registered name of the workflow that
// claims a Temporal Schedule's report prefix for it before the schedule
// is created (`starter schedule create` starts it): the worker makes the
// claim under its own configuration (its bucket, write prefixes and claim
// roots), as it checks every run's claims. From then on no workflow claims
// the prefix, one inside it or one above it, and only the runs the
// schedule starts claim their dated prefixes inside it. It fails as
// memagent.Forbidden where a run's claim would, and completes when the
// schedule holds the prefix already.
const ClaimScheduleReportsName = "memagent.ClaimScheduleReports"

// ClaimScheduleReportsInput starts a ClaimScheduleReports run. It is JSON
// on the wire.
type ClaimScheduleReportsInput struct {
	// ScheduleID is the Temporal Schedule the prefix is claimed for.
	ScheduleID string `json:"schedule_id" contract:"required,maxlen=256"`
	// ReportPrefix is the schedule's report_prefix, an s3:// prefix; a
	// missing trailing '/' is added.
	ReportPrefix string `json:"report_prefix" contract:"required,maxlen=1024"`
}

// Validate checks the input's shape; the worker checks the prefix itself.
func (in ClaimScheduleReportsInput) Validate() error {
	// workflowcheck flags the reflection contract.Check walks the
	// input with; the check is a pure function of the input.
	//workflowcheck:ignore
	if err := contract.Check(in); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(in.ScheduleID) == "":
		return errors.New("schedule_id is empty: name the schedule the prefix is claimed for")
	case !strings.HasPrefix(in.ReportPrefix, "s3://"):
		return fmt.Errorf("report_prefix %q is not an s3:// prefix", in.ReportPrefix)
	}
	return nil
}
