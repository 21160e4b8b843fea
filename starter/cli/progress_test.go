package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
)

// clock is a fake time source that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func reading(done int) api.Progress      { return progressAt(api.StageReading, done) }

// progressAt is a 10-chunk, 10,000-token run with done chunks read.
func progressAt(stage string, done int) api.Progress {
	return api.Progress{Stage: stage, ChunksDone: done, ChunksTotal: 10, TokensDone: int64(done) * 1000, TokensTotal: 10_000}
}

func TestProgressViewPlainLines(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	v := newProgressView(&out, false)
	v.now = c.now

	steps := []struct {
		after time.Duration
		p     api.Progress
		known bool
		want  string // the line printed, "" for none
	}{
		{0, api.Progress{Stage: api.StagePreparing}, true, "preparing"},
		{time.Second, reading(0), true, "reading: chunk 0/10, 0/10K tokens, ETA --"},
		{2 * time.Second, reading(1), true, ""}, // a change, but within 5 s of the last line
		{2 * time.Second, reading(2), true, ""},
		{2 * time.Second, reading(3), true, "reading: chunk 3/10, 3K/10K tokens, 500 tokens/s, ETA 14s"},
		{2 * time.Second, reading(3), true, ""}, // no change
		// Read from search attributes: chunks, no tokens. The token rate
		// keeps to the samples whose tokens are known (3,000 tokens in
		// 8 s); the ETA follows the chunks (5 in 16 s, 5 left).
		{8 * time.Second, api.Progress{Stage: api.StageReading, ChunksDone: 5, ChunksTotal: 10}, false,
			"reading: chunk 5/10, 3K/10K tokens, 375 tokens/s, ETA 16s"},
		{time.Second, progressAt(api.StageAnswering, 10), true, "answering: chunk 10/10, 10K/10K tokens"},
		{time.Second, progressAt(api.StageDone, 10), true, "done: chunk 10/10, 10K/10K tokens"},
	}
	for i, s := range steps {
		out.Reset()
		c.advance(s.after)
		v.update(s.p, s.known)
		if got := strings.TrimSuffix(out.String(), "\n"); got != s.want {
			t.Errorf("step %d (%s %d/%d): printed %q, want %q", i, s.p.Stage, s.p.ChunksDone, s.p.ChunksTotal, got, s.want)
		}
	}
	out.Reset()
	v.finish()
	if out.Len() != 0 {
		t.Errorf("finish printed %q after the last state was printed, want nothing", out.String())
	}
}

func TestProgressViewPlainFinishPrintsPending(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	v := newProgressView(&out, false)
	v.now = c.now
	v.update(reading(1), true)
	c.advance(time.Second)
	v.update(reading(2), true) // held back by the gap
	out.Reset()
	v.finish()
	if got := out.String(); !strings.HasPrefix(got, "reading: chunk 2/10") {
		t.Errorf("finish printed %q, want the held-back line for chunk 2", got)
	}
}

