package docconv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// OCR modes (OCROptions.Mode): which pages of a PDF are read by OCR.
const (
	// OCRAuto, the default, reads the pages that are scans (see
	// OCRDecision) and keeps the text layer of every other page: a
	// born-digital page is never read by OCR.
	OCRAuto = api.OCRAuto
	// OCRForce reads every page by OCR, its text layer ignored (for a PDF
	// whose text layer is garbage).
	OCRForce = api.OCRForce
	// OCROff reads no page by OCR: a scanned page has no text.
	OCROff = api.OCROff
)

// DefaultOCRLanguages are the languages OCR reads when none are asked for.
const DefaultOCRLanguages = api.DefaultOCRLanguages

// The page decision's thresholds (OCRDecision), and the engine's bounds.
const (
	// OCRCoverImages is the share of a page's area that images must cover
	// for a page with a thin text layer to count as a scan.
	OCRCoverImages = 0.75
	// OCRThinTextChars is the most characters a text layer may have for
	// the page still to count as a scan when images cover it: a Bates
	// number, a stamp, a fax header; a page with more is born-digital.
	OCRThinTextChars = 200
	// DefaultOCRDPI is the resolution a page is rasterised at, unless its
	// largest image has a lower one of at least MinOCRDPI: rendering above
	// the image's own resolution adds pixels, not information.
	DefaultOCRDPI = 300
	MinOCRDPI     = 150
	// DefaultOCRPageTimeout bounds the engine on one page
	// (MEMAGENT_OCR_PAGE_TIMEOUT); a page past it is killed, tried once
	// more, and then recorded as failed.
	DefaultOCRPageTimeout = 2 * time.Minute
	// DefaultOCRMemoryBytes bounds the address space of one engine
	// process (MEMAGENT_OCR_MEMORY_MB): Tesseract needs about 150 MiB for
	// a letter page at 300 DPI.
	DefaultOCRMemoryBytes = 512 << 20
	// DefaultMaxImagePixels bounds the pixels of one image on a page that
	// is rasterised for OCR (a 600 DPI A3 scan is 70 million): a page
	// image of more fails the conversion as *Error before it is decoded.
	DefaultMaxImagePixels = 200_000_000
	// ocrAttempts is how many times the engine is started on a page that
	// times out, crashes or runs out of memory before the page is
	// recorded as failed.
	ocrAttempts = 2
)

// OCROptions say which pages of a PDF are read by OCR and in which
// languages. The zero value is OCRAuto in DefaultOCRLanguages.
type OCROptions struct {
	// Mode is OCRAuto, OCRForce or OCROff ("" is OCRAuto).
	Mode string `json:"mode,omitempty"`
	// Languages are Tesseract's language codes joined by "+" ("eng+deu");
	// "" is DefaultOCRLanguages.
	Languages string `json:"languages,omitempty"`
}

// Normalized returns o with its defaults filled in.
func (o OCROptions) Normalized() OCROptions {
	if o.Mode == "" {
		o.Mode = OCRAuto
	}
	if o.Languages == "" {
		o.Languages = DefaultOCRLanguages
	}
	return o
}

// CheckOCR reports options that can never work: an unknown mode, or a
// language that is not a Tesseract language code. Whether the languages
// are installed is the worker's to say (Engine.Check).
func CheckOCR(o OCROptions) error {
	switch o.Mode {
	case "", OCRAuto, OCRForce, OCROff:
	default:
		return fmt.Errorf("ocr %q is not auto, force or off", o.Mode)
	}
	return api.CheckOCRLanguages(o.Languages)
}

// OCRDecision says whether a page is read by OCR, and why: with OCRForce
// every page; with OCRAuto a page whose text layer is empty and which
// draws an image (memagent.OCRNoTextLayer), or whose images cover at
// least OCRCoverImages of it while its text layer has fewer than
// OCRThinTextChars characters (memagent.OCRImagesCover); never with
// OCROff. chars counts the page's text-layer characters (white space
// aside), cover the share of its area its images cover. "" means no OCR.
func OCRDecision(mode string, chars int, cover float64) string {
	switch mode {
	case OCROff:
		return ""
	case OCRForce:
		return memagent.OCRForced
	}
	switch {
	case chars == 0 && cover > 0:
		return memagent.OCRNoTextLayer
	case cover >= OCRCoverImages && chars < OCRThinTextChars:
		return memagent.OCRImagesCover
	}
	return ""
}

