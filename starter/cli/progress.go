package cli

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

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/memclient"
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

// unit is what a run counts its progress in.
type unit int

const (
	unitChunks unit = iota // a document's chunks: "chunk 3/10"
	unitItems              // a batch's items: "3/10 items"
)

// snapshot is one reading of a run's progress in the terms the view
// draws, whatever the workflow: a stage, units done of a total, tokens when
// known, and the workflow's own notes.
type snapshot struct {
	stage       string
	unit        unit
	done, total int
	// tokensDone of tokensTotal; tokensTotal 0 shows no tokens.
	// knownTokens is false when the snapshot was read without them (from
	// search attributes): the view then keeps the last known counts.
	tokensDone, tokensTotal int64
	knownTokens             bool
	// tokensReused of tokensDone were taken from memory checkpoints of
	// earlier readings, not read: the rate counts only what was read.
	tokensReused int64
	// busy says the stage is the one that does the units (reading,
	// running): only then are a rate and an ETA shown.
	busy bool
	// notes follow the counts, such as "1/2 questions done" or "3 running".
	notes []string
	// trouble is what keeps the run from progressing (a failing activity
	// and its next attempt, a failing workflow task, no worker), or "".
	trouble string
}

// qaSnapshot is a DocumentQA run's progress as a snapshot.
func qaSnapshot(p api.Progress, knownTokens bool) snapshot {
	s := snapshot{
		stage: p.Stage, unit: unitChunks, done: p.ChunksDone, total: p.ChunksTotal,
		tokensDone: p.TokensDone, tokensTotal: p.TokensTotal, knownTokens: knownTokens,
		tokensReused: p.TokensReused, busy: p.Stage == api.StageReading,
	}
	if p.ChunksReused > 0 {
		s.notes = append(s.notes, fmt.Sprintf("%d chunks reused", p.ChunksReused))
	}
	return s
}

// reviewSnapshot is a review's progress as a snapshot: the chunks every
// question still going has read or reused, and how many questions are
// answered. Tokens are those of all the questions' readings, read and
// reused apart.
func reviewSnapshot(p api.ReviewProgress) snapshot {
	s := snapshot{
		stage: p.Stage, unit: unitChunks, done: p.ChunksDone, total: p.ChunksTotal,
		tokensDone: p.TokensDone, tokensTotal: p.TokensTotal, knownTokens: true,
		busy: p.Stage == api.StageReading,
	}
	if len(p.Questions) == 0 {
		return s
	}
	if passed := p.TokensRead + p.TokensReused; passed > 0 {
		// Over all the questions' readings: one question read every chunk
		// while the others reused theirs is not 0 tokens.
		s.tokensDone, s.tokensTotal, s.tokensReused = passed, p.TokensTotal*int64(len(p.Questions)), p.TokensReused
	}
	done, failed := 0, 0
	for _, q := range p.Questions {
		switch q.Status {
		case api.QuestionDone:
			done++
		case api.QuestionFailed:
			failed++
		}
	}
	s.notes = append(s.notes, fmt.Sprintf("%d/%d questions done", done, len(p.Questions)))
	if failed > 0 {
		s.notes = append(s.notes, fmt.Sprintf("%d failed", failed))
	}
	if p.ChunksReused > 0 {
		s.notes = append(s.notes, fmt.Sprintf("chunk readings %d read, %d reused", p.ChunksRead, p.ChunksReused))
	}
	if p.AnswersReused > 0 {
		s.notes = append(s.notes, fmt.Sprintf("%d answers reused", p.AnswersReused))
	}
	return s
}

// batchSnapshot is a batch's progress as a snapshot: items with an outcome
// of the items in the manifest, and what the window holds.
func batchSnapshot(p api.BatchProgress) snapshot {
	s := snapshot{stage: p.Stage, unit: unitItems, done: p.Done, total: p.Items, busy: p.Stage == api.BatchStageRunning}
	if p.Items == 0 {
		return s
	}
	s.notes = []string{fmt.Sprintf("%d running", p.Running), fmt.Sprintf("%d failed", p.Failed), fmt.Sprintf("%d reused", p.Reused)}
	if p.Run > 1 {
		s.notes = append(s.notes, fmt.Sprintf("run %d", p.Run))
	}
	return s
}

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
	last      snapshot
	seen      bool
	printed   string // key of the last plain line
	printedAt time.Time
	drawn     bool   // a bar is on the current terminal line
	trouble   string // the trouble last printed
}