func TestProgressViewTerminalBar(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	v := newProgressView(&out, true)
	v.now, v.width = c.now, 120
	for i := 0; i <= 4; i++ {
		v.update(reading(i), true)
		c.advance(2 * time.Second)
	}
	got := out.String()
	if strings.Contains(got, "\n") {
		t.Errorf("bar output has a newline before finish: %q", got)
	}
	frames := strings.Split(got, "\r")[1:]
	if len(frames) != 5 {
		t.Fatalf("%d frames, want one per update: %q", len(frames), got)
	}
	last := frames[len(frames)-1]
	for _, want := range []string{"reading", "[", "]", "chunk 4/10", "4K/10K tokens", "500 tokens/s", "ETA 12s", "\x1b[K"} {
		if !strings.Contains(last, want) {
			t.Errorf("last frame %q lacks %q", last, want)
		}
	}
	if filled := strings.Count(last, "█"); filled != barWidth(120)*4/10 {
		t.Errorf("bar has %d filled cells, want %d for 4/10", filled, barWidth(120)*4/10)
	}
	out.Reset()
	v.finish()
	if out.String() != "\n" {
		t.Errorf("finish wrote %q, want a newline closing the bar's line", out.String())
	}

	// A narrower terminal drops the token counts, then the rate, keeping
	// chunks and ETA; the narrowest get a clipped line, never a wrapped one.
	tests := []struct {
		width      int
		want, lack []string
	}{
		{80, []string{"chunk 1500/2000", "tokens/s", "ETA "}, []string{"K/2M tokens"}},
		{60, []string{"chunk 1500/2000", "ETA "}, []string{"tokens"}},
		{30, []string{"reading"}, nil},
	}
	for _, tt := range tests {
		out.Reset()
		v := newProgressView(&out, true)
		v.now, v.width = c.now, tt.width
		for _, done := range []int{1400, 1500} {
			v.update(api.Progress{Stage: api.StageReading, ChunksDone: done, ChunksTotal: 2000,
				TokensDone: int64(done) * 1000, TokensTotal: 2_000_000}, true)
			c.advance(2 * time.Second)
		}
		frames := strings.Split(out.String(), "\r")
		frame := strings.TrimSuffix(frames[len(frames)-1], "\x1b[K")
		if n := utf8.RuneCountInString(frame); n >= tt.width {
			t.Errorf("frame on a %d-column terminal has %d columns: %q", tt.width, n, frame)
		}
		for _, w := range tt.want {
			if !strings.Contains(frame, w) {
				t.Errorf("frame on a %d-column terminal %q lacks %q", tt.width, frame, w)
			}
		}
		for _, l := range tt.lack {
			if strings.Contains(frame, l) {
				t.Errorf("frame on a %d-column terminal %q has %q, want it dropped", tt.width, frame, l)
			}
		}
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct{ got, want string }{
		{humanCount(999), "999"},
		{humanCount(85_000), "85K"},
		{humanCount(1_234), "1.2K"},
		{humanCount(3_500_000), "3.5M"},
		{humanCount(148_700), "149K"},
		{humanCount(12_345_678), "12M"},
		{formatETA(14*time.Second + 400*time.Millisecond), "14s"},
		{formatETA(47*time.Minute + 3*time.Second), "47m3s"},
		{formatETA(2*time.Hour + 10*time.Minute + 20*time.Second), "2h10m0s"},
		{renderBar(0, 0, 4), "[░░░░]"},
		{renderBar(1, 2, 4), "[██░░]"},
		{renderBar(3, 2, 4), "[████]"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}

// reviewAt is a review of two questions over 10 chunks, the slowest at
// chunk done, with answered questions done.
func reviewAt(stage string, done, answered int) api.ReviewProgress {
	p := api.ReviewProgress{Stage: stage, ChunksDone: done, ChunksTotal: 10, TokensDone: int64(done) * 1000, TokensTotal: 10_000,
		UpdatesDone: 2 * done, UpdatesTotal: 20, Run: 1}
	for i := range 2 {
		st := api.QuestionReading
		if i < answered {
			st = api.QuestionDone
		}
		p.Questions = append(p.Questions, api.ReviewQuestionProgress{ID: fmt.Sprintf("q%d", i+1), Status: st, ChunksDone: done})
	}
	return p
}

// reusedReview is a review of a 12-chunk document of 121,000 tokens asked
// again: q1 and q2 reused every chunk and their answers, q3 read every
// chunk.
func reusedReview() api.ReviewProgress {
	p := api.ReviewProgress{Stage: api.StageDone, ChunksDone: 12, ChunksTotal: 12, TokensDone: 121_000, TokensTotal: 121_000,
		UpdatesDone: 36, UpdatesTotal: 36, ChunksRead: 12, ChunksReused: 24, TokensRead: 121_000, TokensReused: 242_000, AnswersReused: 2,
		Run: 1, Usage: api.Usage{Calls: 13}}
	for i := range 3 {
		q := api.ReviewQuestionProgress{ID: fmt.Sprintf("q%d", i+1), Status: api.QuestionDone, ChunksDone: 12, Answer: "a", AnswerFound: true}
		if i < 2 {
			q.ChunksReused, q.TokensReused, q.AnswerReused = 12, 121_000, true
		} else {
			q.TokensRead = 121_000
		}
		p.Questions = append(p.Questions, q)
	}
	return p
}

func TestProgressViewReviewAndBatchLines(t *testing.T) {
	failed := reviewAt(api.StageAnswering, 10, 1)
	failed.Questions[1].Status = api.QuestionFailed
	tests := []struct {
		name  string
		steps []snapshot // shown 2 s apart
		want  string     // the last line printed
	}{
		{"review reading", []snapshot{reviewSnapshot(reviewAt(api.StageReading, 2, 0)), reviewSnapshot(reviewAt(api.StageReading, 4, 0))},
			"reading: chunk 4/10, 0/2 questions done, 4K/10K tokens, 1K tokens/s, ETA 6s"},
		{"review answering, one failed", []snapshot{reviewSnapshot(failed)},
			"answering: chunk 10/10, 1/2 questions done, 1 failed, 10K/10K tokens"},
		{"review writing", []snapshot{reviewSnapshot(reviewAt(api.StageWriting, 10, 2))},
			"writing: chunk 10/10, 2/2 questions done, 10K/10K tokens"},
		// Issue 52: one question read every chunk, two reused theirs and
		// their answers; the tokens are not 0/121K.
		{"review done, two answers reused", []snapshot{reviewSnapshot(reusedReview())},
			"done: chunk 12/12, 3/3 questions done, chunk readings 12 read, 24 reused, 2 answers reused, 363K/363K tokens (121K read, 242K reused)"},
		{"question whose every chunk was reused", []snapshot{qaSnapshot(api.Progress{Stage: api.StageDone, ChunksDone: 12, ChunksTotal: 12,
			TokensDone: 121_000, TokensTotal: 121_000, ChunksReused: 12, TokensReused: 121_000}, true)},
			"done: chunk 12/12, 12 chunks reused, 121K/121K tokens (0 read, 121K reused)"},
		{"batch expanding", []snapshot{batchSnapshot(api.BatchProgress{Stage: api.BatchStageExpanding})},
			"expanding"},
		{"batch running", []snapshot{
			batchSnapshot(api.BatchProgress{Stage: api.BatchStageRunning, Items: 100, Done: 10, Running: 16, Run: 1}),
			batchSnapshot(api.BatchProgress{Stage: api.BatchStageRunning, Items: 100, Done: 20, Answered: 17, Reused: 2, Failed: 1, Running: 16, Run: 2}),
		}, "running: 20/100 items, 16 running, 1 failed, 2 reused, run 2, ETA 16s"},
		{"batch done", []snapshot{batchSnapshot(api.BatchProgress{Stage: api.BatchStageDone, Items: 3, Done: 3, Answered: 3, Run: 1})},
			"done: 3/3 items, 0 running, 0 failed, 0 reused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			c := &clock{t: time.Unix(0, 0)}
			v := newProgressView(&out, false)
			v.now, v.minGap = c.now, 0
			for _, s := range tt.steps {
				v.show(s)
				c.advance(2 * time.Second)
			}
			v.finish()
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if got := lines[len(lines)-1]; got != tt.want {
				t.Errorf("last line %q, want %q", got, tt.want)
			}
		})
	}
}

// TestProgressViewBatchBar checks the bar of a batch: it fills with the
// items done, and a narrow terminal drops the notes before the counts and
// the ETA.
func TestProgressViewBatchBar(t *testing.T) {
	for _, tt := range []struct {
		width      int
		want, lack []string
	}{
		{120, []string{"running", "50/200 items", "8 running", "2 failed", "ETA "}, nil},
		{50, []string{"50/200 items", "ETA 15s"}, []string{"8 running"}},
	} {
		var out bytes.Buffer
		c := &clock{t: time.Unix(0, 0)}
		v := newProgressView(&out, true)
		v.now, v.width = c.now, tt.width
		for _, done := range []int{40, 50} {
			v.show(batchSnapshot(api.BatchProgress{Stage: api.BatchStageRunning, Items: 200, Done: done, Running: 8, Failed: 2, Run: 1}))
			c.advance(time.Second)
		}
		frames := strings.Split(out.String(), "\r")
		frame := strings.TrimSuffix(frames[len(frames)-1], "\x1b[K")
		if n := utf8.RuneCountInString(frame); n >= tt.width {
			t.Errorf("frame on a %d-column terminal has %d columns: %q", tt.width, n, frame)
		}
		for _, w := range tt.want {
			if !strings.Contains(frame, w) {
				t.Errorf("frame on a %d-column terminal %q lacks %q", tt.width, frame, w)
			}
		}
		for _, l := range tt.lack {
			if strings.Contains(frame, l) {
				t.Errorf("frame on a %d-column terminal %q has %q, want it dropped", tt.width, frame, l)
			}
		}
		if tt.width == 120 {
			if filled := strings.Count(frame, "█"); filled != barWidth(120)/4 {
				t.Errorf("bar has %d filled cells, want %d for 50/200", filled, barWidth(120)/4)
			}
		}
	}
}

// TestProgressViewPrintsNoteChanges: a plain view prints a line when only
// a note changes (a question answered at the same chunk).
func TestProgressViewPrintsNoteChanges(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	v := newProgressView(&out, false)
	v.now = c.now
	v.show(reviewSnapshot(reviewAt(api.StageAnswering, 10, 0)))
	c.advance(10 * time.Second)
	v.show(reviewSnapshot(reviewAt(api.StageAnswering, 10, 1)))
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Errorf("printed %d lines, want 2 (the answered question changes the line):\n%s", got, out.String())
	}
}
