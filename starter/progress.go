package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/client"
	"golang.org/x/term"

	"github.com/memagent/memagent/workflows"
)

// isTerminal reports whether w is a terminal, where progress is redrawn in
// place rather than printed line by line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is w's width in columns, or 80 when unknown.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// rateWindow is how far back the throughput (and so the ETA) looks.
const rateWindow = time.Minute

// progressView renders a run's progress: on a terminal, one bar redrawn in
// place with \r; elsewhere, one line per change and at most one every
// minGap, so logs stay short.
type progressView struct {
	w      io.Writer
	tty    bool
	width  int           // terminal columns
	minGap time.Duration // plain lines: least time between two
	now    func() time.Time

	samples   []sample
	last      workflows.Progress
	seen      bool
	printed   string // key of the last plain line
	printedAt time.Time
	drawn     bool // a bar is on the current terminal line
}

type sample struct {
	at     time.Time
	chunks int
	tokens int64 // -1: unknown (progress read from search attributes)
}

func newProgressView(w io.Writer, tty bool) *progressView {
	v := &progressView{w: w, tty: tty, width: 80, minGap: 5 * time.Second, now: time.Now}
	if tty {
		v.width = terminalWidth(w)
	}
	return v
}

// pollInterval is how often a watcher reads the progress for this view.
func (v *progressView) pollInterval() time.Duration {
	if v.tty {
		return time.Second
	}
	return 2 * time.Second
}

// update records p, read now, and redraws or prints as the mode says.
// knownTokens is false when p came from search attributes, which carry
// chunks but not tokens.
func (v *progressView) update(p workflows.Progress, knownTokens bool) {
	now := v.now()
	s := sample{at: now, chunks: p.ChunksDone, tokens: p.TokensDone}
	if !knownTokens {
		s.tokens = -1
		p.TokensDone, p.TokensTotal = v.last.TokensDone, v.last.TokensTotal
	}
	stageChanged := !v.seen || p.Stage != v.last.Stage
	v.last, v.seen = p, true
	if stageChanged {
		// Rates measure one stage: preparing is not reading.
		v.samples = v.samples[:0]
	}
	v.samples = append(v.samples, s)
	for len(v.samples) > 2 && now.Sub(v.samples[0].at) > rateWindow {
		v.samples = v.samples[1:]
	}
	if v.tty {
		fmt.Fprintf(v.w, "\r%s\x1b[K", v.fit())
		v.drawn = true
		return
	}
	key := progressKey(p)
	if key == v.printed || (!stageChanged && now.Sub(v.printedAt) < v.minGap) {
		return
	}
	fmt.Fprintln(v.w, v.line())
	v.printed, v.printedAt = key, now
}

// finish ends the display: the bar's line is closed, and a plain view
// prints the last state if it has not yet.
func (v *progressView) finish() {
	if v.tty {
		if v.drawn {
			fmt.Fprintln(v.w)
			v.drawn = false
		}
		return
	}
	if !v.seen {
		return
	}
	if key := progressKey(v.last); key != v.printed {
		fmt.Fprintln(v.w, v.line())
		v.printed, v.printedAt = key, v.now()
	}
}

// progressKey identifies what a plain line reports, rate and ETA aside:
// a line is printed only when it changes.
func progressKey(p workflows.Progress) string {
	return fmt.Sprintf("%s %d/%d %d", p.Stage, p.ChunksDone, p.ChunksTotal, p.TokensDone)
}

// The parts of a progress line, in the order they are shown.
const (
	partChunks = iota
	partTokens
	partRate
	partETA
	numParts
)

// parts renders the last progress's parts, "" for those unknown.
func (v *progressView) parts() [numParts]string {
	p := v.last
	var parts [numParts]string
	if p.ChunksTotal > 0 {
		parts[partChunks] = fmt.Sprintf("chunk %d/%d", p.ChunksDone, p.ChunksTotal)
	}
	if p.TokensTotal > 0 {
		parts[partTokens] = fmt.Sprintf("%s/%s tokens", humanCount(float64(p.TokensDone)), humanCount(float64(p.TokensTotal)))
	}
	reading := p.Stage == workflows.StageReading
	if tps, ok := v.tokenRate(); ok && reading {
		parts[partRate] = humanCount(tps) + " tokens/s"
	}
	if eta, ok := v.eta(); ok && reading {
		parts[partETA] = "ETA " + formatETA(eta)
	} else if reading && p.ChunksDone < p.ChunksTotal {
		parts[partETA] = "ETA --"
	}
	return parts
}

// line renders the last progress as a plain line.
func (v *progressView) line() string {
	parts := v.parts()
	known := slices.DeleteFunc(parts[:], func(s string) bool { return s == "" })
	if len(known) == 0 {
		return v.last.Stage
	}
	return v.last.Stage + ": " + strings.Join(known, ", ")
}

