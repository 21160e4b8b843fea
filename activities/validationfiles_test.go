package activities

import (
	"reflect"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
)

// TestEvaluateGate: a gate passes only when the validation passed its own
// thresholds, was made at the gate's confidence or above, and every
// threshold of the gate passes on the validation's figures, whatever
// thresholds the validation was started with.
func TestEvaluateGate(t *testing.T) {
	iv := func(e, lo, hi float64) api.ValidationInterval {
		return api.ValidationInterval{Estimate: e, Lower: lo, Upper: hi}
	}
	rep := api.ValidationReport{
		WorkflowID: "b.validate", Confidence: 0.95, Passed: true, Finished: &api.ValidationEntry{Action: "finish", Reviewer: "erin"},
		Overall: api.ValidationFigures{Precision: iv(0.9, 0.8, 0.95), Elusion: iv(0.02, 0.01, 0.06), Recall: iv(0.85, 0.7, 0.9), RecallDefined: true},
		Questions: []api.ValidationFigures{
			{Question: "Who?", Precision: iv(0.9, 0.6, 0.99), Recall: iv(0.5, 0.2, 0.8), RecallDefined: true},
			{Question: "When?", Error: "no decision in the not_found stratum yet"},
		},
	}
	th := func(s, q string) api.ValidationThreshold {
		x, err := api.ParseValidationThreshold(s)
		if err != nil {
			t.Fatal(err)
		}
		x.Question = q
		return x
	}
	for _, tc := range []struct {
		name   string
		gate   api.ValidationGate
		mutate func(*api.ValidationReport)
		want   string
		why    string
	}{
		{"no thresholds", api.ValidationGate{}, nil, api.ReportFinal, ""},
		{"overall lower bound", api.ValidationGate{Thresholds: []api.ValidationThreshold{th("precision>=0.8", ""), th("elusion<=0.06", "")}}, nil, api.ReportFinal, ""},
		{"recall's lower bound under", api.ValidationGate{Thresholds: []api.ValidationThreshold{th("recall>=0.75", "")}}, nil, api.ReportValidationFailed, "recall>=0.75 failed"},
		{"a question's", api.ValidationGate{Thresholds: []api.ValidationThreshold{th("recall>=0.25", "Who?")}}, nil, api.ReportValidationFailed, "recall>=0.25 (Who?) failed"},
		{"a question with no figures", api.ValidationGate{Thresholds: []api.ValidationThreshold{th("precision>=0.1", "When?")}}, nil, api.ReportValidationFailed, "no decision"},
		{"no such question", api.ValidationGate{Thresholds: []api.ValidationThreshold{th("precision>=0.1", "Where?")}}, nil, api.ReportValidationFailed, "no such question"},
		{"lower confidence", api.ValidationGate{Confidence: 0.99}, nil, api.ReportValidationFailed, "validated at 95% confidence, the gate asks 99%"},
		{"the validation's own threshold failed", api.ValidationGate{}, func(r *api.ValidationReport) {
			r.Passed = false
			r.Thresholds = []api.ValidationOutcome{{Threshold: th("precision>=0.85", ""), Bound: 0.8}}
		}, api.ReportValidationFailed, "the threshold precision>=0.85 failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rep
			if tc.mutate != nil {
				tc.mutate(&r)
			}
			v := evaluateGate(tc.gate, r)
			if v.State != tc.want || !strings.Contains(v.Why, tc.why) || v.SignedOffBy != "erin" || v.Validation != "b.validate" {
				t.Errorf("gate %+v: %s (%q), want %s (%q)", tc.gate, v.State, v.Why, tc.want, tc.why)
			}
			if len(v.Thresholds) != len(tc.gate.Thresholds) {
				t.Errorf("%d outcomes for %d thresholds", len(v.Thresholds), len(tc.gate.Thresholds))
			}
		})
	}
}

// TestGateMark: a provisional report is marked by the validation run that
// finishes first; a retry of that run's WriteValidation, after the report
// was written marked and the attempt's completion lost, gets the same
// marking back without writing it again (so the marking is notified once,
// with what the report says); a report another run marked is left alone.
func TestGateMark(t *testing.T) {
	judged := api.ReportValidation{State: api.ReportValidationFailed, Validation: "b.validate", Why: "the threshold recall>=0.75 failed"}
	judge := func() api.ReportValidation { return judged }
	for _, c := range []struct {
		name      string
		cur       api.ReportValidation
		want      *api.ReportValidation
		wantWrite bool
	}{
		{"provisional", api.ReportValidation{State: api.ReportProvisional, Validation: "b.validate", ValidationRunID: "started"},
			&api.ReportValidation{State: api.ReportValidationFailed, Validation: "b.validate", ValidationRunID: "self", Why: judged.Why}, true},
		{"marked by this run, retried", api.ReportValidation{State: api.ReportFinal, Validation: "b.validate", ValidationRunID: "self", SignedOffBy: "carol"},
			&api.ReportValidation{State: api.ReportFinal, Validation: "b.validate", ValidationRunID: "self", SignedOffBy: "carol"}, false},
		{"marked by another run", api.ReportValidation{State: api.ReportFinal, Validation: "b.validate", ValidationRunID: "other"}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, write := gateMark(c.cur, "self", judge)
			if write != c.wantWrite || (got == nil) != (c.want == nil) || got != nil && !reflect.DeepEqual(*got, *c.want) {
				t.Errorf("gateMark = %+v, write %v; want %+v, write %v", got, write, c.want, c.wantWrite)
			}
		})
	}
}
