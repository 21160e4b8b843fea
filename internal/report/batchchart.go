package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// BatchChartPoint is one answered item: its document's length in tokens and
// its scores.
type BatchChartPoint struct {
	Tokens    int64
	F1        float64
	Substring bool
	// Recall is the fraction of the item's gold answers found in its answer.
	Recall float64
}

// bcMaxScatter is how many items the chart draws one by one; with more, it
// draws only the binned means.
const bcMaxScatter = 2000

// chart geometry, in SVG user units.
const (
	bcWidth, bcHeight              = 780.0, 360.0
	bcPadL, bcPadR, bcPadT, bcPadB = 56.0, 210.0, 28.0, 48.0
	bcPlotW, bcPlotH               = bcWidth - bcPadL - bcPadR, bcHeight - bcPadT - bcPadB
	bcBinsPerDecade                = 4
	bcPointRadius, bcMeanRadius    = 2.5, 4.0
)

// BatchChart draws score against document length as a self-contained SVG:
// a log-scale x axis of tokens, F1 of each item as a faint dot (up to 2,000
// items), and the mean substring match, mean F1 and mean recall over
// logarithmic bins (four a decade) as three lines, recall dashed so that it
// shows where it lies on substring match (as it does when every item has
// one gold answer). Items without a length are left out.
func BatchChart(title string, points []BatchChartPoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s" font-family="sans-serif" font-size="12">`+"\n",
		bcWidth, bcHeight, bcWidth, bcHeight, batchEscape(title))
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", batchEscape(title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", bcWidth, bcHeight)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", bcPadL, batchEscape(title))

	var pts []BatchChartPoint
	for _, p := range points {
		if p.Tokens > 0 {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">no answered item with a known length</text>`+"\n", bcWidth/2, bcHeight/2)
		b.WriteString("</svg>\n")
		return b.String()
	}
	sc := newBCScale(pts)
	sc.axes(&b)
	if len(pts) <= bcMaxScatter {
		// One faint dot per item.
		b.WriteString(`<g fill="#1f77b4" fill-opacity="0.25">` + "\n")
		for _, p := range pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%.1f"/>`+"\n", sc.x(float64(p.Tokens)), sc.y(p.F1), bcPointRadius)
		}
		b.WriteString("</g>\n")
	}
	bins := bcBinPoints(pts)
	for si, s := range bcSeries {
		sc.series(&b, si, s, bins)
	}
	if len(pts) <= bcMaxScatter {
		ly := bcPadT + 10 + float64(len(bcSeries))*20
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="#1f77b4" fill-opacity="0.25"/>`+"\n", bcPadL+bcPlotW+21, ly, bcPointRadius+1)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">F1 of one item</text>`+"\n", bcPadL+bcPlotW+34, ly+4)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#666666">%d item(s)</text>`+"\n", bcPadL+bcPlotW+12, bcPadT+bcPlotH, len(pts))
	b.WriteString("</svg>\n")
	return b.String()
}

// bcScale maps tokens (log scale, whole decades xmin..xmax) and scores to
// the plot's coordinates.
type bcScale struct{ xmin, xmax float64 }

// newBCScale spans whole decades around the points' lengths (all > 0).
func newBCScale(pts []BatchChartPoint) bcScale {
	lo, hi := pts[0].Tokens, pts[0].Tokens
	for _, p := range pts {
		lo, hi = min(lo, p.Tokens), max(hi, p.Tokens)
	}
	xmin := math.Floor(math.Log10(float64(lo)))
	xmax := math.Ceil(math.Log10(float64(hi)))
	if xmax <= xmin {
		xmax = xmin + 1
	}
	return bcScale{xmin: xmin, xmax: xmax}
}

func (sc bcScale) x(tokens float64) float64 {
	return bcPadL + (math.Log10(tokens)-sc.xmin)/(sc.xmax-sc.xmin)*bcPlotW
}

func (sc bcScale) y(score float64) float64 { return bcPadT + (1-score)*bcPlotH }