// fit renders the bar line within the terminal's width: on a narrow
// terminal the bar shrinks and the token counts go first, then the rate;
// the chunks and the ETA stay.
func (v *progressView) fit() string {
	parts := v.parts()
	render := func(bar int) string {
		known := slices.DeleteFunc(slices.Clone(parts[:]), func(s string) bool { return s == "" })
		head := fmt.Sprintf("%-9s %s", v.last.Stage, renderBar(v.last.ChunksDone, v.last.ChunksTotal, bar))
		if len(known) == 0 {
			return head
		}
		return head + "  " + strings.Join(known, " · ")
	}
	limit := v.width - 1
	for _, drop := range []int{-1, partTokens, partRate} {
		if drop >= 0 {
			parts[drop] = ""
		}
		for bar := barWidth(v.width); bar >= 10; bar-- {
			if line := render(bar); utf8.RuneCountInString(line) <= limit {
				return line
			}
		}
	}
	line := []rune(render(10))
	return string(line[:max(0, min(len(line), limit))])
}

// tokenRate is tokens per second over the window, from samples whose
// tokens are known.
func (v *progressView) tokenRate() (float64, bool) {
	var first, last *sample
	for i := range v.samples {
		if v.samples[i].tokens < 0 {
			continue
		}
		if first == nil {
			first = &v.samples[i]
		}
		last = &v.samples[i]
	}
	if first == nil || last == first || last.tokens <= first.tokens {
		return 0, false
	}
	return float64(last.tokens-first.tokens) / last.at.Sub(first.at).Seconds(), true
}

// eta extrapolates the chunk rate over the window to the chunks left.
// Chunks are the same size but the last, so chunks measure work as well as
// tokens do, and they are known even without a worker to query.
func (v *progressView) eta() (time.Duration, bool) {
	if len(v.samples) < 2 {
		return 0, false
	}
	first, last := v.samples[0], v.samples[len(v.samples)-1]
	left := v.last.ChunksTotal - v.last.ChunksDone
	if last.chunks <= first.chunks || left <= 0 {
		return 0, false
	}
	perChunk := last.at.Sub(first.at) / time.Duration(last.chunks-first.chunks)
	return perChunk * time.Duration(left), true
}

func barWidth(cols int) int {
	return min(30, max(10, cols/5))
}

// renderBar draws done/total as a bar of width cells.
func renderBar(done, total, width int) string {
	filled := 0
	if total > 0 {
		filled = min(width, done*width/total)
	}
	return "[" + strings.Repeat("█", filled) + strings.Repeat("░", width-filled) + "]"
}

// humanCount renders 1234 as "1.2K", 148500 as "148K" and 3500000 as
// "3.5M": a decimal only below 10 of the unit.
func humanCount(n float64) string {
	unit := ""
	switch {
	case n >= 1e6:
		n, unit = n/1e6, "M"
	case n >= 1e3:
		n, unit = n/1e3, "K"
	}
	if n < 10 && unit != "" {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", n), ".0") + unit
	}
	return fmt.Sprintf("%.0f", n) + unit
}

// formatETA renders d to the second under an hour and to the minute above.
func formatETA(d time.Duration) string {
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

// readProgress returns the run's progress from its progress query or,
// when no worker answers, from its search attributes (chunks and status,
// no tokens). knownTokens says which.
func readProgress(ctx context.Context, c client.Client, id string) (p workflows.Progress, knownTokens bool, err error) {
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	p, qerr := queryProgress(qctx, c, id)
	cancel()
	if qerr == nil {
		return p, true, nil
	}
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return p, false, fmt.Errorf("progress of %s: query: %v; describe: %w", id, qerr, err)
	}
	sa := d.TypedSearchAttributes
	p.Stage, _ = sa.GetKeyword(workflows.StatusKey)
	done, _ := sa.GetInt64(workflows.ChunksDoneKey)
	total, _ := sa.GetInt64(workflows.ChunksTotalKey)
	p.ChunksDone, p.ChunksTotal = int(done), int(total)
	if p.Stage == "" {
		p.Stage = strings.ToLower(d.Status.String())
	}
	return p, false, nil
}

// watchProgress shows the progress of run id on view until the returned
// stop is called; stop reads the progress once more, so the view ends on
// the final state, and closes the view.
func watchProgress(ctx context.Context, c client.Client, id string, view *progressView) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	poll := func(ctx context.Context) {
		if p, known, err := readProgress(ctx, c, id); err == nil {
			view.update(p, known)
		}
	}
	go func() {
		defer close(done)
		t := time.NewTicker(view.pollInterval())
		defer t.Stop()
		for {
			poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		parent := ctx.Err() == nil
		cancel()
		<-done
		if parent {
			fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
			poll(fctx)
			fcancel()
		}
		view.finish()
	}
}