// Engine runs Tesseract, one process a page: a crash or a leak costs
// that page's attempt, never the worker. Processes run with
// OMP_THREAD_LIMIT=1 (Tesseract's OpenMP threads oversubscribe the CPUs
// when pages run in parallel), at a lower CPU priority than the worker,
// under an address-space limit and a timeout. At most Workers run at
// once, whatever the number of documents being converted.
type Engine struct {
	// Path is the tesseract binary.
	Path string
	// Version is Tesseract's version ("5.3.0").
	Version string
	// Languages are the installed languages.
	Languages []string
	// Workers bounds the processes running at once; default
	// runtime.GOMAXPROCS (the worker's share of CPUs), at most
	// MaxDefaultOCRWorkers.
	Workers int
	// PageTimeout bounds one page; default DefaultOCRPageTimeout.
	PageTimeout time.Duration
	// MemoryBytes bounds one process's address space; default
	// DefaultOCRMemoryBytes.
	MemoryBytes int64

	once sync.Once
	sem  chan struct{}

	// mu guards the pages read and the seconds they took, for
	// SecondsPerPage.
	mu      sync.Mutex
	read    int
	seconds float64
}

// DefaultOCRSecondsPerPage is what a page is expected to take before the
// engine has read one: Tesseract 5 on a letter page of dense text at 300
// DPI, on one core (BENCHMARKS.md).
const DefaultOCRSecondsPerPage = 3.0

// SecondsPerPage is the mean time the engine took on the pages it read
// with text, or DefaultOCRSecondsPerPage before it has read one.
func (e *Engine) SecondsPerPage() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.read == 0 {
		return DefaultOCRSecondsPerPage
	}
	return e.seconds / float64(e.read)
}

// MaxDefaultOCRWorkers caps the default of Engine.Workers: each process
// takes 75–150 MiB at 300 DPI, and a worker without a CPU limit sees all
// of a node's cores.
const MaxDefaultOCRWorkers = 4

// EnginePackage is the Debian package that installs the engine, named by
// the errors that say it is missing.
const EnginePackage = "tesseract-ocr"

// FindEngine finds Tesseract (path, or "tesseract" on PATH when path is
// "") and asks it for its version and languages. An engine older than 4
// (without the LSTM recogniser this package's thresholds were set with)
// is refused.
func FindEngine(ctx context.Context, path string) (*Engine, error) {
	if path == "" {
		path = "tesseract"
	}
	bin, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("no OCR engine: %s is not installed (Debian: apt-get install %s %s-eng)", path, EnginePackage, EnginePackage)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("no OCR engine: %s --version: %v", bin, err)
	}
	m := regexp.MustCompile(`(?m)^tesseract v?(\d+)\.(\d+)\.(\d+)`).FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("no OCR engine: %s --version does not say which Tesseract it is", bin)
	}
	if major, _ := strconv.Atoi(string(m[1])); major < 4 {
		return nil, fmt.Errorf("no OCR engine: %s is Tesseract %s.%s, older than 4: install %s 5", bin, m[1], m[2], EnginePackage)
	}
	e := &Engine{Path: bin, Version: fmt.Sprintf("%s.%s.%s", m[1], m[2], m[3])}
	out, err = exec.CommandContext(ctx, bin, "--list-langs").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("no OCR engine: %s --list-langs: %v", bin, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.Contains(line, " ") && line != "osd" {
			e.Languages = append(e.Languages, line)
		}
	}
	slices.Sort(e.Languages)
	return e, nil
}

// Name is the engine and its version, as pages record it.
func (e *Engine) Name() string { return "tesseract " + e.Version }

// Check reports languages the engine does not have, naming the Debian
// package that installs each.
func (e *Engine) Check(languages string) error {
	var missing, pkgs []string
	for _, l := range strings.Split(languages, "+") {
		if !slices.Contains(e.Languages, l) {
			missing = append(missing, l)
			pkgs = append(pkgs, EnginePackage+"-"+strings.ReplaceAll(strings.ToLower(l), "_", "-"))
		}
	}
	if len(missing) > 0 {
		return badf("asks for OCR in %s, which the worker's Tesseract does not have (it has %s): install %s on the worker, or ask in other languages",
			strings.Join(missing, ", "), strings.Join(e.Languages, ", "), strings.Join(pkgs, " "))
	}
	return nil
}

func (e *Engine) slots() chan struct{} {
	e.once.Do(func() {
		n := e.Workers
		if n <= 0 {
			n = min(runtime.GOMAXPROCS(0), MaxDefaultOCRWorkers)
		}
		e.sem = make(chan struct{}, n)
	})
	return e.sem
}

