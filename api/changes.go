package api

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
)

// CompareWithPrevious is the value of BatchQAInput.CompareWith that compares
// a dated report with the latest earlier dated report under the same
// report prefix: what a batch started by a Schedule does by itself.
const CompareWithPrevious = "previous"

// ReportChangesName is the comparison of a report with the previous one,
// under the report prefix beside report.json (ChangesReport).
const ReportChangesName = "changes.json"

// Outcomes of one item in a comparison of two reports (ItemChange.Status).
// Items match by their manifest id and sample.
const (
	// ChangeNew is an item the previous report does not have.
	ChangeNew = "new"
	// ChangeChanged is an item whose normalised answer (lower case, no
	// punctuation or articles, whitespace collapsed: the normalisation of
	// the exact-match score) differs from the previous one, or whose
	// answer_found flipped.
	ChangeChanged = "changed"
	// ChangeUnchanged is an item whose normalised answer and answer_found
	// are the previous ones.
	ChangeUnchanged = "unchanged"
	// ChangeRemoved is an item of the previous report this one lacks.
	ChangeRemoved = "removed"
	// ChangeFailed is an item that failed in this report or the previous
	// one: there is no pair of answers to compare.
	ChangeFailed = "failed"
)

// Outcomes of the notification of a batch's changes (BatchQAResult.Notify).
const (
	NotifySent   = "sent"
	NotifyFailed = "failed"
)

// ErrNotifyRejected is a notify_url that was not delivered, whatever the
// host did (a closed port, a silence, a status other than 2xx): the one
// error of an undelivered notification.
const ErrNotifyRejected = "memagent.NotifyRejected"

// ChangeSummary counts how a batch's items compare with the previous
// report's: in BatchQAResult, report.json, changes.json and the body POSTed
// to notify_url.
type ChangeSummary struct {
	// Since is when the previous report's batch started; zero (omitted)
	// when there was no previous report, and every item is new.
	Since time.Time `json:"since,omitzero"`
	// PreviousReport is the previous report's report.json, empty when
	// there was none.
	PreviousReport string `json:"previous_report,omitempty"`
	New            int    `json:"new"`
	Changed        int    `json:"changed"`
	Unchanged      int    `json:"unchanged"`
	Removed        int    `json:"removed"`
	Failed         int    `json:"failed"`
	// FoundFlipped counts the changed items whose answer_found differs
	// from the previous report's.
	FoundFlipped int `json:"found_flipped"`
	// ChangesURI is changes.json, which lists every item.
	ChangesURI string `json:"changes_uri"`
}

// Differences is how many items differ from the previous report: new,
// changed and removed. It is the value of the MemagentChangedItems search
// attribute.
func (s ChangeSummary) Differences() int { return s.New + s.Changed + s.Removed }

// ItemChange is one item of changes.json: how a sample of a manifest item
// compares with the same id and sample in the previous report.
type ItemChange struct {
	// Status is ChangeNew, ChangeChanged, ChangeUnchanged, ChangeRemoved or
	// ChangeFailed.
	Status string `json:"status"`
	ID     string `json:"id"`
	Sample int    `json:"sample,omitempty"`
	// Seq is the item's position in this batch's manifest; PreviousSeq its
	// position in the previous one. A new item has no PreviousSeq and a
	// removed one no Seq.
	Seq         *int   `json:"seq,omitempty"`
	PreviousSeq *int   `json:"previous_seq,omitempty"`
	Document    string `json:"document"`
	// Documents is a corpus item's documents, in order (Document is then
	// empty).
	Documents []string `json:"documents,omitempty"`
	Question  string   `json:"question"`
	// OldAnswer and OldAnswerFound are the previous report's; NewAnswer and
	// NewAnswerFound this one's.
	OldAnswer      string `json:"old_answer,omitempty"`
	NewAnswer      string `json:"new_answer,omitempty"`
	OldAnswerFound bool   `json:"old_answer_found,omitempty"`
	NewAnswerFound bool   `json:"new_answer_found,omitempty"`
	// FoundFlipped says that answer_found differs between the two.
	FoundFlipped bool `json:"found_flipped,omitempty"`
	// OldStatus and NewStatus are the item's outcomes (answered, reused,
	// failed) in each report, when it is in it.
	OldStatus string `json:"old_status,omitempty"`
	NewStatus string `json:"new_status,omitempty"`
}

// ChangesReport is changes.json: the summary, the report it describes and
// every item, in this batch's manifest order, then the removed ones in the
// previous manifest's order.
type ChangesReport struct {
	ChangeSummary
	// Report is this batch's report.json.
	Report string       `json:"report"`
	Items  []ItemChange `json:"items"`
}

// ChangeNotification is the JSON body POSTed to a batch's notify_url once
// its report is written.
type ChangeNotification struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	ReportURI  string `json:"report_uri"`
	HTMLURI    string `json:"html_uri"`
	Items      int    `json:"items"`
	Succeeded  int    `json:"succeeded"`
	Failed     int    `json:"failed"`
	Skipped    int    `json:"skipped"`
	// Changes is the comparison with the previous report; absent when the
	// batch compared with none.
	Changes *ChangeSummary `json:"changes,omitempty"`
	// Validation is the report's state when the batch has a validation
	// gate: provisional (the report is final once a validation passes).
	Validation *ReportValidation `json:"validation,omitempty"`
}

// checkCompareWith checks BatchQAInput.CompareWith.
func checkCompareWith(in BatchQAInput) error {
	switch c := in.CompareWith; {
	case c == "":
	case c == CompareWithPrevious:
		if !in.DatedReport || in.ReportPrefix == "" {
			return errors.New(`compare_with "previous" needs dated_report and a report_prefix: the previous report is the latest earlier dated folder under report_prefix`)
		}
	default:
		if rest, ok := strings.CutPrefix(c, "s3://"); !ok || rest == "" || strings.HasPrefix(rest, "/") || !strings.Contains(rest, "/") {
			return fmt.Errorf("compare_with %q is not %q or an s3://bucket/prefix/ URI of a report", c, CompareWithPrevious)
		}
	}
	return nil
}

// CheckNotifyURL checks a notify_url: an absolute http or https URL with a
// host. The error never quotes the URL, which may hold a token.
func CheckNotifyURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("notify_url does not parse as a URL: pass an absolute http:// or https:// URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("notify_url is not an http:// or https:// URL")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("notify_url has no host: pass an absolute http:// or https:// URL")
	}
	return nil
}

// NotifyHost is what may be shown of a notify_url: its scheme and host,
// without userinfo, path or query, which may hold secrets.
func NotifyHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	return u.Scheme + "://" + u.Host
}

// ChangedItemsKey is the typed key of AttrChangedItems.
var ChangedItemsKey = temporal.NewSearchAttributeKeyInt64(AttrChangedItems)
