package procstat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is the unit of the CPU times in /proc: USER_HZ, which Linux
// fixes at 100 for user space whatever the kernel's HZ.
const ClockTicks = 100

// Proc reads a /proc file system; Root is its mount point, "/proc" for the
// running system (tests point it at a directory of their own).
type Proc struct{ Root string }

// System is the running system's /proc.
var System = Proc{Root: "/proc"}

// Stat is what /proc/PID/stat says of a process's CPU, in clock ticks.
type Stat struct {
	PID, PPID int
	// UTime and STime are the process's own user and system time, all its
	// threads; CUTime and CSTime those of its children it has waited for
	// (and theirs, transitively): a reaped child's CPU moves there.
	UTime, STime, CUTime, CSTime int64
}

// ParseStat reads one /proc/PID/stat line. The command name, field 2, is in
// parentheses and may hold spaces and parentheses: fields are counted from
// the last ')'.
func ParseStat(line string) (Stat, error) {
	open := strings.IndexByte(line, '(')
	end := strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("stat %q: no command name in parentheses", trim(line))
	}
	var s Stat
	var err error
	if s.PID, err = strconv.Atoi(strings.TrimSpace(line[:open])); err != nil {
		return Stat{}, fmt.Errorf("stat %q: pid: %w", trim(line), err)
	}
	// After the name: state (3), ppid (4), ..., utime (14), stime (15),
	// cutime (16), cstime (17): indexes 0, 1, ..., 11, 12, 13, 14.
	f := strings.Fields(line[end+1:])
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("stat %q: %d fields after the command name, want at least 15", trim(line), len(f))
	}
	if s.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Stat{}, fmt.Errorf("stat %q: ppid: %w", trim(line), err)
	}
	for i, p := range []*int64{&s.UTime, &s.STime, &s.CUTime, &s.CSTime} {
		if *p, err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return Stat{}, fmt.Errorf("stat %q: field %d: %w", trim(line), 14+i, err)
		}
	}
	return s, nil
}

func trim(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// Stat reads /proc/PID/stat.
func (p Proc) Stat(pid int) (Stat, error) {
	data, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(strings.TrimSpace(string(data)))
}

// TreeCPU is the CPU time a process and all its descendants have used so
// far: its own user and system time, its live descendants' (found by their
// parent pids in every /proc/PID/stat), and the children's times of each,
// which hold the descendants that have exited and been waited for. The
// difference between two readings is what the tree spent between them,
// whatever children came and went (a database's backends, say), as long as
// each exited child was waited for by a process of the tree.
func (p Proc) TreeCPU(pid int) (time.Duration, error) {
	root, err := p.Stat(pid)
	if err != nil {
		return 0, fmt.Errorf("cpu of pid %d: %w", pid, err)
	}
	entries, err := os.ReadDir(p.Root)
	if err != nil {
		return 0, err
	}
	children := map[int][]Stat{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == pid {
			continue
		}
		s, err := p.Stat(n)
		if err != nil {
			continue // it exited while we looked
		}
		children[s.PPID] = append(children[s.PPID], s)
	}
	return ticks(treeTicks(root, children)), nil
}

func treeTicks(s Stat, children map[int][]Stat) int64 {
	t := s.UTime + s.STime + s.CUTime + s.CSTime
	for _, c := range children[s.PID] {
		t += treeTicks(c, children)
	}
	return t
}

func ticks(n int64) time.Duration { return time.Duration(n) * time.Second / ClockTicks }

// MachineCPU is what the first line of /proc/stat says of every CPU of the
// machine together since boot: busy time (user, nice, system, irq, softirq,
// steal) and idle time (idle, iowait), whoever ran.
type MachineCPU struct{ Busy, Idle time.Duration }

// ParseMachineCPU reads /proc/stat's "cpu " line.
func ParseMachineCPU(stat string) (MachineCPU, error) {
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]int64
		for i := range v {
			n, err := strconv.ParseInt(f[1+i], 10, 64)
			if err != nil {
				return MachineCPU{}, fmt.Errorf("/proc/stat cpu line: %w", err)
			}
			v[i] = n
		}
		// user nice system idle iowait irq softirq steal (guest time is
		// already in user).
		return MachineCPU{Busy: ticks(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]), Idle: ticks(v[3] + v[4])}, nil
	}
	return MachineCPU{}, fmt.Errorf("/proc/stat: no cpu line")
}

// MachineCPU reads /proc/stat.
func (p Proc) MachineCPU() (MachineCPU, error) {
	data, err := os.ReadFile(filepath.Join(p.Root, "stat"))
	if err != nil {
		return MachineCPU{}, err
	}
	return ParseMachineCPU(string(data))
}

// LoadAvg is /proc/loadavg's 1-minute load average.
func (p Proc) LoadAvg() (float64, error) {
	data, err := os.ReadFile(filepath.Join(p.Root, "loadavg"))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg is empty")
	}
	return strconv.ParseFloat(f[0], 64)
}
