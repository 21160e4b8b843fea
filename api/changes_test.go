package api

import (
	"strings"
	"testing"
)

func TestBatchInputCompareAndNotify(t *testing.T) {
	base := BatchQAInput{Manifest: "s3://b/m.jsonl"}
	tests := []struct {
		name    string
		edit    func(*BatchQAInput)
		wantErr string
	}{
		{"neither", func(*BatchQAInput) {}, ""},
		{"a report prefix", func(in *BatchQAInput) { in.CompareWith = "s3://b/reports/base/" }, ""},
		{"previous, dated under a prefix", func(in *BatchQAInput) {
			in.CompareWith, in.DatedReport, in.ReportPrefix = CompareWithPrevious, true, "s3://b/reports/n/"
		}, ""},
		{"previous, undated", func(in *BatchQAInput) { in.CompareWith, in.ReportPrefix = CompareWithPrevious, "s3://b/reports/n/" }, "needs dated_report"},
		{"previous, default prefix", func(in *BatchQAInput) { in.CompareWith, in.DatedReport = CompareWithPrevious, true }, "needs dated_report and a report_prefix"},
		{"not s3", func(in *BatchQAInput) { in.CompareWith = "reports/base/" }, "is not"},
		{"a bucket alone", func(in *BatchQAInput) { in.CompareWith = "s3://b" }, "is not"},
		{"https notify", func(in *BatchQAInput) { in.NotifyURL = "https://user:pw@hooks.example/x?token=t" }, ""},
		{"ftp notify", func(in *BatchQAInput) { in.NotifyURL = "ftp://hooks.example/x?token=secret" }, "not an http"},
		{"notify without host", func(in *BatchQAInput) { in.NotifyURL = "http:///x?token=secret" }, "no host"},
		{"relative notify", func(in *BatchQAInput) { in.NotifyURL = "/x?token=secret" }, "not an http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			tt.edit(&in)
			err := in.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error with %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error quotes the URL's token: %v", err)
			}
		})
	}
}

func TestNotifyHost(t *testing.T) {
	for raw, want := range map[string]string{
		"https://user:pw@hooks.example:8443/x/tok?token=t": "https://hooks.example:8443",
		"http://127.0.0.1:9/hook":                          "http://127.0.0.1:9",
		"::not a url":                                      "(invalid URL)",
	} {
		if got := NotifyHost(raw); got != want {
			t.Errorf("NotifyHost(%q) = %q, want %q", raw, got, want)
		}
	}
}
