package procstat

import (
	"testing"
	"time"
)

func TestParseTimeV(t *testing.T) {
	report := `	Command being timed: "pdftotext a.pdf b.txt"
	User time (seconds): 0.21
	System time (seconds): 0.03
	Percent of CPU this job got: 98%
	Maximum resident set size (kbytes): 12800
	Exit status: 0
`
	r, err := ParseTimeV(report)
	if err != nil {
		t.Fatal(err)
	}
	if r.CPU != 240*time.Millisecond || r.MaxRSS != 12800<<10 {
		t.Errorf("parsed %+v, want 240ms and 12800 KiB", r)
	}
	if _, err := ParseTimeV("Exit status: 0"); err == nil {
		t.Error("a report without the figures parsed")
	}
}

func TestPeakRSSAndCPUTime(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	if p := PeakRSS(); p < 64<<20 {
		t.Errorf("PeakRSS = %d bytes after touching 64 MiB", p)
	}
	// Measured later and with the children's, all is at least self.
	self := CPUTime(false)
	all := CPUTime(true)
	if self <= 0 || all < self {
		t.Errorf("CPUTime: self %v, then with children %v", self, all)
	}
	_ = buf[len(buf)-1]
}
