package docconv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// hostileChildEnv makes the test binary convert one hostile input (by its
// index) in a process of its own and report, so that the peak memory
// measured is that conversion's alone.
const hostileChildEnv = "MEMAGENT_DOCCONV_HOSTILE_CHILD"

// hostileReport is what the child prints.
type hostileReport struct {
	Error   string `json:"error"`
	Refused bool   `json:"refused"` // the error is an *Error: bad input
	PeakRSS int64  `json:"peak_rss"`
	Seconds float64
}

// TestHostileInputsConvertWithinBounds converts each hostile input in a
// fresh process: each is refused as *Error (memagent.BadInput at the
// activity) naming a limit, and the process's peak resident set (VmHWM)
// stays under 1 GiB, the chart's limit for a whole worker, or the input's
// own MaxPeakBytes.
func TestHostileInputsConvertWithinBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("converts gigabytes of hostile input in child processes")
	}
	for i, h := range docconvtest.HostileInputs() {
		t.Run(h.Name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$", "-test.v")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", hostileChildEnv, i))
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("child: %v\n%s\n%s", err, out.String(), stderr.String())
			}
			var r hostileReport
			line := out.String()
			i := strings.Index(line, "HOSTILE ")
			if i < 0 {
				t.Fatalf("child printed no report:\n%s", line)
			}
			if err := json.Unmarshal([]byte(strings.SplitN(line[i+8:], "\n", 2)[0]), &r); err != nil {
				t.Fatal(err)
			}
			t.Logf("peak %.0f MB in %.1f s: %s", float64(r.PeakRSS)/(1<<20), r.Seconds, r.Error)
			if !r.Refused {
				t.Errorf("conversion ended with %q, want a refusal naming a limit", r.Error)
			}
			limit := h.MaxPeakBytes
			if limit <= 0 {
				limit = 1 << 30
			}
			if r.PeakRSS <= 0 || r.PeakRSS >= limit {
				t.Errorf("peak resident set %d bytes, want under %d MiB", r.PeakRSS, limit>>20)
			}
		})
	}
}

// convertFileEnv makes TestHostileChild convert a file of one's own
// instead (a real manual, say), with MEMAGENT_PDF_MEMORY_MB if set:
//
//	MEMAGENT_DOCCONV_FILE=R-exts.pdf go test ./internal/docconv -run '^TestHostileChild$' -v
const convertFileEnv = "MEMAGENT_DOCCONV_FILE"

// TestHostileChild is the child of TestHostileInputsConvertWithinBounds
// (or converts the file named by convertFileEnv); it does nothing in a
// normal run.
func TestHostileChild(t *testing.T) {
	v, file := os.Getenv(hostileChildEnv), os.Getenv(convertFileEnv)
	if v == "" && file == "" {
		return
	}
	path, format := file, ""
	if v != "" {
		var i int
		fmt.Sscan(v, &i)
		h := docconvtest.HostileInputs()[i]
		path, format = filepath.Join(t.TempDir(), "doc"), h.Format
		if err := os.WriteFile(path, h.Make(), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		head := make([]byte, SniffBytes)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.ReadFull(f, head)
		f.Close()
		format = Detect(head[:n])
	}
	var limits Limits
	if mb := os.Getenv("MEMAGENT_PDF_MEMORY_MB"); mb != "" {
		fmt.Sscan(mb, &limits.PDFMemoryBytes)
		limits.PDFMemoryBytes <<= 20
	}
	c := &Converter{Instances: 1, CacheDir: DefaultCacheDir(), Limits: limits}
	defer c.Close()
	began := time.Now()
	_, err := c.Convert(context.Background(), format, path, io.Discard, nil)
	var bad *Error
	r := hostileReport{Refused: errors.As(err, &bad), PeakRSS: vmHWM(), Seconds: time.Since(began).Seconds()}
	if err != nil {
		r.Error = err.Error()
	}
	b, _ := json.Marshal(r)
	fmt.Printf("HOSTILE %s\n", b)
}

// vmHWM is this process's peak resident set, from /proc/self/status.
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
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

// TestHostilePDFsDoNotHoldUpOthers: while two hostile PDFs are converted on
// a converter of two instances, a small PDF waits for an instance, and is
// converted within a small factor of its time on an idle converter.
func TestHostilePDFsDoNotHoldUpOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("converts hostile PDFs")
	}
	dir := t.TempDir()
	bomb := filepath.Join(dir, "bomb.pdf")
	small := filepath.Join(dir, "small.pdf")
	if err := os.WriteFile(bomb, docconvtest.XObjectBombPDF(64000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, docconvtest.PDF(docconvtest.PDFOptions{Pages: 5, FactPage: 2, Fact: docgen.Fact, Seed: 1}), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Converter{Instances: 2, CacheDir: DefaultCacheDir()}
	defer c.Close()
	ctx := context.Background()
	convert := func(path string) (time.Duration, error) {
		began := time.Now()
		_, err := c.Convert(ctx, FormatPDF, path, io.Discard, nil)
		return time.Since(began), err
	}
	idle, err := convert(small)
	if err != nil {
		t.Fatal(err)
	}
	idle, _ = convert(small) // warm
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := convert(bomb); err == nil {
				t.Error("a hostile PDF converted")
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // both hold the instances
	busy, err := convert(small)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	after, err := convert(small)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("small PDF: %v idle, %v behind two hostile PDFs, %v after them", idle, busy, after)
	if busy > 10*idle+2*time.Second {
		t.Errorf("the small PDF took %v behind two hostile PDFs, against %v idle", busy, idle)
	}
	if after > 3*idle+200*time.Millisecond {
		t.Errorf("after the hostile PDFs the small one took %v, against %v before: their memory or state stayed", after, idle)
	}
}