// axes draws the grid, the frame, the tick labels and the axis titles.
func (sc bcScale) axes(b *strings.Builder) {
	b.WriteString(`<g stroke="#dddddd" stroke-width="1">` + "\n")
	for s := 0.0; s <= 1.0001; s += 0.25 {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", bcPadL, sc.y(s), bcPadL+bcPlotW, sc.y(s))
	}
	for d := sc.xmin; d <= sc.xmax; d++ {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", sc.x(math.Pow(10, d)), bcPadT, sc.x(math.Pow(10, d)), bcPadT+bcPlotH)
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444444"/>`+"\n", bcPadL, bcPadT, bcPlotW, bcPlotH)
	for s := 0.0; s <= 1.0001; s += 0.25 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%.2f</text>`+"\n", bcPadL-6, sc.y(s)+4, s)
	}
	for d := sc.xmin; d <= sc.xmax; d++ {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", sc.x(math.Pow(10, d)), bcPadT+bcPlotH+16, bcTokens(math.Pow(10, d)))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">document length (tokens, log scale)</text>`+"\n", bcPadL+bcPlotW/2, bcHeight-8)
	fmt.Fprintf(b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">score</text>`+"\n", bcPadT+bcPlotH/2, bcPadT+bcPlotH/2)
}

// bcBin is the items of one logarithmic bin of lengths: their count, the
// sums of their scores and of their log lengths.
type bcBin struct {
	n               int
	f1, sub, recall float64
	sumLogTok       float64
	index           int
}

// bcBinPoints sums the points by bin, in order of length.
func bcBinPoints(pts []BatchChartPoint) []*bcBin {
	bins := make(map[int]*bcBin)
	for _, p := range pts {
		i := int(math.Floor(math.Log10(float64(p.Tokens)) * bcBinsPerDecade))
		bn := bins[i]
		if bn == nil {
			bn = &bcBin{index: i}
			bins[i] = bn
		}
		bn.n++
		bn.f1 += p.F1
		bn.recall += p.Recall
		if p.Substring {
			bn.sub++
		}
		bn.sumLogTok += math.Log10(float64(p.Tokens))
	}
	ordered := make([]*bcBin, 0, len(bins))
	for _, bn := range bins {
		ordered = append(ordered, bn)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].index < ordered[j].index })
	return ordered
}

// bcLine is one line of binned means.
type bcLine struct {
	name, color, dash string
	value             func(*bcBin) float64
}

var bcSeries = []bcLine{
	{"substring match (mean)", "#d62728", "", func(bn *bcBin) float64 { return bn.sub / float64(bn.n) }},
	{"F1 (mean)", "#1f77b4", "", func(bn *bcBin) float64 { return bn.f1 / float64(bn.n) }},
	{"recall (mean)", "#2ca02c", "6 4", func(bn *bcBin) float64 { return bn.recall / float64(bn.n) }},
}

// series draws one line of means, a dot per bin and its legend entry, the
// si-th from the top.
func (sc bcScale) series(b *strings.Builder, si int, s bcLine, bins []*bcBin) {
	var path []string
	for _, bn := range bins {
		path = append(path, fmt.Sprintf("%.1f,%.1f", sc.x(math.Pow(10, bn.sumLogTok/float64(bn.n))), sc.y(s.value(bn))))
	}
	dash := ""
	if s.dash != "" {
		dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", s.color, dash, strings.Join(path, " "))
	fmt.Fprintf(b, `<g fill="%s">`+"\n", s.color)
	for _, bn := range bins {
		cx, cy := sc.x(math.Pow(10, bn.sumLogTok/float64(bn.n))), sc.y(s.value(bn))
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f"><title>%s: %.3f over %d item(s)</title></circle>`+"\n",
			cx, cy, bcMeanRadius, batchEscape(s.name), s.value(bn), bn.n)
	}
	b.WriteString("</g>\n")
	ly := bcPadT + 10 + float64(si)*20
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", bcPadL+bcPlotW+12, ly, bcPadL+bcPlotW+30, ly, s.color, dash)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", bcPadL+bcPlotW+34, ly+4, batchEscape(s.name))
}

// bcTokens renders 1000 as "1K" and 1e6 as "1M".
func bcTokens(n float64) string {
	switch {
	case n >= 1e9:
		return bcTrimZero(n/1e9) + "B"
	case n >= 1e6:
		return bcTrimZero(n/1e6) + "M"
	case n >= 1e3:
		return bcTrimZero(n/1e3) + "K"
	}
	return bcTrimZero(n)
}

func bcTrimZero(f float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0")
}

// batchEscape escapes text for an XML or HTML text node or attribute value.
func batchEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace(s)
}
