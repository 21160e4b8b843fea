package api

import "testing"

func TestBatchReadsWhole(t *testing.T) {
	for _, tc := range []struct {
		reuse   string
		samples int
		want    bool
	}{
		{"", 0, false},
		{ReuseAuto, 1, false},
		{"", 2, true},
		{ReuseAuto, 8, true},
		{ReuseNone, 0, true},
		{ReuseNone, 4, true},
		{ReuseAlways, 1, false},
		{ReuseAlways, 4, false},
	} {
		in := BatchQAInput{Manifest: "s3://b/m.jsonl", Reuse: tc.reuse, Samples: tc.samples}
		if got := in.ReadsWhole(); got != tc.want {
			t.Errorf("reuse %q, samples %d: ReadsWhole = %v, want %v", tc.reuse, tc.samples, got, tc.want)
		}
		if err := in.Validate(); err != nil {
			t.Errorf("reuse %q, samples %d: %v", tc.reuse, tc.samples, err)
		}
	}
	if err := (BatchQAInput{Manifest: "s3://b/m.jsonl", Reuse: "sometimes"}).Validate(); err == nil {
		t.Error(`reuse "sometimes": no error`)
	}
}