// Slots is how many pages the engine reads at once.
func (e *Engine) Slots() int { return cap(e.slots()) }

// errPageTimeout is the cause of a page's context past PageTimeout.
var errPageTimeout = errors.New("OCR page timed out")

// OCRWord is one word the engine read, its box in pixels of the image
// (y downwards), and its line.
type OCRWord struct {
	Text                     string
	Left, Top, Width, Height int
	// Conf is the engine's confidence, in [0, 1].
	Conf float64
	// Line identifies the word's line (block, paragraph, line).
	Line [3]int
}

// PageText is what the engine read on one page.
type PageText struct {
	Words []OCRWord
	// Lines are the boxes of the lines, by Line key.
	Lines map[[3]int][4]int
	// Seconds is the engine's time on the page.
	Seconds float64
}

// Recognize reads the grayscale image at path (a PGM), of the given
// resolution, in languages. It waits for a free slot, and returns the
// context's error if that ends first. A process that times out, crashes
// or runs out of memory is started once more; a second failure returns
// *PageError.
func (e *Engine) Recognize(ctx context.Context, path string, dpi int, languages string) (*PageText, error) {
	sem := e.slots()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-sem }()
	var last error
	for attempt := 0; attempt < ocrAttempts; attempt++ {
		t, err := e.run(ctx, path, dpi, languages)
		if err == nil {
			return t, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		last = err
	}
	return nil, &PageError{Msg: last.Error()}
}

// PageError is a page the engine failed on at every attempt.
type PageError struct{ Msg string }

func (e *PageError) Error() string { return e.Msg }

// run starts the engine once on the image.
func (e *Engine) run(ctx context.Context, path string, dpi int, languages string) (*PageText, error) {
	timeout := e.PageTimeout
	if timeout <= 0 {
		timeout = DefaultOCRPageTimeout
	}
	mem := e.MemoryBytes
	if mem <= 0 {
		mem = DefaultOCRMemoryBytes
	}
	pctx, cancel := context.WithTimeoutCause(ctx, timeout, errPageTimeout)
	defer cancel()
	args := []string{path, "stdout", "-l", languages, "--dpi", strconv.Itoa(dpi), "--psm", "3", "tsv"}
	var cmd *exec.Cmd
	if sh, err := exec.LookPath("/bin/sh"); err == nil {
		// The shell sets the limit on itself and becomes the engine.
		cmd = exec.CommandContext(pctx, sh, append([]string{"-c", `ulimit -v "$1" && shift && exec "$@"`, "sh", strconv.FormatInt(mem>>10, 10), e.Path}, args...)...)
	} else {
		cmd = exec.CommandContext(pctx, e.Path, args...)
	}
	cmd.Env = append(engineEnv(), "OMP_THREAD_LIMIT=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 2 << 10}
	cmd.Stdout, cmd.Stderr = &limitedWriter{w: &stdout, n: maxTSVBytes}, stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", e.Name(), err)
	}
	// Below the worker: a page being read never starves the worker's
	// own work of CPU.
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, 10)
	err := cmd.Wait()
	secs := time.Since(began).Seconds()
	switch {
	case context.Cause(pctx) == errPageTimeout:
		return nil, fmt.Errorf("%s did not finish the page in %s (raise MEMAGENT_OCR_PAGE_TIMEOUT on the worker)", e.Name(), timeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "bad_alloc") || strings.Contains(msg, "failed to map") {
			return nil, fmt.Errorf("%s ran out of its %d MiB of memory on the page (raise MEMAGENT_OCR_MEMORY_MB on the worker)", e.Name(), mem>>20)
		}
		return nil, fmt.Errorf("%s failed on the page: %v: %s", e.Name(), err, lastLine(msg))
	}
	t, err := ParseTSV(&stdout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Name(), err)
	}
	t.Seconds = secs
	if len(t.Words) > 0 {
		e.mu.Lock()
		e.read++
		e.seconds += secs
		e.mu.Unlock()
	}
	return t, nil
}

// maxTSVBytes bounds what the engine may print for one page: a page of
// 200,000 characters (MaxPageChars) as TSV is about 8 MiB.
const maxTSVBytes = 16 << 20

// engineEnv is the worker's environment less what would change how the
// engine reads (its own thread settings, set after).
func engineEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OMP_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.ToValidUTF8(string(t.buf), "") }

