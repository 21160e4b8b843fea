package procstat

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A name with spaces and a ')' of its own, as a process can set.
	line := "4242 (post gres: x) idle) S 100 4242 4242 0 -1 4194560 1 2 3 4 250 37 12 8 20 0 1 0 5 6 7"
	got, err := ParseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{PID: 4242, PPID: 100, UTime: 250, STime: 37, CUTime: 12, CSTime: 8}
	if got != want {
		t.Errorf("ParseStat = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "12 no parens S 1", "12 (x) S 1 2 3"} {
		if _, err := ParseStat(bad); err == nil {
			t.Errorf("ParseStat(%q) succeeded", bad)
		}
	}
}

// writeStat writes a fake /proc/PID/stat.
func writeStat(t *testing.T, root string, pid, ppid int, ut, st, cut, cst int64) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	line := strconv.Itoa(pid) + " (p " + strconv.Itoa(pid) + ") S " + strconv.Itoa(ppid) + " 1 1 0 -1 0 0 0 0 0 " +
		strconv.FormatInt(ut, 10) + " " + strconv.FormatInt(st, 10) + " " + strconv.FormatInt(cut, 10) + " " + strconv.FormatInt(cst, 10) + " 20 0 1 0\n"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTreeCPU(t *testing.T) {
	root := t.TempDir()
	// 10: the postmaster (it has waited for backends that used 5+1);
	// 11 and 12 live backends, 13 a grandchild; 20 someone else's process,
	// 21 its child.
	writeStat(t, root, 10, 1, 100, 50, 5, 1)
	writeStat(t, root, 11, 10, 30, 10, 0, 0)
	writeStat(t, root, 12, 10, 7, 3, 0, 0)
	writeStat(t, root, 13, 12, 2, 2, 0, 0)
	writeStat(t, root, 20, 1, 900, 900, 0, 0)
	writeStat(t, root, 21, 20, 900, 900, 0, 0)
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte("cpu  100 20 30 400 50 0 5 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "loadavg"), []byte("3.52 2.10 1.00 5/107 10946\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Proc{Root: root}
	got, err := p.TreeCPU(10)
	if err != nil {
		t.Fatal(err)
	}
	// 156 ticks of its own and reaped children, 40 + 10 + 4 of the live tree.
	if want := 210 * 10 * time.Millisecond; got != want {
		t.Errorf("TreeCPU(10) = %v, want %v", got, want)
	}
	// A backend exits and is waited for: its time moves into the
	// postmaster's children's time, and the tree's total stays.
	if err := os.RemoveAll(filepath.Join(root, "11")); err != nil {
		t.Fatal(err)
	}
	writeStat(t, root, 10, 1, 100, 50, 5+30, 1+10)
	if again, err := p.TreeCPU(10); err != nil || again != got {
		t.Errorf("after a backend was reaped TreeCPU(10) = %v, %v; want %v", again, err, got)
	}
	if _, err := p.TreeCPU(99); err == nil {
		t.Error("TreeCPU of a missing pid succeeded")
	}
	m, err := p.MachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	if want := (MachineCPU{Busy: 1550 * time.Millisecond, Idle: 4500 * time.Millisecond}); m != want {
		t.Errorf("MachineCPU = %+v, want %+v", m, want)
	}
	if l, err := p.LoadAvg(); err != nil || l != 3.52 {
		t.Errorf("LoadAvg = %v, %v; want 3.52", l, err)
	}
}

func TestTreeCPUOfThisProcess(t *testing.T) {
	before, err := System.TreeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
		after, err := System.TreeCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("TreeCPU of this busy process stayed at %v for 5 s", before)
		}
	}
}