type sample struct {
	at    time.Time
	units int
	// tokens is -1 when unknown (progress read from search attributes).
	tokens int64
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

// update records a DocumentQA run's progress p, read now. knownTokens is
// false when p came from search attributes, which carry chunks but not
// tokens.
func (v *progressView) update(p api.Progress, knownTokens bool) {
	v.show(qaSnapshot(p, knownTokens))
}

// show records s, read now, and redraws or prints as the mode says.
func (v *progressView) show(s snapshot) {
	now := v.now()
	smp := sample{at: now, units: s.done, tokens: s.tokensDone - s.tokensReused}
	if !s.knownTokens {
		smp.tokens = -1
		s.tokensDone, s.tokensTotal, s.tokensReused = v.last.tokensDone, v.last.tokensTotal, v.last.tokensReused
	}
	stageChanged := !v.seen || s.stage != v.last.stage
	v.last, v.seen = s, true
	if stageChanged {
		// Rates measure one stage: preparing is not reading.
		v.samples = v.samples[:0]
	}
	v.samples = append(v.samples, smp)
	for len(v.samples) > 2 && now.Sub(v.samples[0].at) > rateWindow {
		v.samples = v.samples[1:]
	}
	if s.trouble != v.trouble {
		// Trouble gets a line of its own, above a bar, when it starts,
		// changes or ends.
		msg := "  ! " + s.trouble
		if s.trouble == "" {
			msg = "  ok: the run is moving again"
		}
		if v.tty {
			fmt.Fprintf(v.w, "\r%s\x1b[K\n", msg)
			v.drawn = false
		} else {
			fmt.Fprintln(v.w, msg)
		}
		v.trouble = s.trouble
	}
	if v.tty {
		fmt.Fprintf(v.w, "\r%s\x1b[K", v.fit())
		v.drawn = true
		return
	}
	key := progressKey(s)
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
func progressKey(s snapshot) string {
	return fmt.Sprintf("%s %d/%d %d %s", s.stage, s.done, s.total, s.tokensDone, strings.Join(s.notes, ","))
}

// Kinds of the parts of a progress line; a narrow terminal drops tokens,
// then the rate, then the notes.
const (
	partCounts = iota
	partNote
	partTokens
	partRate
	partETA
)

type part struct {
	kind int
	text string
}

// parts renders the last snapshot's known parts in the order they are
// shown.
func (v *progressView) parts() []part {
	s := v.last
	var parts []part
	if s.total > 0 {
		counts := fmt.Sprintf("chunk %d/%d", s.done, s.total)
		if s.unit == unitItems {
			counts = fmt.Sprintf("%d/%d items", s.done, s.total)
		}
		parts = append(parts, part{partCounts, counts})
	}
	for _, n := range s.notes {
		parts = append(parts, part{partNote, n})
	}
	if s.tokensTotal > 0 {
		tokens := fmt.Sprintf("%s/%s tokens", humanCount(float64(s.tokensDone)), humanCount(float64(s.tokensTotal)))
		if s.tokensReused > 0 {
			tokens += fmt.Sprintf(" (%s read, %s reused)", humanCount(float64(s.tokensDone-s.tokensReused)), humanCount(float64(s.tokensReused)))
		}
		parts = append(parts, part{partTokens, tokens})
	}
	if tps, ok := v.tokenRate(); ok && s.busy {
		parts = append(parts, part{partRate, humanCount(tps) + " tokens/s"})
	}
	if eta, ok := v.eta(); ok && s.busy {
		parts = append(parts, part{partETA, "ETA " + formatETA(eta)})
	} else if s.busy && s.done < s.total {
		parts = append(parts, part{partETA, "ETA --"})
	}
	return parts
}

func joinParts(parts []part, sep string) string {
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.text
	}
	return strings.Join(texts, sep)
}

// line renders the last progress as a plain line.
func (v *progressView) line() string {
	parts := v.parts()
	if len(parts) == 0 {
		return v.last.stage
	}
	return v.last.stage + ": " + joinParts(parts, ", ")
}

// fit renders the bar line within the terminal's width: on a narrow
// terminal the bar shrinks and the token counts go first, then the rate,
// then the notes; the counts and the ETA stay.
func (v *progressView) fit() string {
	parts := v.parts()
	render := func(bar int) string {
		head := fmt.Sprintf("%-9s %s", v.last.stage, renderBar(v.last.done, v.last.total, bar))
		if len(parts) == 0 {
			return head
		}
		return head + "  " + joinParts(parts, " · ")
	}
	limit := v.width - 1
	for _, drop := range []int{-1, partTokens, partRate, partNote} {
		parts = slices.DeleteFunc(parts, func(p part) bool { return p.kind == drop })
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

// eta extrapolates the unit rate over the window to the units left.
// Chunks are the same size but the last, so chunks measure work as well as
// tokens do, and they are known even without a worker to query.
func (v *progressView) eta() (time.Duration, bool) {
	if len(v.samples) < 2 {
		return 0, false
	}
	first, last := v.samples[0], v.samples[len(v.samples)-1]
	left := v.last.total - v.last.done
	if last.units <= first.units || left <= 0 {
		return 0, false
	}
	perUnit := last.at.Sub(first.at) / time.Duration(last.units-first.units)
	return perUnit * time.Duration(left), true
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

// queryTimeout bounds one progress query: without a worker, a query
// waits for one until its deadline.
const queryTimeout = 3 * time.Second

// readProgress returns a DocumentQA run's progress from its progress query
// or, when no worker answers, from its search attributes (chunks and
// status, no tokens). knownTokens says which.
func readProgress(ctx context.Context, c client.Client, id string) (p api.Progress, knownTokens bool, err error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	p, qerr := queryProgress(qctx, c, id)
	cancel()
	if qerr == nil {
		return p, true, nil
	}
	p, err = attrProgress(ctx, c, id, qerr)
	return p, false, err
}

// attrProgress reads what the search attributes say of a run's progress:
// its status and, for documents and reviews, its chunks.
func attrProgress(ctx context.Context, c client.Client, id string, qerr error) (api.Progress, error) {
	var p api.Progress
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return p, fmt.Errorf("progress of %s: query: %v; describe: %w", id, qerr, err)
	}
	sa := d.TypedSearchAttributes
	p.Stage, _ = sa.GetKeyword(api.StatusKey)
	done, _ := sa.GetInt64(api.ChunksDoneKey)
	total, _ := sa.GetInt64(api.ChunksTotalKey)
	p.ChunksDone, p.ChunksTotal = int(done), int(total)
	if p.Stage == "" {
		p.Stage = strings.ToLower(d.Status.String())
	}
	return p, nil
}

// progressReader reads a run's progress as a snapshot.
type progressReader func(ctx context.Context) (snapshot, error)

// readerFor reads the progress of run id, of workflow type kind, from the
// progress query of its type, or from its search attributes when no worker
// answers.
func readerFor(c client.Client, namespace, kind, id string) progressReader {
	read := progressOf(c, kind, id)
	d := newDiagnoser(c, namespace, id)
	return func(ctx context.Context) (snapshot, error) {
		s, err := read(ctx)
		if err == nil {
			s.trouble = d.trouble(ctx)
			if d.converting != "" {
				s.notes = append(s.notes, d.converting)
			}
		}
		return s, err
	}
}

// progressOf reads a run's progress, by its workflow type.
func progressOf(c client.Client, kind, id string) progressReader {
	mc := memclient.New(c, memclient.Options{})
	switch kind {
	case api.ReviewDocumentName:
		return func(ctx context.Context) (snapshot, error) {
			qctx, cancel := context.WithTimeout(ctx, queryTimeout)
			p, qerr := mc.ReviewProgress(qctx, id)
			cancel()
			if qerr == nil {
				return reviewSnapshot(p), nil
			}
			ap, err := attrProgress(ctx, c, id, qerr)
			return qaSnapshot(ap, false), err
		}
	case api.BatchQAName:
		return func(ctx context.Context) (snapshot, error) {
			qctx, cancel := context.WithTimeout(ctx, queryTimeout)
			p, qerr := mc.BatchProgress(qctx, id)
			cancel()
			if qerr == nil {
				return batchSnapshot(p), nil
			}
			ap, err := attrProgress(ctx, c, id, qerr)
			return snapshot{stage: ap.Stage, unit: unitItems}, err
		}
	}
	return func(ctx context.Context) (snapshot, error) {
		p, known, err := readProgress(ctx, c, id)
		return qaSnapshot(p, known), err
	}
}

// watchProgress shows the progress of DocumentQA run id on view until the
// returned stop is called; stop reads the progress once more, so the view
// ends on the final state, and closes the view.
func watchProgress(ctx context.Context, c client.Client, namespace, id string, view *progressView) (stop func()) {
	return watchRun(ctx, readerFor(c, namespace, api.DocumentQAName, id), view)
}

// watchRun shows what read returns on view until the returned stop is
// called, as watchProgress does.
func watchRun(ctx context.Context, read progressReader, view *progressView) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	poll := func(ctx context.Context) {
		if s, err := read(ctx); err == nil {
			view.show(s)
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
