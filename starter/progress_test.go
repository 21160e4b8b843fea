package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memagent/memagent/workflows"
)

// clock is a fake time source that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time           { return c.t }
func (c *clock) advance(d time.Duration)  { c.t = c.t.Add(d) }
func reading(done int) workflows.Progress { return progressAt(workflows.StageReading, done) }

// progressAt is a 10-chunk, 10,000-token run with done chunks read.
func progressAt(stage string, done int) workflows.Progress {
	return workflows.Progress{Stage: stage, ChunksDone: done, ChunksTotal: 10, TokensDone: int64(done) * 1000, TokensTotal: 10_000}
}

func TestProgressViewPlainLines(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	v := newProgressView(&out, false)
	v.now = c.now

	steps := []struct {
		after time.Duration
		p     workflows.Progress
		known bool
		want  string // the line printed, "" for none
	}{
		{0, workflows.Progress{Stage: workflows.StagePreparing}, true, "preparing"},
		{time.Second, reading(0), true, "reading: chunk 0/10, 0/10K tokens, ETA --"},
		{2 * time.Second, reading(1), true, ""}, // a change, but within 5 s of the last line
		{2 * time.Second, reading(2), true, ""},
		{2 * time.Second, reading(3), true, "reading: chunk 3/10, 3K/10K tokens, 500 tokens/s, ETA 14s"},
		{2 * time.Second, reading(3), true, ""}, // no change
		// Read from search attributes: chunks, no tokens. The token rate
		// keeps to the samples whose tokens are known (3,000 tokens in
		// 8 s); the ETA follows the chunks (5 in 16 s, 5 left).
		{8 * time.Second, workflows.Progress{Stage: workflows.StageReading, ChunksDone: 5, ChunksTotal: 10}, false,
			"reading: chunk 5/10, 3K/10K tokens, 375 tokens/s, ETA 16s"},
		{time.Second, progressAt(workflows.StageAnswering, 10), true, "answering: chunk 10/10, 10K/10K tokens"},
		{time.Second, progressAt(workflows.StageDone, 10), true, "done: chunk 10/10, 10K/10K tokens"},
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
			v.update(workflows.Progress{Stage: workflows.StageReading, ChunksDone: done, ChunksTotal: 2000,
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
