// Package procstat reads what the benchmarks measure of a process: its own
// peak resident set and CPU time, and GNU time's report of a command's
// (`/usr/bin/time -v`, as a command's users measure it). It is for the
// benchmarks and tests; the worker never needs it.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TimeCommand is GNU time.
const TimeCommand = "/usr/bin/time"

// PeakRSS is this process's peak resident set since its exec, in bytes,
// from /proc/self/status (VmHWM); 0 where that cannot be read. Unlike the
// figure wait4 gives a parent, it never includes what the parent held
// when it forked.
func PeakRSS() int64 { return peakRSS("/proc/self/status") }

// PeakRSSOf is PeakRSS of the process pid.
func PeakRSSOf(pid int) int64 { return peakRSS(fmt.Sprintf("/proc/%d/status", pid)) }

// peakRSS reads VmHWM from a /proc status file.
func peakRSS(status string) int64 {
	data, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// CPUTime is this process's user+system time, and with children that of
// the child processes it has waited for (an engine it ran).
func CPUTime(children bool) time.Duration {
	who := []int{syscall.RUSAGE_SELF}
	if children {
		who = append(who, syscall.RUSAGE_CHILDREN)
	}
	var d time.Duration
	for _, w := range who {
		var ru syscall.Rusage
		if err := syscall.Getrusage(w, &ru); err == nil {
			d += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return d
}

// ReportCPU reports this process's user+system CPU per operation since
// start (a CPUTime(false) reading) as cpu-ns/op, beside a benchmark's
// ns/op: on a shared machine wall time per operation measures the other
// processes as much as this one.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPUTime(false)-start)/float64(b.N), "cpu-ns/op")
}

// TimeV is what GNU time -v reports of a command.
type TimeV struct {
	// CPU is user+system time.
	CPU time.Duration
	// MaxRSS is the maximum resident set, bytes: that of the largest
	// single process of the command's tree, not their sum.
	MaxRSS int64
}

// ParseTimeV reads GNU time -v's report: "User time (seconds): 0.21",
// "System time (seconds): 0.03", "Maximum resident set size (kbytes):
// 12800".
func ParseTimeV(report string) (TimeV, error) {
	var r TimeV
	found := 0
	for _, line := range strings.Split(report, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "): ")
		if !ok {
			continue
		}
		switch k {
		case "User time (seconds", "System time (seconds":
			sec, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return r, fmt.Errorf("time -v: %q: %w", line, err)
			}
			r.CPU += time.Duration(sec * float64(time.Second))
			found++
		case "Maximum resident set size (kbytes":
			kb, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return r, fmt.Errorf("time -v: %q: %w", line, err)
			}
			r.MaxRSS = kb << 10
			found++
		}
	}
	if found != 3 {
		return r, fmt.Errorf("time -v printed no user time, system time and maximum resident set: %q", report)
	}
	return r, nil
}