// limitedWriter fails a write past n bytes.
type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, errors.New("the engine printed more than a page can hold")
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// ParseTSV reads Tesseract's TSV output: the words (level 5) with their
// boxes and confidences, and the boxes of their lines (level 4).
func ParseTSV(r io.Reader) (*PageText, error) {
	t := &PageText{Lines: map[[3]int][4]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	header := true
	for sc.Scan() {
		if header {
			header = false
			if !strings.HasPrefix(sc.Text(), "level\t") {
				return nil, errors.New("its output is not TSV")
			}
			continue
		}
		f := strings.SplitN(sc.Text(), "\t", 12)
		if len(f) < 11 {
			continue
		}
		var n [10]int
		for i := 0; i < 10; i++ {
			n[i], _ = strconv.Atoi(f[i])
		}
		key := [3]int{n[2], n[3], n[4]}
		switch n[0] {
		case 4:
			t.Lines[key] = [4]int{n[6], n[7], n[8], n[9]}
		case 5:
			if len(f) < 12 {
				continue
			}
			text := strings.TrimSpace(strings.ToValidUTF8(f[11], "\uFFFD"))
			if text == "" {
				continue
			}
			conf, _ := strconv.ParseFloat(f[10], 64)
			t.Words = append(t.Words, OCRWord{Text: text, Left: n[6], Top: n[7], Width: n[8], Height: n[9],
				Conf: min(max(conf/100, 0), 1), Line: key})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read its output: %w", err)
	}
	return t, nil
}

// WordBox is a word OCR read and its box on the page, as fractions of the
// page's width and height from its top-left corner (as Box), with the
// line it is on (counted from 0 in the engine's reading order). The desk
// highlights a quote on a scanned page from these (OCRChars, FindText).
type WordBox struct {
	Text string `json:"t"`
	Line int    `json:"l"`
	Box  Box    `json:"b"`
}

// WordBoxes are the words' boxes on a page rendered as an image of w × h
// pixels, in reading order.
func (t *PageText) WordBoxes(w, h int) []WordBox {
	if w <= 0 || h <= 0 {
		return nil
	}
	// Five digits: a tenth of a pixel of a 1,000-DPI page, and half the
	// JSON of a float64's.
	frac := func(v, of int) float64 { return math.Round(float64(v)/float64(of)*1e5) / 1e5 }
	out := make([]WordBox, 0, len(t.Words))
	line := -1
	var last [3]int
	for i, wd := range t.Words {
		if i == 0 || wd.Line != last {
			line++
			last = wd.Line
		}
		out = append(out, WordBox{Text: wd.Text, Line: line, Box: Box{
			Left: frac(wd.Left, w), Top: frac(wd.Top, h), Right: frac(wd.Left+wd.Width, w), Bottom: frac(wd.Top+wd.Height, h),
		}})
	}
	return out
}

// Stats are the page's word count, mean confidence and count of words
// under memagent.OCRLowWordConfidence.
func (t *PageText) Stats() (words int, mean float64, low int) {
	var sum float64
	for _, w := range t.Words {
		sum += w.Conf
		if w.Conf < memagent.OCRLowWordConfidence {
			low++
		}
	}
	if len(t.Words) > 0 {
		mean = sum / float64(len(t.Words))
	}
	return len(t.Words), mean, low
}

// Glyphs turns the words into glyphs in PDF user space (points, y
// upwards) of a page of the given height rendered at dpi, for the layout
// the text layer's glyphs go through: each word's characters share its
// box evenly, and every word of a line gets the line's vertical middle,
// so that a line read from a slightly rotated scan stays one row.
func (t *PageText) Glyphs(dpi int, pageHeight float64) []Glyph {
	scale := 72 / float64(dpi)
	// A line's height: the median height of its words.
	heights := map[[3]int][]int{}
	for _, w := range t.Words {
		heights[w.Line] = append(heights[w.Line], w.Height)
	}
	var glyphs []Glyph
	for _, w := range t.Words {
		hs := heights[w.Line]
		slices.Sort(hs)
		h := float64(hs[len(hs)/2])
		mid := float64(w.Top) + float64(w.Height)/2
		if box, ok := t.Lines[w.Line]; ok {
			mid = float64(box[1]) + float64(box[3])/2
		}
		n := utf8.RuneCountInString(w.Text)
		step := float64(w.Width) / float64(n)
		k := 0
		for _, r := range w.Text {
			left := float64(w.Left) + float64(k)*step
			glyphs = append(glyphs, Glyph{R: r,
				Left: left * scale, Right: (left + step) * scale,
				Top: pageHeight - (mid-h/2)*scale, Bottom: pageHeight - (mid+h/2)*scale,
				SpaceBefore: k == 0, Index: len(glyphs) + 1})
			k++
		}
	}
	return glyphs
}
